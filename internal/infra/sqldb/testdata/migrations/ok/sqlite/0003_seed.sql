-- Not idempotent on purpose: applying it twice fails on the primary key.
INSERT INTO widgets (id, name) VALUES ('w0', 'seed');
