// Package reviewapi is the review-task API of the oversight service: AI
// requests submitted as review tasks, evaluated against the instructions of
// their agent with package policy, decided by a person when the policy asks
// for it, rejected when the review times out, and reported to webhooks.
//
// A [Service] keeps tasks, webhooks, events and deliveries in the service's
// database (SQLite or PostgreSQL, beside package org's tables, whose API
// keys it accepts) and serves them over HTTP ([Service.Routes]). Its
// background work runs on the service's job queue, River in the same
// database ([Service.Jobs]): evaluations that could not run, webhook
// deliveries with their retries, and a periodic sweep that applies review
// timeouts and queues again whatever a stopped process left behind. On
// PostgreSQL, several processes share the work. The service's composition
// root, package internal/app/server, mounts the routes and opens the queue:
//
//	ring, err := keyring.ParseKeys(os.Getenv("AIUSAGE_SECRET_KEY")) // encrypts the webhook secrets
//	svc, err := reviewapi.New(ctx, reviewapi.Config{DB: db, Orgs: orgStore, Secrets: ring, Jobs: queue})
//	if err != nil {
//		return err
//	}
//	svc.Routes(router) // the root answers the API's unknown paths with NotFound and MethodNotAllowed
//	svc.Jobs(jobs)     // its workers, queues and sweep, on the root's River client
//
// States: pending -> processing -> approved |
// change_requested | requires_intervention; requires_intervention ->
// approved | rejected | change_requested by a reviewer ([Service.Decide]),
// or rejected with reason timeout ([Service.SweepTimeouts]). Final states
// never change.
//
// Rate limits are the organisation's, shared by all its keys and by every
// process on the database: its plan's requests in any hour, counted in a
// sliding window of one-minute buckets (see ratelimit.go). Every answer to a
// known key carries the RateLimit-Policy and RateLimit headers.
//
// A webhook's signing secret is stored encrypted under Config.Secrets
// (package keyring), bound to its row; see secrets.go.
//
// Webhook deliveries follow the Standard Webhooks specification
// ([webhook.Sign]): at least once, from the database, retried on
// [DefaultRetrySchedule], to URLs checked against private addresses when
// registered and again when dialled ([AddressPolicy]).
package reviewapi
