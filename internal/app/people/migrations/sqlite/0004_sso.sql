-- Single sign-on (package sso): a user created or signed in through an
-- organisation's identity provider is linked to its subject there (NULL for
-- password users; one user per pair). Such a user created by the provider
-- has no password: password_hash is ''. break_glass_until (Unix
-- milliseconds) is set while the operator's break-glass password may sign
-- in though the organisation requires single sign-on.
ALTER TABLE people_users ADD COLUMN sso_issuer TEXT;
ALTER TABLE people_users ADD COLUMN sso_subject TEXT;
ALTER TABLE people_users ADD COLUMN break_glass_until INTEGER;
CREATE UNIQUE INDEX people_users_sso ON people_users (sso_issuer, sso_subject);
