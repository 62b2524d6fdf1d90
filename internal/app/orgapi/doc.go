// Package orgapi is the organisation API of the oversight service: the HTTP
// handlers over the organisation domain of package org (its instructions,
// its agents, its organisation).
//
// The wire format is spec's ([spec.Instruction], [spec.Agent],
// [spec.Problem]); the rules are those of the organisation API and the
// kit's decisions where it is silent. A [Handler] serves an [org.Store] over
// HTTP:
//
//	store, err := org.NewStore(ctx, db) // applies the migrations
//	if err != nil {
//		return err
//	}
//	h, err := orgapi.NewHandler(store, orgapi.WithLogger(logger))
//	if err != nil {
//		return err
//	}
//	return http.ListenAndServe(addr, h)
//
// A request authenticates with an API key of type API ([org.Store.Authenticate]);
// keys themselves are managed by a person, never over this API.
package orgapi
