package dashboard

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/review":              "/review",
		"/settings/api-keys?x": "/settings/api-keys?x",
		"":                     "/",
		"review":               "/",
		"//evil.test":          "/",
		"/\\evil.test":         "/",
		"https://evil.test/":   "/",
		"/a\r\nSet-Cookie: x":  "/",
		"javascript:alert(1)":  "/",
	} {
		t.Run(in, func(t *testing.T) {
			if got := safeNext(in); got != want {
				t.Fatalf("safeNext(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

// FuzzSafeNext: whatever next a sign-in form carries, the redirect stays on
// this site.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/review", "//x", "/\\x", "http://x", "/%2F%2Fx", "/\t/x", " /x", "/x#//y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") || strings.ContainsAny(got, "\r\n") {
			t.Fatalf("safeNext(%q) = %q", next, got)
		}
		// What a browser resolves it to is this site.
		base, _ := url.Parse("https://site.test/signin")
		ref, err := url.Parse(got)
		if err != nil {
			t.Fatalf("safeNext(%q) = %q, which does not parse: %v", next, got, err)
		}
		if u := base.ResolveReference(ref); u.Host != "site.test" || u.Scheme != "https" {
			t.Fatalf("safeNext(%q) = %q resolves to %s", next, got, u)
		}
	})
}

func TestMark(t *testing.T) {
	for _, c := range []struct {
		name  string
		text  string
		spans [][2]int
		want  string // marked parts in [brackets]
	}{
		{"none", "abc", nil, "abc"},
		{"middle", "abcdef", [][2]int{{2, 4}}, "ab[cd]ef"},
		{"overlapping", "abcdef", [][2]int{{1, 3}, {2, 5}}, "a[bcde]f"},
		{"whole", "abc", [][2]int{{0, 3}}, "[abc]"},
		{"out of range clipped", "abc", [][2]int{{-2, 1}, {2, 99}}, "[a]b[c]"},
		{"code points", "héllo wörld", [][2]int{{6, 11}}, "héllo [wörld]"},
		{"empty text", "", [][2]int{{0, 2}}, ""},
		{"reversed span ignored", "abc", [][2]int{{2, 1}}, "abc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			for _, s := range mark([]rune(c.text), c.spans) {
				if s.Marked {
					b.WriteString("[" + s.Text + "]")
				} else {
					b.WriteString(s.Text)
				}
			}
			if b.String() != c.want {
				t.Fatalf("got %q, want %q", b.String(), c.want)
			}
		})
	}
}

// TestShellQuote: what the page says to paste into a shell is one word
// each, whatever the request's host held.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"https://aiusage.example.com:8443": "https://aiusage.example.com:8443",
		"Authorization=Bearer aiu_x":       `"Authorization=Bearer aiu_x"`,
		"http://a$(id)":                    `'http://a$(id)'`,
		"http://a'b`c":                     `'http://a'\''b` + "`c'",
		"":                                 `""`,
	} {
		require.Equal(t, want, shellQuote(in), in)
	}
}
