package reviewapi_test

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

	"github.com/aiusage/kit/internal/app/reviewapi"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
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
	a, b := reviewapi.NewWebhookSecret(), reviewapi.NewWebhookSecret()
	require.NotEqual(t, a, b)
	enc, ok := strings.CutPrefix(a, "whsec_")
	require.True(t, ok, a)
	key, err := base64.StdEncoding.DecodeString(enc)
	require.NoError(t, err)
	require.Len(t, key, 32)
	// Usable at once.
	_, err = reviewapi.SignWebhook(a, "msg_1", time.Now(), []byte(`{}`))
	require.NoError(t, err)
}

func TestSignWebhookOfficialVector(t *testing.T) {
	t.Parallel()
	sig, err := reviewapi.SignWebhook(whVectorSecret, whVectorID, whVectorTime, []byte(whVectorBody))
	require.NoError(t, err)
	require.Equal(t, whVectorSig, sig)
	// Only whole seconds are signed.
	sig, err = reviewapi.SignWebhook(whVectorSecret, whVectorID, whVectorTime.Add(999*time.Millisecond), []byte(whVectorBody))
	require.NoError(t, err)
	require.Equal(t, whVectorSig, sig)
}

func TestSignWebhookAgreesWithIndependentVerifier(t *testing.T) {
	t.Parallel()
	secret := reviewapi.NewWebhookSecret()
	for i, body := range []string{``, `{}`, `{"type":"task.approved","data":{"id":"x"}}`, "bin\x00ary\xff"} {
		id := "msg_" + strconv.Itoa(i)
		ts := time.Unix(1700000000+int64(i), 0)
		sig, err := reviewapi.SignWebhook(secret, id, ts, []byte(body))
		require.NoError(t, err)
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
		h.Set("webhook-signature", sig)
		require.NoError(t, webhooktest.Verify(secret, h, []byte(body)))
		require.NoError(t, reviewapi.VerifyWebhook(secret, h, []byte(body), ts, 0))
	}
}

func TestSignWebhookErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		secret string
		id     string
		ts     time.Time
		want   error
	}{
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"empty", "", whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"prefix only", "whsec_", whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"not base64", "whsec_not*base64*at*all*here*!!!!", whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"url-safe base64", "whsec_" + base64.URLEncoding.EncodeToString([]byte("\xfb\xff\xfe-24-byte-key-material!")), whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"key too short", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"key too long", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), whVectorID, whVectorTime, reviewapi.ErrWebhookSecret},
		{"empty id", whVectorSecret, "", whVectorTime, reviewapi.ErrWebhookID},
		{"id with full stop", whVectorSecret, "msg.1", whVectorTime, reviewapi.ErrWebhookID},
		{"id with space", whVectorSecret, "msg 1", whVectorTime, reviewapi.ErrWebhookID},
		{"id with newline", whVectorSecret, "msg\n1", whVectorTime, reviewapi.ErrWebhookID},
		{"id too long", whVectorSecret, strings.Repeat("m", 257), whVectorTime, reviewapi.ErrWebhookID},
		{"before 1970", whVectorSecret, whVectorID, time.Unix(-1, 0), reviewapi.ErrWebhookTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sig, err := reviewapi.SignWebhook(tt.secret, tt.id, tt.ts, []byte(whVectorBody))
			require.ErrorIs(t, err, tt.want)
			require.Empty(t, sig)
		})
	}
	// The key sizes at the limits are fine.
	for _, n := range []int{24, 64} {
		_, err := reviewapi.SignWebhook("whsec_"+base64.StdEncoding.EncodeToString(make([]byte, n)), "m", whVectorTime, nil)
		require.NoError(t, err, n)
	}
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	otherSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	otherSig, err := reviewapi.SignWebhook(otherSecret, whVectorID, whVectorTime, []byte(whVectorBody))
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
		{name: "5m01s late", now: whVectorTime.Add(5*time.Minute + time.Second), want: reviewapi.ErrWebhookTimestamp},
		{name: "5m01s early", now: whVectorTime.Add(-5*time.Minute - time.Second), want: reviewapi.ErrWebhookTimestamp},
		{name: "a day late within a day's tolerance", now: whVectorTime.Add(24 * time.Hour), tol: 24 * time.Hour},
		{name: "a year late", now: whVectorTime.AddDate(1, 0, 0), want: reviewapi.ErrWebhookTimestamp},
		{name: "tampered body", body: `{"test": 2432232315}`, want: reviewapi.ErrWebhookSignature},
		{name: "body with trailing newline", body: whVectorBody + "\n", want: reviewapi.ErrWebhookSignature},
		{name: "tampered id", edit: func(h http.Header) { h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJeK") }, want: reviewapi.ErrWebhookSignature},
		{name: "tampered timestamp", edit: func(h http.Header) { h.Set("webhook-timestamp", "1614265331") }, want: reviewapi.ErrWebhookSignature},
		{name: "timestamp with leading zero", edit: func(h http.Header) { h.Set("webhook-timestamp", "01614265330") }, want: reviewapi.ErrWebhookSignature},
		{name: "other secret", secret: otherSecret, want: reviewapi.ErrWebhookSignature},
		{name: "signed by other secret", edit: func(h http.Header) { h.Set("webhook-signature", otherSig) }, want: reviewapi.ErrWebhookSignature},
		{name: "rotation: old and new signature", edit: func(h http.Header) { h.Set("webhook-signature", otherSig+" "+whVectorSig) }},
		{name: "rotation: new and old signature", edit: func(h http.Header) { h.Set("webhook-signature", whVectorSig+" "+otherSig) }},
		{name: "extra spaces between signatures", edit: func(h http.Header) { h.Set("webhook-signature", "  "+otherSig+"   "+whVectorSig+" ") }},
		{name: "signature in a second header line", edit: func(h http.Header) { h.Set("webhook-signature", otherSig); h.Add("webhook-signature", whVectorSig) }},
		{name: "v1a entry ignored", edit: func(h http.Header) { h.Set("webhook-signature", "v1a,"+whVectorSig[3:]+" "+whVectorSig) }},
		{name: "only a v1a entry", edit: func(h http.Header) { h.Set("webhook-signature", "v1a,"+whVectorSig[3:]) }, want: reviewapi.ErrWebhookSignature},
		{name: "v2 entry", edit: func(h http.Header) { h.Set("webhook-signature", "v2,"+whVectorSig[3:]) }, want: reviewapi.ErrWebhookSignature},
		{name: "no version", edit: func(h http.Header) { h.Set("webhook-signature", whVectorSig[3:]) }, want: reviewapi.ErrWebhookSignature},
		{name: "signature not base64", edit: func(h http.Header) { h.Set("webhook-signature", "v1,***") }, want: reviewapi.ErrWebhookSignature},
		{name: "signature truncated", edit: func(h http.Header) { h.Set("webhook-signature", whVectorSig[:20]) }, want: reviewapi.ErrWebhookSignature},
		{name: "signature without padding", edit: func(h http.Header) { h.Set("webhook-signature", strings.TrimRight(whVectorSig, "=")) }, want: reviewapi.ErrWebhookSignature},
		{name: "v1 with empty signature", edit: func(h http.Header) { h.Set("webhook-signature", "v1,") }, want: reviewapi.ErrWebhookSignature},
		{name: "no signature header", edit: func(h http.Header) { h.Del("webhook-signature") }, want: reviewapi.ErrWebhookSignature},
		{name: "blank signature header", edit: func(h http.Header) { h.Set("webhook-signature", "   ") }, want: reviewapi.ErrWebhookSignature},
		{name: "no id", edit: func(h http.Header) { h.Del("webhook-id") }, want: reviewapi.ErrWebhookID},
		{name: "id with full stop", edit: func(h http.Header) { h.Set("webhook-id", "msg.1") }, want: reviewapi.ErrWebhookID},
		{name: "no timestamp", edit: func(h http.Header) { h.Del("webhook-timestamp") }, want: reviewapi.ErrWebhookTimestamp},
		{name: "timestamp not a number", edit: func(h http.Header) { h.Set("webhook-timestamp", "yesterday") }, want: reviewapi.ErrWebhookTimestamp},
		{name: "timestamp with sign", edit: func(h http.Header) { h.Set("webhook-timestamp", "+1614265330") }, want: reviewapi.ErrWebhookTimestamp},
		{name: "negative timestamp", edit: func(h http.Header) { h.Set("webhook-timestamp", "-1") }, want: reviewapi.ErrWebhookTimestamp},
		{name: "fractional timestamp", edit: func(h http.Header) { h.Set("webhook-timestamp", "1614265330.5") }, want: reviewapi.ErrWebhookTimestamp},
		{name: "timestamp in milliseconds", edit: func(h http.Header) { h.Set("webhook-timestamp", "1614265330000") }, want: reviewapi.ErrWebhookSignature},
		{name: "timestamp overflowing int64", edit: func(h http.Header) { h.Set("webhook-timestamp", "99999999999999999999") }, want: reviewapi.ErrWebhookTimestamp},
		{name: "malformed secret", secret: "whsec_%%%", want: reviewapi.ErrWebhookSecret},
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
			err := reviewapi.VerifyWebhook(secret, h, []byte(body), now, tt.tol)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			for _, other := range []error{reviewapi.ErrWebhookSecret, reviewapi.ErrWebhookID, reviewapi.ErrWebhookTimestamp, reviewapi.ErrWebhookSignature} {
				if other != tt.want {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

// A stale delivery with a bad signature is a signature error: the signature
// is checked first, so ErrWebhookTimestamp means the delivery was authentic.
func TestVerifyWebhookSignatureBeforeTimestamp(t *testing.T) {
	t.Parallel()
	err := reviewapi.VerifyWebhook(whVectorSecret, whVectorHeader(), []byte("tampered"), time.Now(), 0)
	require.ErrorIs(t, err, reviewapi.ErrWebhookSignature)
}

func FuzzVerifyWebhook(f *testing.F) {
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
		err := reviewapi.VerifyWebhook(whVectorSecret, h, body, time.Unix(now, 0), 0)
		if err == nil {
			// Accepted: the independent verifier must agree.
			if verr := webhooktest.Verify(whVectorSecret, h, body); verr != nil && strings.IndexFunc(sig, unicode.IsSpace) < 0 {
				t.Fatalf("accepted by VerifyWebhook, refused by webhooktest.Verify: %v", verr)
			}
		}
	})
}

func ExampleSignWebhook() {
	sig, err := reviewapi.SignWebhook(
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
