package otlpwire

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aiusage/kit/spec"
	"github.com/stretchr/testify/require"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	logs "go.opentelemetry.io/proto/otlp/logs/v1"
	resource "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// flat is one item of a request with its resource and scope (each without
// the list it holds); item is nil for a scope without items.
type flat struct{ res, scope, item proto.Message }

// flatten returns the items of req as parts hold them: a resource without
// scopes holds none.
func flatten(req proto.Message) []flat {
	var out []flat
	m := req.ProtoReflect()
	resources := m.Get(m.Descriptor().Fields().ByNumber(fieldResources)).List()
	for i := range resources.Len() {
		r := resources.Get(i).Message()
		scopeFD := r.Descriptor().Fields().ByNumber(fieldScopes)
		scopes := r.Get(scopeFD).List()
		for j := range scopes.Len() {
			s := scopes.Get(j).Message()
			itemFD := s.Descriptor().Fields().ByNumber(fieldItems)
			items := s.Get(itemFD).List()
			res, scope := shallowCopy(r, scopeFD).Interface(), shallowCopy(s, itemFD).Interface()
			if items.Len() == 0 {
				out = append(out, flat{res, scope, nil})
			}
			for k := range items.Len() {
				out = append(out, flat{res, scope, items.Get(k).Message().Interface()})
			}
		}
	}
	return out
}

// collect returns the parts of body, and the error of the first bad part.
func collect(signal Signal, body []byte) ([]proto.Message, error) {
	var parts []proto.Message
	for p, err := range protobufParts(signal, body) {
		if err != nil {
			return parts, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// requireSameAsWhole checks that body is valid in parts exactly when
// proto.Unmarshal takes it whole, and that its parts hold the same items in
// the same order, at most PartItems a part.
func requireSameAsWhole(t *testing.T, signal Signal, body []byte) {
	t.Helper()
	whole := signal.newRequest()
	wholeErr := proto.Unmarshal(body, whole)
	parts, err := collect(signal, body)
	if wholeErr != nil {
		require.Error(t, err, "whole: %v", wholeErr)
		require.ErrorIs(t, err, spec.ErrInvalid)
		return
	}
	require.NoError(t, err)
	var got []flat
	for _, p := range parts {
		f := flatten(p)
		require.LessOrEqual(t, len(f), PartItems)
		got = append(got, f...)
	}
	want := flatten(whole)
	require.Len(t, got, len(want))
	for i := range want {
		for _, pair := range [][2]proto.Message{{want[i].res, got[i].res}, {want[i].scope, got[i].scope}, {want[i].item, got[i].item}} {
			if pair[0] == nil {
				require.Nil(t, pair[1], "item %d", i)
				continue
			}
			require.True(t, proto.Equal(pair[0], pair[1]), "item %d: want %v, got %v", i, pair[0], pair[1])
		}
	}
}

// scopedLogs returns a request of a resource and scope of each count of
// records, each followed by an empty scope and an empty resource.
func scopedLogs(scopes ...int) *collogs.ExportLogsServiceRequest {
	req := &collogs.ExportLogsServiceRequest{}
	for i, n := range scopes {
		rl := &logs.ResourceLogs{Resource: &resource.Resource{Attributes: []*common.KeyValue{
			{Key: "service.name", Value: &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: fmt.Sprint("tool", i)}}}}},
			SchemaUrl: "https://opentelemetry.io/schemas/1.30.0"}
		sl := &logs.ScopeLogs{Scope: &common.InstrumentationScope{Name: fmt.Sprint("scope", i)}}
		for j := range n {
			sl.LogRecords = append(sl.LogRecords, &logs.LogRecord{TimeUnixNano: uint64(j + 1), EventName: fmt.Sprint("e", j)})
		}
		rl.ScopeLogs = []*logs.ScopeLogs{sl, {}}
		req.ResourceLogs = append(req.ResourceLogs, rl, &logs.ResourceLogs{})
	}
	return req
}

// TestPartsSameAsWhole splits requests of many items, empty resources and
// scopes, fields in any order and repeated, unknown fields and broken
// bodies, and finds what proto.Unmarshal finds in each.
func TestPartsSameAsWhole(t *testing.T) {
	t.Parallel()
	big, err := proto.Marshal(scopedLogs(1234, 0, PartItems, 7))
	require.NoError(t, err)
	parts, err := collect(Logs, big)
	require.NoError(t, err)
	require.Len(t, parts, 3+1+1+1+4) // 1234 in 3, an empty scope each, 500 in 1, 7 in 1
	requireSameAsWhole(t, Logs, big)

	// The resource after its scopes, and a resource field repeated (merged).
	res := protowire.AppendTag(nil, 1, protowire.BytesType)
	res = protowire.AppendBytes(res, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType),
		string(must(proto.Marshal(&common.KeyValue{Key: "k"})))))
	scope := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), must(proto.Marshal(scopedLogs(3).ResourceLogs[0].ScopeLogs[0])))
	rl := append(append(append([]byte{}, scope...), res...), res...)
	rl = protowire.AppendVarint(protowire.AppendTag(rl, 99, protowire.VarintType), 5) // unknown
	rl = protowire.AppendVarint(protowire.AppendTag(rl, 2, protowire.VarintType), 5)  // scope_logs of the wrong wire type
	body := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rl)
	requireSameAsWhole(t, Logs, body)
	requireSameAsWhole(t, Metrics, body)
	requireSameAsWhole(t, Traces, body)

	for i := range len(big) / 97 {
		requireSameAsWhole(t, Logs, big[:i*97+1]) // truncated
	}
	bad := bytes.Clone(big)
	bad[len(bad)-3] = 0xff // a broken record near the end
	requireSameAsWhole(t, Logs, bad)
	invalidUTF8 := must(proto.Marshal(&collogs.ExportLogsServiceRequest{ResourceLogs: []*logs.ResourceLogs{{ScopeLogs: []*logs.ScopeLogs{{
		LogRecords: []*logs.LogRecord{{EventName: "ok"}, {EventName: "ok"}}}}}}}))
	invalidUTF8 = bytes.Replace(invalidUTF8, []byte("ok"), []byte{0xc3, 0x28}, 1)
	requireSameAsWhole(t, Logs, invalidUTF8)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// FuzzParts checks, for any body, that its parts are what proto.Unmarshal
