package spec_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aiusage/kit/spec"
)

func TestDecodePushDelivery(t *testing.T) {
	t.Parallel()
	d, err := spec.DecodePushDelivery([]byte(`{"type":"records","resource":"events","records":[{"id":"e"},2]}`))
	if err != nil || d.Resource != "events" || len(d.Records) != 2 {
		t.Fatalf("got %+v, %v", d, err)
	}
	for body, says := range map[string]string{
		`{"type":`: "not a push delivery",
		`{"type":"records","resource":"events","records":[{}]} {}`: "more than one JSON value",
		`{"type":"other","resource":"events","records":[{}]}`:      `type is "other"`,
		`{"type":1,"resource":"events","records":[{}]}`:            "not a push delivery",
		`{"type":"records","resource":"users","records":[{}]}`:     `resource is "users"`,
		`{"type":"records","resource":"events","records":[]}`:      "missing or empty",
		`{"type":"records","resource":"events"}`:                   "missing or empty",
		`{"type":"records","resource":"events","records":{}}`:      "not a push delivery",
	} {
		_, err := spec.DecodePushDelivery([]byte(body))
		if !errors.Is(err, spec.ErrInvalid) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: got %v, want an ErrInvalid saying %q", body, err, says)
		}
	}
}

// FuzzDecodePushDelivery checks that any body either is refused with
// ErrInvalid or is a delivery whose envelope holds: type "records", a known
// resource, 1 to 1000 records.
func FuzzDecodePushDelivery(f *testing.F) {
	for _, seed := range []string{
		`{"type":"records","resource":"conversations","records":[{"id":"c","startedAt":"2026-03-01T00:00:00.000Z"}]}`,
		`{"type":"records","resource":"usage","records":[{}]}`,
		`{"type":"records","resource":"events","records":[]}`,
		`{"type":"records","resource":"events","records":null}`,
		`{"type":"records","resource":"events","records":[1,"x",null]}`,
		`{"type":"other","resource":"events","records":[{}]}`,
		`{"type":"records","resource":"events","records":[{}]} []`,
		`{"type":"records","resource":"events","records":[{}],"type":"x"}`,
		`[]`, `null`, ``, `{`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := spec.DecodePushDelivery(body)
		if err != nil {
			if !errors.Is(err, spec.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if d.Type != spec.PushTypeRecords || !slices.Contains(spec.PushResources, d.Resource) ||
			len(d.Records) == 0 || len(d.Records) > spec.MaxPushRecords {
			t.Fatalf("accepted %q as %+v", body, d)
		}
	})
}
