package httpclient_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/httpclient"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type want struct {
		wait time.Duration
		ok   bool
	}
	for v, w := range map[string]want{
		"":                        {0, false},
		"   ":                     {0, false},
		"0":                       {0, true},
		"3":                       {3 * time.Second, true},
		" 120 ":                   {2 * time.Minute, true},
		"-3":                      {0, false},
		"+3":                      {0, false},
		"1.5":                     {0, false},
		"99999999999999999999999": {0, false}, // more than an int64: neither form
		"9223372036854775807":     {httpclient.MaxRetryAfter, true},
		"999999999":               {24 * time.Hour, true},
		"86401":                   {24 * time.Hour, true},
		"soon":                    {0, false},
		now.Add(90 * time.Second).Format(http.TimeFormat):  {90 * time.Second, true},
		now.Add(-90 * time.Second).Format(http.TimeFormat): {0, true},
		now.Add(48 * time.Hour).Format(http.TimeFormat):    {24 * time.Hour, true},
	} {
		wait, ok := httpclient.RetryAfter(v, now)
		require.Equal(t, w, want{wait, ok}, "RetryAfter(%q)", v)
	}
}
