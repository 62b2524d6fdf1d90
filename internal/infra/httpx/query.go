package httpx

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// QueryError says why a request's query string cannot be parsed: which
// parameter is to blame ("query" when no single parameter is, such as a
// malformed parameter name or a semicolon separator) and what is wrong with
// it, in words safe to show to the client.
type QueryError struct {
	Param   string
	Message string
}

func (e *QueryError) Error() string { return e.Param + ": " + e.Message }

// maxQuoted bounds how much of a client's malformed text a message quotes.
const maxQuoted = 40

// ParseQuery parses a raw query string strictly: it fails exactly when
// [url.ParseQuery] does, with a [*QueryError] naming the first parameter to
// blame, and otherwise returns the same values. [http.Request.URL.Query]
// instead drops malformed pairs silently, so "cursor=%%%" would read as no
// cursor at all, a first page the client did not ask for.
func ParseQuery(raw string) (url.Values, error) {
	values, err := url.ParseQuery(raw)
	if err == nil {
		return values, nil
	}
	// Find the first pair url.ParseQuery refused, as it walks them.
	for rest := raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if strings.Contains(pair, ";") {
			return nil, &QueryError{Param: "query", Message: fmt.Sprintf(
				"cannot be parsed: %s contains a semicolon; separate parameters with &", quote(pair))}
		}
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, kerr := url.QueryUnescape(rawKey)
		if kerr != nil {
			return nil, &QueryError{Param: "query", Message: fmt.Sprintf(
				"cannot be parsed: the parameter name %s has a malformed percent-encoding; write a literal %% as %%25", quote(rawKey))}
		}
		if _, verr := url.QueryUnescape(rawValue); verr != nil {
			if key == "" {
				return nil, &QueryError{Param: "query", Message: fmt.Sprintf(
					"cannot be parsed: a parameter without a name has a malformed percent-encoding in %s; write a literal %% as %%25", quote(rawValue))}
			}
			return nil, &QueryError{Param: key, Message: fmt.Sprintf(
				"has a malformed percent-encoding in %s; write a literal %% as %%25", quote(rawValue))}
		}
	}
	// Not reached while this walk matches url.ParseQuery's (FuzzParseQuery
	// checks that it does); still an answer that names the query.
	return nil, &QueryError{Param: "query", Message: "cannot be parsed"}
}

// quote quotes s for a message, cut to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q...", s[:maxQuoted])
	}
	return fmt.Sprintf("%q", s)
}

// StrictQuery returns middleware that answers a request whose query string
// [ParseQuery] refuses with reject, which writes the API's own 400 body
// naming [QueryError.Param], and passes every other request on. Behind it,
// r.URL.Query() holds every pair the client sent.
func StrictQuery(reject func(w http.ResponseWriter, r *http.Request, err *QueryError)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := ParseQuery(r.URL.RawQuery); err != nil {
				reject(w, r, err.(*QueryError))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
