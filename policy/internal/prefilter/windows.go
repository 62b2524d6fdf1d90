package prefilter

import (
	"slices"
	"unicode/utf8"
)

// Windows returns, sorted and disjoint, the byte ranges of s outside which no
// match lies, given the occurrences of the required literals in order of end
// offset (as the automaton reports them).
//
// A match containing occurrence [p, q) starts at or after q-maxLen and after
// the run of allowed bytes ending at p, and ends at or before p+maxLen and
// before the run of allowed bytes starting at q. Occurrences are grouped into
// clusters, each covered by one range from the smallest such start to the
// largest such end of its members; the runs are walked once per cluster.
func (f *Filter) Windows(s string, occ [][2]int32, out [][2]int) [][2]int {
	bounded := f.MaxLen > 0
	var minP, minQ, maxP, hi int
	open := false
	closeCluster := func() {
		lo, bound := minP, 0
		if bounded {
			bound = max(0, minQ-f.MaxLen)
		}
		for lo > bound && f.Allowed[s[lo-1]] {
			lo--
		}
		out = append(out, [2]int{lo, hi})
	}
	for _, o := range occ {
		p, q := int(o[0]), int(o[1])
		if open && p <= hi {
			minP, maxP = min(minP, p), max(maxP, p)
		} else {
			if open {
				closeCluster()
			}
			open, minP, minQ, maxP, hi = true, p, q, p, q
		}
		// Bytes from the cluster's first q up to hi are allowed: extend.
		bound := len(s)
		if bounded {
			bound = min(len(s), maxP+f.MaxLen)
		}
		for hi = max(hi, q); hi < bound && f.Allowed[s[hi]]; hi++ {
		}
	}
	if open {
		closeCluster()
	}
	if !slices.IsSortedFunc(out, func(a, b [2]int) int { return a[0] - b[0] }) {
		slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	}
	// Widen each to ASCII non-word neighbours, then merge.
	merged := out[:0]
	for _, w := range out {
		for w[0] > 0 && !safeEdge(s[w[0]-1]) {
			w[0]--
		}
		for w[1] < len(s) && !safeEdge(s[w[1]]) {
			w[1]++
		}
		// Windows closer than windowGap are merged: no match starts between
		// them, and one regexp call costs about as much as that many bytes.
		if n := len(merged); n > 0 && w[0] <= merged[n-1][1]+windowGap {
			merged[n-1][1] = max(merged[n-1][1], w[1])
			continue
		}
		merged = append(merged, w)
	}
	return merged
}

// safeEdge reports whether a window may end next to byte c: an ASCII byte that
// is not a word character for \b.
func safeEdge(c byte) bool {
	return c < utf8.RuneSelf && !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}
