package people

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The package's tests make cheap hashes whatever their Config says; the
// tests of the format use strongParams explicitly.
func init() { params = testParams }

func TestHashPasswordFormatRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const pw = "correct horse battery staple"
	s, err := hashPassword(ctx, pw, strongParams)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(s, "$argon2id$v=19$m=65536,t=3,p=2$"), s)
	parts := strings.Split(s, "$")
	require.Len(t, parts, 6, s)
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	require.NoError(t, err)
	require.Len(t, salt, 16)
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	require.NoError(t, err)
	require.Len(t, key, 32)

	h, err := parseHash(s)
	require.NoError(t, err)
	require.Equal(t, strongParams, h.params)
	require.Equal(t, salt, h.salt)
	require.Equal(t, key, h.key)
	require.Equal(t, s, h.String())

	// Verified with the parameters the hash names, not those of new hashes
	// (cheap in these tests).
	ok, err := verifyPassword(ctx, pw, s)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = verifyPassword(ctx, pw+"!", s)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestHashPasswordSaltsEveryHash(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, err := hashPassword(ctx, "same password here", params)
	require.NoError(t, err)
	b, err := hashPassword(ctx, "same password here", params)
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	for _, h := range []string{a, b} {
		ok, err := verifyPassword(ctx, "same password here", h)
		require.NoError(t, err)
		require.True(t, ok)
	}
	// Parameters other than those of new hashes are read back from the
	// hash.
	other := hashParams{memory: 32, time: 2, threads: 4, saltLen: 8, keyLen: 16}
	c, err := hashPassword(ctx, "same password here", other)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(c, "$argon2id$v=19$m=32,t=2,p=4$"), c)
	ok, err := verifyPassword(ctx, "same password here", c)
	require.NoError(t, err)
	require.True(t, ok)
}

// validHash is a hash of "password" with cheap parameters.
const validHash = "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$Y4Ql5L7Rk7PZzkKLFYR8FDeTgRxGlJkHqyDzY5HZuX0"

func TestParseHashRefuses(t *testing.T) {
	t.Parallel()
	_, err := parseHash(validHash)
	require.NoError(t, err)
	salt16 := "c2FsdHNhbHRzYWx0c2FsdA"
	key32 := "Y4Ql5L7Rk7PZzkKLFYR8FDeTgRxGlJkHqyDzY5HZuX0"
	for name, s := range map[string]string{
		"empty":                "",
		"argon2i":              "$argon2i$v=19$m=64,t=1,p=1$" + salt16 + "$" + key32,
		"argon2d":              "$argon2d$v=19$m=64,t=1,p=1$" + salt16 + "$" + key32,
		"version 16":           "$argon2id$v=16$m=64,t=1,p=1$" + salt16 + "$" + key32,
		"no version":           "$argon2id$m=64,t=1,p=1$" + salt16 + "$" + key32,
		"parameters reordered": "$argon2id$v=19$t=1,m=64,p=1$" + salt16 + "$" + key32,
		"missing parameter":    "$argon2id$v=19$m=64,t=1$" + salt16 + "$" + key32,
		"extra parameter":      "$argon2id$v=19$m=64,t=1,p=1,k=2$" + salt16 + "$" + key32,
		"leading zero":         "$argon2id$v=19$m=064,t=1,p=1$" + salt16 + "$" + key32,
		"sign":                 "$argon2id$v=19$m=+64,t=1,p=1$" + salt16 + "$" + key32,
		"empty value":          "$argon2id$v=19$m=,t=1,p=1$" + salt16 + "$" + key32,
		"memory too large":     "$argon2id$v=19$m=1048577,t=1,p=1$" + salt16 + "$" + key32,
		"memory overflows":     "$argon2id$v=19$m=99999999999,t=1,p=1$" + salt16 + "$" + key32,
		"memory below 8p":      "$argon2id$v=19$m=15,t=1,p=2$" + salt16 + "$" + key32,
		"zero passes":          "$argon2id$v=19$m=64,t=0,p=1$" + salt16 + "$" + key32,
		"too many passes":      "$argon2id$v=19$m=64,t=65,p=1$" + salt16 + "$" + key32,
		"zero lanes":           "$argon2id$v=19$m=64,t=1,p=0$" + salt16 + "$" + key32,
		"256 lanes":            "$argon2id$v=19$m=4096,t=1,p=256$" + salt16 + "$" + key32,
		"short salt":           "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$" + key32,
		"short key":            "$argon2id$v=19$m=64,t=1,p=1$" + salt16 + "$a2V5",
		"padded salt":          "$argon2id$v=19$m=64,t=1,p=1$" + salt16 + "==$" + key32,
		"url alphabet":         "$argon2id$v=19$m=64,t=1,p=1$" + salt16 + "$" + strings.ReplaceAll(key32, "/", "_") + "_",
		"stray bits":           "$argon2id$v=19$m=64,t=1,p=1$" + salt16[:len(salt16)-1] + "B$" + key32,
		"newline in salt":      "$argon2id$v=19$m=64,t=1,p=1$" + salt16[:4] + "\n" + salt16[4:] + "$" + key32,
		"missing key":          "$argon2id$v=19$m=64,t=1,p=1$" + salt16,
		"trailing part":        validHash + "$x",
		"too long":             validHash + strings.Repeat("A", maxHashLen),
	} {
		_, err := parseHash(s)
		require.ErrorIs(t, err, errHashFormat, "%s: %q", name, s)
		ok, err := verifyPassword(t.Context(), "password", s)
		require.Error(t, err, name)
		require.False(t, ok, name)
	}
}

