// Package otlpwire is the OTLP/HTTP wire layer of the service's telemetry
// endpoint: it reads an export request of one signal (metrics, logs or
// traces), hands the decoded message to an ingest function and writes the
// OTLP answer. It knows nothing of keys, organisations or what the data
// means: authentication is a middleware in front of [Handler], and the
// mapping of OTLP to usage records is the ingest function's.
//
// What it serves is the OTLP/HTTP contract (OTLP specification 1.9):
//
//   - a POST whose body is an Export{Metrics,Logs,Trace}ServiceRequest, as
//     Content-Type application/x-protobuf or application/json (parameters
//     such as charset are allowed), with Content-Encoding none, identity or
//     gzip; any other type or encoding is 415, any other method 405 with
//     Allow: POST;
//   - OTLP/JSON's deviations from protobuf JSON: traceId, spanId and
//     parentSpanId as hexadecimal (either case), enums as integers, 64-bit
//     integers as strings or numbers, unknown fields ignored;
//   - a body limit ([DefaultMaxBytes] unless [Config.MaxBytes] says
//     otherwise) checked against Content-Length, while reading and after
//     decompression, so that a gzip bomb never allocates past it: 413;
//   - a body that is no OTLP of the signal: 400, whose message says what is
//     wrong;
//   - answers in the request's encoding: the Export*ServiceResponse, with
//     partial_success only when something was rejected or there is a
//     message ([Partial]), and for errors a google.rpc.Status with the HTTP
//     status of the error's kind (spec.StatusOf), a BadRequest detail
//     naming the field to blame, and Retry-After plus a RetryInfo detail on
//     429 and 503.
//
// The error of an ingest function is answered as the kit's errors are: a
// *spec.Error's kind gives the status and its Detail the message; an error of
// no kind is a 500 whose words stay in the log.
package otlpwire
