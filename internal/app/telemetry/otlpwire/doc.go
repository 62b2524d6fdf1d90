// Package otlpwire is the OTLP/HTTP and OTLP/gRPC wire layer of the
// service's telemetry endpoint: it reads an export request of one signal
// (metrics, logs or traces), hands the decoded message to an ingest function
// and writes the OTLP answer. It knows nothing of what a key opens,
// of organisations or of what the data means: authentication is a middleware in
// front of [Handler] and a function of [GRPCConfig], and the mapping of OTLP
// to usage records is the ingest function's.
//
// What it serves is the OTLP/HTTP contract (OTLP specification 1.9):
//
//   - a POST whose body is an Export{Metrics,Logs,Trace}ServiceRequest, as
//     Content-Type application/x-protobuf or application/json (parameters
//     such as charset are allowed), with Content-Encoding absent, none, identity or
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
// One handler serves one signal, behind the authentication (see
// Example_handler):
//
//	h, err := otlpwire.Handler(otlpwire.Logs, otlpwire.Config{Ingest: ingest})
//	if err != nil {
//		return err
//	}
//	r.Post(otlpwire.Logs.Path(), authenticate(h).ServeHTTP)
//
// The error of an ingest function is answered as the kit's errors are: a
// *spec.Error's kind gives the status and its Detail the message; an error of
// no kind is a 500 whose words stay in the log.
//
// # OTLP/gRPC
//
// [RegisterGRPC] serves the same contract over gRPC: the three collector
// services (opentelemetry.proto.collector.{metrics,logs,trace}.v1, method
// Export) on a grpc.Server of the caller's, calling the same kind of
// [IngestFunc] and answering the same partial_success. gRPC has no
// middleware chain, so the services take the key themselves, from the
// metadata authorization (Bearer KEY, the scheme in any case) or x-api-key,
// and hand it to [GRPCConfig.Authenticate], whose context goes to the ingest
// function; a request with no key is Unauthenticated. An error's kind gives
// the gRPC code, as OTLP/gRPC clients read them:
//
//   - ErrInvalid: InvalidArgument, with the BadRequest detail of HTTP;
//   - ErrUnauthorized: Unauthenticated; ErrForbidden: PermissionDenied;
//   - ErrRateLimited and ErrUnavailable: Unavailable with a RetryInfo
//     detail, OTLP's throttling, which clients retry after its delay;
//   - ErrTooLarge: ResourceExhausted without RetryInfo, which clients do
//     not retry;
//   - the other kinds as google.rpc.Code maps their HTTP status, and an
//     error of no kind Internal with a generic message, logged once.
//
// The size limit is the server's: build it with [GRPCMaxRecvMsgSize], which
// caps a request at [DefaultMaxBytes] before and after decompression (gRPC
// answers a larger one ResourceExhausted itself). Importing the package
// registers gRPC's gzip compressor, so gzip-compressed requests (Gemini CLI
// sends them) decode. See Example_grpc:
//
//	s := grpc.NewServer(otlpwire.GRPCMaxRecvMsgSize(0))
//	err := otlpwire.RegisterGRPC(s, otlpwire.GRPCConfig{Authenticate: authenticate, Ingest: ingest})
package otlpwire
