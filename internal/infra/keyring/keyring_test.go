package keyring_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/infra/keyring"
)

var place = keyring.Binding{Table: "reviewapi_webhooks", Column: "secret", Row: "0b7e4a4c-5f0e-4d3e-9a51-2f6c1d2b3a4e"}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	ring, err := keyring.New(keyring.NewKey())
	require.NoError(t, err)
	for _, plain := range []string{"whsec_abc", "", strings.Repeat("x", 10000), "é\x00\xff"} {
		id, sealed, err := ring.Seal(plain, place)
		require.NoError(t, err)
		require.Equal(t, ring.Current(), id)
		if plain != "" {
			require.NotContains(t, sealed, plain)
		}
		got, err := ring.Open(id, sealed, place)
		require.NoError(t, err)
		require.Equal(t, plain, got)
	}
	// Two seals of one value differ (random nonce).
	_, a, _ := ring.Seal("same", place)
	_, b, _ := ring.Seal("same", place)
	require.NotEqual(t, a, b)
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	ring, err := keyring.New(keyring.NewKey())
	require.NoError(t, err)
	other, err := keyring.New(keyring.Key{ID: ring.Current(), Secret: keyring.NewKey().Secret})
	require.NoError(t, err)
	id, sealed, err := ring.Seal("whsec_abc", place)
	require.NoError(t, err)

	moved := place
	moved.Row = "another-row"
	column := place
	column.Column = "token"
	// Flip one bit of the sealed bytes (the tag's), not of the text: a
	// character-level flip could leave the text unchanged or not base64.
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1."))
	require.NoError(t, err)
	raw[len(raw)-1] ^= 1
	flipped := "v1." + base64.RawURLEncoding.EncodeToString(raw)
	require.NotEqual(t, sealed, flipped)
	for name, c := range map[string]struct {
		ring         *keyring.Keyring
		id, sealed   string
		b            keyring.Binding
		want         error
		wantInDetail string
	}{
		"another row":      {ring, id, sealed, moved, keyring.ErrAuth, "another-row"},
		"another column":   {ring, id, sealed, column, keyring.ErrAuth, "token"},
		"wrong key":        {other, id, sealed, place, keyring.ErrAuth, id},
		"unknown key id":   {ring, "nope", sealed, place, keyring.ErrUnknownKey, `"nope"`},
		"corrupted":        {ring, id, flipped, place, keyring.ErrAuth, ""},
		"plaintext":        {ring, id, "whsec_abc", place, keyring.ErrMalformed, ""},
		"empty":            {ring, id, "", place, keyring.ErrMalformed, ""},
		"truncated":        {ring, id, sealed[:10], place, keyring.ErrMalformed, ""},
		"not base64":       {ring, id, "v1.!!!!", place, keyring.ErrMalformed, ""},
		"too long":         {ring, id, "v1." + strings.Repeat("A", keyring.MaxSealedLength), place, keyring.ErrMalformed, ""},
		"key id of other":  {ring, "k000000000000", sealed, place, keyring.ErrUnknownKey, ""},
		"binding in error": {ring, id, sealed, moved, keyring.ErrAuth, "reviewapi_webhooks.secret"},
	} {
		got, err := c.ring.Open(c.id, c.sealed, c.b)
		require.ErrorIs(t, err, c.want, name)
		require.Empty(t, got, name)
		require.NotContains(t, err.Error(), "whsec_abc", name)
		require.Contains(t, err.Error(), c.wantInDetail, name)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k1, k2 := keyring.NewKey(), keyring.NewKey()
	std := base64.StdEncoding.EncodeToString(k1.Secret[:])
	url := base64.RawURLEncoding.EncodeToString(k2.Secret[:])

	ring, err := keyring.ParseKeys(std)
	require.NoError(t, err)
	require.Equal(t, keyring.FingerprintID(k1.Secret), ring.Current())

	ring, err = keyring.ParseKeys("# comment\nnew:" + url + ",\n old:" + std + "\n")
	require.NoError(t, err)
	require.Equal(t, "new", ring.Current())
	require.True(t, ring.Has("old"))
	require.Len(t, ring.Keys(), 2)

	// What one seals with old, a keyring holding old opens.
	oldOnly, err := keyring.ParseKeys("old:" + std)
	require.NoError(t, err)
	id, sealed, err := oldOnly.Seal("s", place)
	require.NoError(t, err)
	got, err := ring.Open(id, sealed, place)
	require.NoError(t, err)
	require.Equal(t, "s", got)

	for in, want := range map[string]string{
		"":                 "no key",
		"# only a comment": "no key",
		"a*c":              "not base64",
		base64.StdEncoding.EncodeToString([]byte("short")): "5 bytes, want 32",
		"bad!id:" + std:          "only letters",
		"a:" + std + " a:" + url: "given twice",
		":" + std:                "want 1 to",
	} {
		_, err := keyring.ParseKeys(in)
		require.ErrorContains(t, err, want, "%q", in)
		require.NotContains(t, err.Error(), std)
	}
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "db.key")
	ring, created, err := keyring.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.True(t, created)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again, created, err := keyring.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, ring.Keys(), again.Keys())

	// Rotation: a new key first, the old one kept.
	k := keyring.NewKey()
	require.NoError(t, keyring.WriteKeyFile(path, append([]keyring.Key{k}, ring.Keys()...), true))
	rotated, err := keyring.ReadKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, k.ID, rotated.Current())
	require.True(t, rotated.Has(ring.Current()))
	require.ErrorIs(t, keyring.WriteKeyFile(path, []keyring.Key{k}, false), os.ErrExist)

	// A file others can read is refused, naming the fix.
	require.NoError(t, os.Chmod(path, 0o644))
	_, err = keyring.ReadKeyFile(path)
	require.ErrorContains(t, err, "chmod 600")
	_, _, err = keyring.LoadOrCreateKeyFile(path)
	require.ErrorContains(t, err, "mode 0644")

	_, err = keyring.ReadKeyFile(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestKeyFileRace: processes starting at once on a new database agree on
// one key.
func TestKeyFileRace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "db.key")
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			ring, _, err := keyring.LoadOrCreateKeyFile(path)
			if err == nil {
				ids[i] = ring.Current()
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
		require.NotEmpty(t, id)
	}
}

