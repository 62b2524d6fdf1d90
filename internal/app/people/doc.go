// Package people keeps the people of an organisation who sign in to the
// dashboard: their accounts, roles and passwords, their sessions, and the
// throttle of failed sign-ins, in the service's SQLite or PostgreSQL
// database.
//
//	store, err := people.New(ctx, people.Config{DB: db, Orgs: orgStore}) // applies the migrations
//	if err != nil {
//		return err
//	}
//	sess, user, err := store.SignIn(ctx, email, password, people.Client{Addr: clientIP, Device: deviceCookie})
//	// ... later, on every request, with the token the client holds:
//	sess, user, err = store.Authenticate(ctx, token)
//
// A user belongs to one organisation and holds one [Role]; an email address
// names one user in the whole service. Users are created, given a role and
// disabled by an Administrator (in the dashboard, or with aiusage admin user);
// each change is recorded in the organisation's audit trail (package org), never
// with a password or its hash.
//
// Passwords are hashed with argon2id (64 MiB, 3 passes, 2 lanes) and stored
// in the PHC string format; the parameters are read back from each hash, so
// that stronger ones can be adopted later without invalidating the old hashes.
// A sign-in with an unknown email, a wrong password or a disabled user's
// password fails with the same [ErrBadCredentials] after the same work: an
// unknown email is checked against a dummy hash.
//
// A session is a random 32-byte token, given to the client once (base64url)
// and stored only as its SHA-256 digest. It ends when unused for
// Config.IdleTimeout, Config.AbsoluteTimeout after the sign-in, at sign-out,
// or when its user is disabled. Sessions, like the throttle's counts, are rows
// of the database, so every process on one database honours them and they
// survive restarts.
//
// Failed sign-ins are counted so that guessing is slow and nobody else's
// failures keep a person out of their own account (OWASP's "device
// cookies"). A client that presents a device token of the account
// ([Session].Device of an earlier sign-in, kept in a cookie) is trusted:
// its failures count for it alone. Any other client is counted by its
// address on the account, by its address on all accounts, and the account
// by all such clients. Each count has free failures (Config.MaxFailures
// for a device or an address on one account, Config.MaxAddressFailures for
// an address on all accounts); past them, each further attempt must wait a
// growing delay after the count's last failure: Config.BaseDelay (1 s),
// doubled with every failure, at most Config.MaxDelay (5 min). An attempt
// made sooner is refused with a [*ThrottledError] saying how long to wait,
// without the password being checked and without being counted, so
// hammering does not lengthen the wait. Once an account has failed
// Config.MaxAccountFailures times, each address has one free failure at it
// instead of Config.MaxFailures, so that many addresses guessing gain
// little, while an address that has not failed still signs in at once. A
// count is forgotten once its last failure is Config.FailureWindow (1 h)
// old. A sign-in counts while its password is checked, its counts' rows
// locked, so that concurrent attempts (in any process on the database)
// cannot overrun a limit; a success clears its address's (or device's)
// count on the account and takes itself back from the others.
//
// An invitation or a reset gives a one-time password
// ([User.OneTimePasswordUntil]): it expires after Config.OneTimePasswordTTL
// ([ErrOneTimePasswordExpired]) and must be changed
// ([Store.ChangePassword]) before the session may do anything else, which
// the dashboard enforces. [Store.ResetPassword] ends the user's sessions;
// ChangePassword ends the others. Both are recorded in the audit trail.
//
// Single sign-on (package sso) signs people in through their
// organisation's identity provider: [Store.ProvisionSSO] creates the user
// the provider admits (just in time, without a password: a password
// sign-in for them fails with [ErrBadCredentials] after the same work) or
// updates its name and role, linking it to the provider's issuer and
// subject ([User.SSO]); [Store.StartSSOSession] starts its session without
// a password, and package sso keys its own rows about a session by
// [TokenDigest]. [Store.EndSession] and [Store.EndSessions] end sessions
// the provider no longer vouches for. Once an organisation requires single
// sign-on (Config.SSORequired), [Store.SignIn] refuses a right password
// with [ErrSSORequired], unless the operator gave the user a break-glass
// password ([Store.BreakGlass], recorded as user.break_glass): a one-time
// password that signs in until [User.BreakGlassUntil], at most
// [MaxBreakGlass] ahead.
package people
