package webhook_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec/webhook"
)

// The test vector of the Standard Webhooks reference libraries.
const (
	whVectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	whVectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	whVectorSec    = 1614265330
	whVectorBody   = `{"test": 2432232314}`
	whVectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var whVectorTime = time.Unix(whVectorSec, 0)

func whVectorHeader() http.Header {
	h := http.Header{}
	h.Set("webhook-id", whVectorID)
	h.Set("webhook-timestamp", strconv.Itoa(whVectorSec))
	h.Set("webhook-signature", whVectorSig)
	return h
}

func TestNewWebhookSecret(t *testing.T) {
	t.Parallel()
	a, b := webhook.NewSecret(), webhook.NewSecret()
	require.NotEqual(t, a, b)
	enc, ok := strings.CutPrefix(a, "whsec_")
	require.True(t, ok, a)
	key, err := base64.StdEncoding.DecodeString(enc)
	require.NoError(t, err)
	require.Len(t, key, 32)
	// Usable at once.
	_, err = webhook.Sign(a, "msg_1", time.Now(), []byte(`{}`))
	require.NoError(t, err)
}

func TestSignOfficialVector(t *testing.T) {
	t.Parallel()
	sig, err := webhook.Sign(whVectorSecret, whVectorID, whVectorTime, []byte(whVectorBody))
	require.NoError(t, err)
	require.Equal(t, whVectorSig, sig)
	// Only whole seconds are signed.
	sig, err = webhook.Sign(whVectorSecret, whVectorID, whVectorTime.Add(999*time.Millisecond), []byte(whVectorBody))
	require.NoError(t, err)
	require.Equal(t, whVectorSig, sig)
}

func TestSignAgreesWithIndependentVerifier(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	for i, body := range []string{``, `{}`, `{"type":"task.approved","data":{"id":"x"}}`, "bin\x00ary\xff"} {
		id := "msg_" + strconv.Itoa(i)
		ts := time.Unix(1700000000+int64(i), 0)
		sig, err := webhook.Sign(secret, id, ts, []byte(body))
		require.NoError(t, err)
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
		h.Set("webhook-signature", sig)
		require.NoError(t, webhooktest.Verify(secret, h, []byte(body)))
		require.NoError(t, webhook.Verify(secret, h, []byte(body), ts, 0))
	}
}

func TestSignErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		id     string
		ts     time.Time
		want   error
	}{
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", whVectorID, whVectorTime, webhook.ErrSecret},
		{"empty", "", whVectorID, whVectorTime, webhook.ErrSecret},
		{"prefix only", "whsec_", whVectorID, whVectorTime, webhook.ErrSecret},
		{"not base64", "whsec_not*base64*at*all*here*!!!!", whVectorID, whVectorTime, webhook.ErrSecret},
		{"url-safe base64", "whsec_" + base64.URLEncoding.EncodeToString([]byte("\xfb\xff\xfe-24-byte-key-material!")), whVectorID, whVectorTime, webhook.ErrSecret},
		{"key too short", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), whVectorID, whVectorTime, webhook.ErrSecret},
		{"key too long", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), whVectorID, whVectorTime, webhook.ErrSecret},
		{"empty id", whVectorSecret, "", whVectorTime, webhook.ErrID},
		{"id with full stop", whVectorSecret, "msg.1", whVectorTime, webhook.ErrID},
		{"id with space", whVectorSecret, "msg 1", whVectorTime, webhook.ErrID},
		{"id with newline", whVectorSecret, "msg\n1", whVectorTime, webhook.ErrID},
		{"id too long", whVectorSecret, strings.Repeat("m", 257), whVectorTime, webhook.ErrID},
		{"before 1970", whVectorSecret, whVectorID, time.Unix(-1, 0), webhook.ErrTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sig, err := webhook.Sign(tt.secret, tt.id, tt.ts, []byte(whVectorBody))
			require.ErrorIs(t, err, tt.want)
			require.Empty(t, sig)
		})
	}
	// The key sizes at the limits are fine.
	for _, n := range []int{24, 64} {
		_, err := webhook.Sign("whsec_"+base64.StdEncoding.EncodeToString(make([]byte, n)), "m", whVectorTime, nil)
		require.NoError(t, err, n)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	otherSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	otherSig, err := webhook.Sign(otherSecret, whVectorID, whVectorTime, []byte(whVectorBody))
	require.NoError(t, err)

	tests := []struct {
		name   string
		secret string
		edit   func(http.Header)
		body   string
		now    time.Time
		tol    time.Duration
		want   error // nil: valid
	}{
		{name: "official vector", edit: func(http.Header) {}},
		{name: "4m59s late", now: whVectorTime.Add(4*time.Minute + 59*time.Second)},
		{name: "5m late, at the default tolerance", now: whVectorTime.Add(5 * time.Minute)},
		{name: "5m early", now: whVectorTime.Add(-5 * time.Minute)},
		{name: "5m01s late", now: whVectorTime.Add(5*time.Minute + time.Second), want: webhook.ErrTimestamp},
		{name: "5m01s early", now: whVectorTime.Add(-5*time.Minute - time.Second), want: webhook.ErrTimestamp},
		{name: "a day late within a day's tolerance", now: whVectorTime.Add(24 * time.Hour), tol: 24 * time.Hour},
		{name: "a year late", now: whVectorTime.AddDate(1, 0, 0), want: webhook.ErrTimestamp},
		{name: "tampered body", body: `{"test": 2432232315}`, want: webhook.ErrSignature},
		{name: "body with trailing newline", body: whVectorBody + "\n", want: webhook.ErrSignature},
		{name: "tampered id", edit: func(h http.Header) { h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJeK") }, want: webhook.ErrSignature},
		{name: "tampered timestamp", edit: func(h http.Header) { h.Set("webhook-timestamp", "1614265331") }, want: webhook.ErrSignature},
		{name: "timestamp with leading zero", edit: func(h http.Header) { h.Set("webhook-timestamp", "01614265330") }, want: webhook.ErrSignature},
		{name: "other secret", secret: otherSecret, want: webhook.ErrSignature},
		{name: "signed by other secret", edit: func(h http.Header) { h.Set("webhook-signature", otherSig) }, want: webhook.ErrSignature},
		{name: "rotation: old and new signature", edit: func(h http.Header) { h.Set("webhook-signature", otherSig+" "+whVectorSig) }},
		{name: "rotation: new and old signature", edit: func(h http.Header) { h.Set("webhook-signature", whVectorSig+" "+otherSig) }},
		{name: "extra spaces between signatures", edit: func(h http.Header) { h.Set("webhook-signature", "  "+otherSig+"   "+whVectorSig+" ") }},
		{name: "signature in a second header line", edit: func(h http.Header) { h.Set("webhook-signature", otherSig); h.Add("webhook-signature", whVectorSig) }},
		{name: "v1a entry ignored", edit: func(h http.Header) { h.Set("webhook-signature", "v1a,"+whVectorSig[3:]+" "+whVectorSig) }},
		{name: "only a v1a entry", edit: func(h http.Header) { h.Set("webhook-signature", "v1a,"+whVectorSig[3:]) }, want: webhook.ErrSignature},
		{name: "v2 entry", edit: func(h http.Header) { h.Set("webhook-signature", "v2,"+whVectorSig[3:]) }, want: webhook.ErrSignature},
		{name: "no version", edit: func(h http.Header) { h.Set("webhook-signature", whVectorSig[3:]) }, want: webhook.ErrSignature},
		{name: "signature not base64", edit: func(h http.Header) { h.Set("webhook-signature", "v1,***") }, want: webhook.ErrSignature},
		{name: "signature truncated", edit: func(h http.Header) { h.Set("webhook-signature", whVectorSig[:20]) }, want: webhook.ErrSignature},
		{name: "signature without padding", edit: func(h http.Header) { h.Set("webhook-signature", strings.TrimRight(whVectorSig, "=")) }, want: webhook.ErrSignature},
		{name: "v1 with empty signature", edit: func(h http.Header) { h.Set("webhook-signature", "v1,") }, want: webhook.ErrSignature},
		{name: "no signature header", edit: func(h http.Header) { h.Del("webhook-signature") }, want: webhook.ErrSignature},
		{name: "blank signature header", edit: func(h http.Header) { h.Set("webhook-signature", "   ") }, want: webhook.ErrSignature},
		{name: "no id", edit: func(h http.Header) { h.Del("webhook-id") }, want: webhook.ErrID},
		{name: "id with full stop", edit: func(h http.Header) { h.Set("webhook-id", "msg.1") }, want: webhook.ErrID},
		{name: "no timestamp", edit: func(h http.Header) { h.Del("webhook-timestamp") }, want: webhook.ErrTimestamp},
		{name: "timestamp not a number", edit: func(h http.Header) { h.Set("webhook-timestamp", "yesterday") }, want: webhook.ErrTimestamp},
		{name: "timestamp with sign", edit: func(h http.Header) { h.Set("webhook-timestamp", "+1614265330") }, want: webhook.ErrTimestamp},
		{name: "negative timestamp", edit: func(h http.Header) { h.Set("webhook-timestamp", "-1") }, want: webhook.ErrTimestamp},
		{name: "fractional timestamp", edit: func(h http.Header) { h.Set("webhook-timestamp", "1614265330.5") }, want: webhook.ErrTimestamp},
		{name: "timestamp in milliseconds", edit: func(h http.Header) { h.Set("webhook-timestamp", "1614265330000") }, want: webhook.ErrSignature},
		{name: "timestamp overflowing int64", edit: func(h http.Header) { h.Set("webhook-timestamp", "99999999999999999999") }, want: webhook.ErrTimestamp},
		{name: "malformed secret", secret: "whsec_%%%", want: webhook.ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret, body, now := whVectorSecret, whVectorBody, whVectorTime
			if tt.secret != "" {
				secret = tt.secret
			}
			if tt.body != "" {
				body = tt.body
			}
			if !tt.now.IsZero() {
				now = tt.now
			}
			h := whVectorHeader()
			if tt.edit != nil {
				tt.edit(h)
			}
			err := webhook.Verify(secret, h, []byte(body), now, tt.tol)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			for _, other := range []error{webhook.ErrSecret, webhook.ErrID, webhook.ErrTimestamp, webhook.ErrSignature} {
				if other != tt.want {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

// A stale delivery with a bad signature is a signature error: the signature
// is checked first, so ErrWebhookTimestamp means the delivery was authentic.
func TestVerifySignatureBeforeTimestamp(t *testing.T) {
	t.Parallel()
	err := webhook.Verify(whVectorSecret, whVectorHeader(), []byte("tampered"), time.Now(), 0)
	require.ErrorIs(t, err, webhook.ErrSignature)
}

func FuzzVerify(f *testing.F) {
	f.Add(whVectorID, strconv.Itoa(whVectorSec), whVectorSig, []byte(whVectorBody), int64(whVectorSec))
	f.Add(whVectorID, strconv.Itoa(whVectorSec), "v1a,xyz "+whVectorSig, []byte(whVectorBody), int64(whVectorSec+301))
	f.Add("", "", "", []byte(nil), int64(0))
	f.Add("msg.1", "-1", "v1,", []byte("{}"), int64(-1))
	f.Add("m", "99999999999999999999", "v1,=== ,, v1", []byte("x"), int64(1<<62))
	f.Add("m", "0", "v1,AAAA\tv1,BBBB", []byte{0xff, 0}, int64(-1<<62))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte, now int64) {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
		err := webhook.Verify(whVectorSecret, h, body, time.Unix(now, 0), 0)
		if err == nil {
			// Accepted: the independent verifier must agree.
			if verr := webhooktest.Verify(whVectorSecret, h, body); verr != nil && strings.IndexFunc(sig, unicode.IsSpace) < 0 {
				t.Fatalf("accepted by Verify, refused by webhooktest.Verify: %v", verr)
			}
		}
	})
}

func ExampleSign() {
	sig, err := webhook.Sign(
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0),
		[]byte(`{"test": 2432232314}`),
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(sig)
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

// CheckHeaders accepts every delivery Verify accepts, judging the headers
// alone, and refuses, without the body, one that cannot be authentic.
func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(http.Header)
		now  time.Time
		want error // nil: the headers can be authentic
	}{
		{name: "official vector", edit: func(http.Header) {}},
		{name: "any v1 signature of the right form", edit: func(h http.Header) {
			h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
		}},
		{name: "a v2 entry beside a v1", edit: func(h http.Header) { h.Set("webhook-signature", "v2,abc "+whVectorSig) }},
		{name: "5m late", now: whVectorTime.Add(5 * time.Minute)},
		{name: "5m01s late", now: whVectorTime.Add(5*time.Minute + time.Second), want: webhook.ErrTimestamp},
		{name: "5m01s early", now: whVectorTime.Add(-5*time.Minute - time.Second), want: webhook.ErrTimestamp},
		{name: "no id", edit: func(h http.Header) { h.Del("webhook-id") }, want: webhook.ErrID},
		{name: "id with a full stop", edit: func(h http.Header) { h.Set("webhook-id", "a.b") }, want: webhook.ErrID},
		{name: "no timestamp", edit: func(h http.Header) { h.Del("webhook-timestamp") }, want: webhook.ErrTimestamp},
		{name: "timestamp not seconds", edit: func(h http.Header) { h.Set("webhook-timestamp", "2026-01-01") }, want: webhook.ErrTimestamp},
		{name: "no signature", edit: func(h http.Header) { h.Del("webhook-signature") }, want: webhook.ErrSignature},
		{name: "only v2", edit: func(h http.Header) { h.Set("webhook-signature", "v2,abc") }, want: webhook.ErrSignature},
		{name: "v1 not base64", edit: func(h http.Header) { h.Set("webhook-signature", "v1,not base64!") }, want: webhook.ErrSignature},
		{name: "v1 of 16 bytes", edit: func(h http.Header) {
			h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 16)))
		}, want: webhook.ErrSignature},
	}
	for _, tc := range tests {
		h := whVectorHeader()
		if tc.edit != nil {
			tc.edit(h)
		}
		now := tc.now
		if now.IsZero() {
			now = whVectorTime
		}
		err := webhook.CheckHeaders(h, now, 0)
		if tc.want == nil {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}
