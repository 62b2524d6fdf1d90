// Package httpx is the HTTP plumbing every API of the kit shares: request
// ids, the access log, panic recovery, the adapter for handlers that return
// their error, 405 answers, reading and decoding JSON bodies, writing JSON and
// problem bodies, and reading the credential of a request.
//
// What differs between the APIs stays in them: each writes its own error body
// (RFC 9457 problem details for the provider and the organisation API, the
// review-task API's error object) from its own table of error kind to status.
// httpx only calls the function it is given to write an error.
package httpx
