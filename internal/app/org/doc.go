// Package org is the organisation domain of the oversight service: an
// organisation's API keys, its agents, its data-protection instructions and
// the audit trail of every change, stored in SQLite or PostgreSQL. Package
// orgapi serves it over HTTP; the dashboard and the aiusage admin commands
// call it directly.
//
// A [Store] keeps the data:
//
//	db, err := sqldb.Open(ctx, "sqlite:/var/lib/aiusage/service.db")
//	if err != nil {
//		return err
//	}
//	store, err := org.NewStore(ctx, db) // applies the migrations
//	if err != nil {
//		return err
//	}
//
// Organisations, agents and keys are created by an administrator, not over
// the API: [Store.CreateOrganisation], [Store.CreateAgent], [Store.CreateKey]
// (the aiusage admin commands call them). A key's secret is returned once and
// stored only as its SHA-256 digest; [Store.Authenticate] looks the digest up
// on every request, so a revoked key fails on its next request;
// [Store.AuthenticateIngestion] is its mirror for the telemetry endpoint.
//
// The limit of 100 instructions per agent holds under concurrency: each
// agent row counts its instructions, and a place is taken with a conditional
// UPDATE in the transaction that assigns the instruction, so of two requests
// racing for the last place exactly one wins, on SQLite and on PostgreSQL
// alike.
package org
