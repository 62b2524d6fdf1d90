package sources

import (
	"slices"
	"testing"

	"github.com/aiusage/kit/spec"
)

// FuzzParsePushDelivery checks that any body either is refused with a
// problem or is a delivery whose envelope holds: type "records", a known
// resource, 1 to 1000 records.
func FuzzParsePushDelivery(f *testing.F) {
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
		d, problem := parsePushDelivery(body)
		if problem != "" {
			return
		}
		if d.Type != spec.PushTypeRecords || !slices.Contains(spec.PushResources, d.Resource) ||
			len(d.Records) == 0 || len(d.Records) > spec.MaxPushRecords {
			t.Fatalf("accepted %q as %+v", body, d)
		}
	})
}
