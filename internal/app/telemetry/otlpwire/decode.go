package otlpwire

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxBytes is the default body limit of a [Handler], before and
// after decompression: 20 MiB, the limit the OTLP specification recommends.
const DefaultMaxBytes = 20 << 20

// The content types of OTLP/HTTP.
const (
	typeProtobuf = "application/x-protobuf"
	typeJSON     = "application/json"
)

// maxMessage is the longest decoding error, in bytes, a client is told.
const maxMessage = 300

// encoding is the body encoding of a request, and of its answer.
type encoding int

const (
	encProtobuf encoding = iota
	encJSON
)

// contentType returns the encoding of the Content-Type header ct.
func (e encoding) contentType() string {
	if e == encJSON {
		return typeJSON
	}
	return typeProtobuf
}

// errUnsupportedMedia is the kind of a request whose Content-Type or
// Content-Encoding the handler does not read: 415. spec has no kind for it,
// as no other API of the kit answers it.
var errUnsupportedMedia = errors.New("unsupported media type")

// errTooLarge is returned by the readers of a body over the limit.
var errTooLarge = errors.New("body over the limit")

// encodingOf returns the encoding the Content-Type header ct names, or an
// error of kind errUnsupportedMedia.
func encodingOf(ct string) (encoding, error) {
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		ct = "none"
	case err == nil && mt == typeProtobuf:
		return encProtobuf, nil
	case err == nil && mt == typeJSON:
		return encJSON, nil
	}
	return encProtobuf, &spec.Error{Kind: errUnsupportedMedia, Field: "Content-Type",
		Detail: fmt.Sprintf("%s is not supported; send %s or %s", cut(ct), typeProtobuf, typeJSON)}
}

// readBody reads the body of r with at most limit bytes before and after
// decompression. A failure is a *spec.Error of kind errUnsupportedMedia,
// spec.ErrTooLarge or spec.ErrInvalid.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit, "")
	}
	src := r.Body
	if src == nil {
		src = http.NoBody // a request built by hand, not by a server
	}
	ce := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	var body []byte
	var err error
	switch ce {
	case "", "identity", "none": // none: the OTLP exporters' name for no compression
		body, err = readAll(&capReader{r: src, n: limit}, limit, r.ContentLength)
		if err != nil {
			err = bodyError(err, limit, "")
		}
	case "gzip":
		body, err = readGzip(src, limit)
	default:
		return nil, &spec.Error{Kind: errUnsupportedMedia, Field: "Content-Encoding",
			Detail: fmt.Sprintf("%s is not supported; send the body as it is or with gzip", cut(ce))}
	}
	return body, err
}

// readGzip reads the gzip stream r, of at most limit bytes both compressed
// and decompressed.
func readGzip(r io.Reader, limit int64) ([]byte, error) {
	raw := &capReader{r: r, n: limit}
	zr, err := gzip.NewReader(raw)
	if err != nil {
		return nil, bodyError(err, limit, "")
	}
	b, err := readAll(zr, limit, -1)
	switch {
	case err != nil && raw.n < 0:
		return nil, bodyError(err, limit, " compressed")
	case err != nil:
		return nil, bodyError(err, limit, " after decompression")
	}
	return b, nil
}

// unmarshal decodes body, an export request of signal in encoding enc; the
// body of a JSON request is rewritten in place (its ids from hex to base64).
// A failure is a *spec.Error of kind spec.ErrInvalid.
func unmarshal(signal Signal, enc encoding, body []byte) (proto.Message, error) {
	m := signal.newRequest()
	if enc == encProtobuf {
		if err := proto.Unmarshal(body, m); err != nil {
			return nil, invalidProtobuf(m, err)
		}
		return m, nil
	}
	body, err := rewriteIDs(body)
	if err != nil {
		return nil, err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, m); err != nil {
		return nil, spec.Invalid("body", "is not an OTLP/JSON %s: %s", name(m), cut(err.Error()))
	}
	return m, nil
}

// invalidProtobuf is the 400 of a body that is not a protobuf request of
// m's type, for the error err of decoding it.
func invalidProtobuf(m proto.Message, err error) error {
	return spec.Invalid("body", "is not a protobuf %s: %s", name(m), cut(err.Error()))
}

// name returns the short name of m's type, such as ExportLogsServiceRequest.
func name(m proto.Message) string {
	return string(m.ProtoReflect().Descriptor().Name())
}

// readAll reads r to its end into one buffer of at most limit bytes,
// growing it by doubling from hint+1 bytes (64 KiB when hint is unknown,
// negative) up to limit, so that the allocations of a body over the limit
// stay under twice the limit. A body over limit is errTooLarge.
func readAll(r io.Reader, limit, hint int64) ([]byte, error) {
	n := int64(64 << 10)
	if hint >= 0 {
		n = max(hint+1, 512)
	}
	buf := make([]byte, 0, min(n, limit))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= limit {
				return buf, atEOF(r)
			}
			nb := make([]byte, len(buf), min(2*int64(cap(buf)), limit))
			copy(nb, buf)
			buf = nb
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// atEOF returns nil when r has nothing left to read, errTooLarge when it
// has, or the error of reading it.
func atEOF(r io.Reader) error {
	var one [1]byte
	for range 100 {
		k, err := r.Read(one[:])
		switch {
		case k > 0:
			return errTooLarge
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
	return io.ErrNoProgress
}

// capReader reads r, and fails with errTooLarge past n bytes.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	if c.n < 0 {
		return k, errTooLarge
	}
	return k, err
}

// bodyError returns err, the failure of reading a body of at most limit
// bytes, as what the client is told; where says which bytes went over.
func bodyError(err error, limit int64, where string) error {
	var e *spec.Error
	switch {
	case errors.Is(err, errTooLarge):
		return tooLarge(limit, where)
	case errors.As(err, &e):
		return e
	}
	return spec.Invalid("body", "could not be read: %s", cut(err.Error()))
}

// tooLarge returns the 413 of a body over limit bytes.
func tooLarge(limit int64, where string) *spec.Error {
	return &spec.Error{Kind: spec.ErrTooLarge, Field: "body", Detail: fmt.Sprintf("is larger than %d bytes%s", limit, where)}
}

// cut returns s cut to maxMessage bytes, on a rune boundary.
func cut(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	i := maxMessage
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