// FuzzOpen: no input of Open panics, and none opens but what was sealed.
func FuzzOpen(f *testing.F) {
	ring, err := keyring.New(keyring.Key{ID: "fuzz", Secret: [32]byte{1, 2, 3}})
	require.NoError(f, err)
	_, sealed, err := ring.Seal("whsec_seed", place)
	require.NoError(f, err)
	for _, s := range []string{sealed, "", "v1.", "v1.AAAA", "v1." + strings.Repeat("A", 40), "v2." + sealed[3:], sealed + "=", sealed[:len(sealed)-1], "whsec_plain"} {
		f.Add("fuzz", s, place.Row)
	}
	f.Add("other", sealed, place.Row)
	f.Fuzz(func(t *testing.T, id, s, row string) {
		b := place
		b.Row = row
		got, err := ring.Open(id, s, b)
		if err != nil {
			require.Empty(t, got)
			return
		}
		// Only the seeded value opens: forging another is breaking GCM.
		require.Equal(t, "whsec_seed", got)
		require.Equal(t, place.Row, row)
	})
}

// FuzzParseKeys: no key text panics the parser.
func FuzzParseKeys(f *testing.F) {
	k := keyring.NewKey()
	for _, s := range []string{k.String(), "a:" + k.String()[len(k.ID)+1:], "#\n", ",,, ", "x:y:z", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ring, err := keyring.ParseKeys(s)
		if err == nil {
			require.NotEmpty(t, ring.Current())
		}
	})
}
