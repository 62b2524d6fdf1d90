// Package httpx is the HTTP plumbing every API of the kit shares: request
// ids, the access log, panic recovery, the adapter for handlers that return
// their error, 405 answers, reading and decoding JSON bodies, writing JSON and
// problem bodies, and reading the credential of a request.
//
// Handlers return their errors; [WriteError] is the one function that writes
// them, with the status spec.StatusOf gives the error's kind. What differs
// between the APIs (the words of the answers that are not the error's own,
// Retry-After, the body format: RFC 9457 problem details, or the review-task
// API's error object) is an [ErrorStyle] each API gives it.
package httpx
