package prefilter

import (
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// of returns the filter of pattern.
func of(t testing.TB, pattern string) Filter {
	t.Helper()
	tree, err := syntax.Parse(pattern, syntax.Perl)
	require.NoError(t, err)
	return Of(tree)
}

func TestOf(t *testing.T) {
	t.Parallel()
	digitPairs := func(suffix string) []string {
		var out []string
		for i := range 100 {
			out = append(out, string(rune('0'+i/10))+string(rune('0'+i%10))+suffix)
		}
		return out
	}
	tests := []struct {
		pattern  string
		lits     []string // nil: no prefilter
		windowed bool
		maxLen   int
	}{
		{`\bCUST-\d{6}\b`, []string{"CUST-"}, true, 11},
		{`(?i)\bproj-[a-z]{3}-\d{4}\b`, []string{"PROJ-"}, true, 19},     // (?i)[a-z] holds the Kelvin sign, 3 bytes
		{`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`, nil, true, 0}, // "@" followed by a class: checked below
		{`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`, digitPairs(""), true, 34},
		{`\b\d{3}-\d{2}-\d{4}\b`, digitPairs("-"), true, 11},
		{`\b(?:\d[ -]?){13,16}\b`, strings.Split("0 1 2 3 4 5 6 7 8 9", " "), true, 32},
		{`\b(?:EMP|ACC)-\d{5}\b`, []string{"ACC-", "EMP-"}, true, 9},
		{`(?m)^id-\d+$`, strings.Split("ID-0 ID-1 ID-2 ID-3 ID-4 ID-5 ID-6 ID-7 ID-8 ID-9", " "), false, 0},
		{`secret|password`, []string{"PASSWORD", "SECRET"}, true, 8},
		{`é\pL{0,3}`, []string{"É"}, true, 14},
		{`(a+)+$`, nil, false, 0},
		{`x*`, nil, false, 0},
		{`.*`, nil, false, 0},
		{`\w+`, nil, false, 0},
		{`(?i)e`, nil, false, 0}, // too frequent to help
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			f := of(t, tt.pattern)
			if strings.Contains(tt.pattern, "@") {
				require.NotNil(t, f.Literals)
				for _, l := range f.Literals {
					require.True(t, strings.HasPrefix(l, "@"), l)
				}
			} else {
				require.Equal(t, tt.lits, f.Literals)
			}
			require.Equal(t, tt.windowed, f.Windowed)
			require.Equal(t, tt.maxLen, f.MaxLen)
		})
	}
	t.Run("anchored pattern is prefiltered, not windowed", func(t *testing.T) {
		t.Parallel()
		f := of(t, `^\d+ CUST`)
		require.NotNil(t, f.Literals)
		require.False(t, f.Windowed)
	})
}