// FuzzParseHash checks that parseHash never panics, and that what it
// accepts is canonical: formatted again, it is the same string.
func FuzzParseHash(f *testing.F) {
	for _, s := range []string{
		validHash,
		"$argon2id$v=19$m=65536,t=3,p=2$c2FsdHNhbHRzYWx0c2FsdA$Y4Ql5L7Rk7PZzkKLFYR8FDeTgRxGlJkHqyDzY5HZuX0",
		"$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5aw",
		"$argon2id$v=19$m=064,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$Y4Ql5L7Rk7PZzkKLFYR8FDeTgRxGlJkHqyDzY5HZuX0",
		"$argon2id$v=19$m=4294967296,t=1,p=1$$",
		"$argon2id$v=19$m=64,t=1,p=1$\n$",
		"$argon2id$v=19$$$",
		"$argon2id$",
		"",
		"$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHash(s)
		if err != nil {
			return
		}
		require.Equal(t, s, h.String())
		again, err := parseHash(h.String())
		require.NoError(t, err)
		require.Equal(t, h, again)
		require.LessOrEqual(t, h.params.memory, uint32(maxMemory))
		require.GreaterOrEqual(t, h.params.memory, 8*uint32(h.params.threads))
	})
}

func TestAddressKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7":                "192.0.2.7",
		" 192.0.2.7 ":              "192.0.2.7",
		"192.0.2.7:51234":          "192.0.2.7",
		"::ffff:192.0.2.7":         "192.0.2.7",
		"[::ffff:192.0.2.7]:443":   "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":     "2001:db8:1:2::/64",
		"[2001:db8:1:2::9]:8080":   "2001:db8:1:2::/64",
		"fe80::1%eth0":             "fe80::/64",
		"":                         "",
		"unix-socket":              "unix-socket",
		strings.Repeat("x", 101):   "sha256:",
		"bad\xffutf8":              "sha256:",
		"nul\x00inside":            "sha256:",
		"2001:db8::1:2:3:4:5:6:77": "2001:db8::1:2:3:4:5:6:77", // not an address: as given
	} {
		got := addressKey(in)
		if want == "sha256:" {
			require.True(t, strings.HasPrefix(got, want), "%q: %q", in, got)
			require.Len(t, got, len("sha256:")+64)
			continue
		}
		require.Equal(t, want, got, "%q", in)
	}
}
