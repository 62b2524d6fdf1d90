package otlpwire

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// FuzzDecode sends any body, as protobuf or JSON, plain or gzip, to the
// handler of any signal: it never panics, never answers 5xx, and every
// answer is the response or google.rpc.Status of the request's encoding.
// The seed corpus is in testdata/fuzz/FuzzDecode: an export request of
// each signal in each encoding, and broken ones.
func FuzzDecode(f *testing.F) {
	f.Add(byte(Logs), true, false, []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"traceId":"5B8EFFF798038103D269B633813FC60C"}]}]}]}`))
	f.Add(byte(Traces), false, true, []byte{0x0a, 0x02, 0x0a, 0x00})
	handlers := map[Signal]http.Handler{}
	for _, s := range []Signal{Metrics, Logs, Traces} {
		h, err := Handler(s, Config{MaxBytes: 1 << 20, Ingest: func(context.Context, proto.Message) (Partial, error) {
			return Partial{}, nil
		}})
		require.NoError(f, err)
		handlers[s] = h
	}
	f.Fuzz(func(t *testing.T, signal byte, json, gzipped bool, body []byte) {
		s := Signal(signal%3 + 1)
		ct := typeProtobuf
		if json {
			ct = typeJSON
		}
		sent := body
		if gzipped {
			sent = gz(t, body)
		}
		req := httptest.NewRequest(http.MethodPost, s.Path(), bytes.NewReader(sent))
		req.Header.Set("Content-Type", ct)
		if gzipped {
			req.Header.Set("Content-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		handlers[s].ServeHTTP(rec, req)
		require.Equal(t, ct, rec.Header().Get("Content-Type"))
		unmarshal := proto.Unmarshal
		if json {
			unmarshal = protojson.Unmarshal
		}
		if rec.Code == http.StatusOK {
			require.NoError(t, unmarshal(rec.Body.Bytes(), s.response(Partial{})))
			return
		}
		require.True(t, rec.Code >= 400 && rec.Code < 500, "status %d", rec.Code)
		st := &status.Status{}
		require.NoError(t, unmarshal(rec.Body.Bytes(), st))
		require.NotEmpty(t, st.Message)
	})
}