// finds in it whole.
func FuzzParts(f *testing.F) {
	f.Add(byte(Logs), must(proto.Marshal(scopedLogs(3, 0, 2))))
	f.Fuzz(func(t *testing.T, signal byte, body []byte) {
		requireSameAsWhole(t, Signal(signal%3+1), body)
	})
}

// TestHandlerParts checks that the handler gives a PartsFunc every part of
// a protobuf body, and answers a bad part's 400 whatever the function
// returns; JSON bodies still go to Ingest.
func TestHandlerParts(t *testing.T) {
	t.Parallel()
	var items, whole int
	h, err := Handler(Logs, Config{
		Ingest: func(context.Context, proto.Message) (Partial, error) { whole++; return Partial{}, nil },
		IngestParts: func(_ context.Context, parts iter.Seq2[proto.Message, error]) (Partial, error) {
			for p := range parts { // the function ignores a bad part's error
				if p != nil {
					items += len(flatten(p))
				}
			}
			return Partial{}, nil
		}})
	require.NoError(t, err)
	post := func(ct string, body []byte) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	body := must(proto.Marshal(scopedLogs(1200)))
	require.Equal(t, http.StatusOK, post(typeProtobuf, body))
	require.Equal(t, 1200+1, items) // and the empty scope
	require.Equal(t, http.StatusBadRequest, post(typeProtobuf, body[:len(body)-5]))
	require.Equal(t, http.StatusOK, post(typeJSON, []byte(`{}`)))
	require.Equal(t, 1, whole)
}
