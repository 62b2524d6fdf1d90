package fold

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRune(t *testing.T) {
	t.Parallel()
	for _, group := range []string{"aA", "kK\u212A", "sSſ", "ßẞ", "σςΣ", "Ǆǅǆ", "1", "東", "\ufffd"} {
		rs := []rune(group)
		for _, r := range rs {
			require.Equal(t, Rune(rs[0]), Rune(r), "%q", group)
			require.Equal(t, Rune(r), Rune(Rune(r)))
		}
	}
	require.NotEqual(t, Rune('a'), Rune('b'))
	require.NotEqual(t, Rune('ß'), Rune('s'))
}
