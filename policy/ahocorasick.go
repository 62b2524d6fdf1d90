package policy

import (
	"math/bits"
	"slices"
	"unicode/utf8"
)

// automaton is an Aho-Corasick automaton over the UTF-8 bytes of runes: it
// finds every occurrence of every pattern in one pass over a text, whatever
// the number of patterns. The text is decoded rune by rune (an invalid byte is
// U+FFFD, as in a range loop), folded by [foldRune] when fold is set, and fed
// to the automaton re-encoded; patterns are stored the same way, so a pattern
// occurrence always starts and ends on a rune of the original text.
//
// Transitions out of the root are a dense table; deeper states keep their
// edges sorted in one flat array and fall back along failure links.
type automaton struct {
	fold bool
	root [256]int32 // next state from the root for each byte (0: stay)

	edgeOff  []uint32 // edges of state s: edgeOff[s]..edgeOff[s+1]
	edgeByte []byte
	edgeNext []int32
	fail     []int32 // longest proper suffix state
	out      []int32 // pattern ending exactly at the state, or -1
	report   []int32 // first state on the suffix chain (the state included) with out >= 0, or -1
	dict     []int32 // next state after this one on the suffix chain with out >= 0, or -1

	patterns []acPattern
	ringMask int // ring buffer size - 1, at least the longest pattern in runes
}

// acPattern is one distinct pattern string of an automaton.
type acPattern struct {
	runes int32 // length in runes
}

// acBuilder collects distinct patterns for an automaton.
type acBuilder struct {
	fold  bool
	index map[string]int32 // folded pattern -> pattern id
	keys  []string
	runes []int32
}

func newACBuilder(fold bool) *acBuilder {
	return &acBuilder{fold: fold, index: map[string]int32{}}
}

// add registers pattern p (folded when the builder folds) and returns its id;
// adding an equal pattern again returns the same id. The empty pattern is
// rejected with -1.
func (b *acBuilder) add(p string) int32 {
	if p == "" {
		return -1
	}
	k := foldString(p, b.fold)
	if id, ok := b.index[k]; ok {
		return id
	}
	id := int32(len(b.keys))
	b.index[k] = id
	b.keys = append(b.keys, k)
	b.runes = append(b.runes, int32(utf8.RuneCountInString(k)))
	return id
}

func (b *acBuilder) len() int { return len(b.keys) }

// trieNode is a state while building.
type trieNode struct {
	edges []trieEdge
	out   int32
}

type trieEdge struct {
	c    byte
	next int32
}

func (n *trieNode) child(c byte) int32 {
	for _, e := range n.edges {
		if e.c == c {
			return e.next
		}
	}
	return -1
}

// build returns the automaton of the patterns added; nil when there are none.
func (b *acBuilder) build() *automaton {
	if len(b.keys) == 0 {
		return nil
	}
	nodes := []trieNode{{out: -1}}
	maxRunes := int32(1)
	for id, k := range b.keys {
		s := int32(0)
		for i := 0; i < len(k); i++ {
			t := nodes[s].child(k[i])
			if t < 0 {
				t = int32(len(nodes))
				nodes = append(nodes, trieNode{out: -1})
				nodes[s].edges = append(nodes[s].edges, trieEdge{k[i], t})
			}
			s = t
		}
		nodes[s].out = int32(id)
		maxRunes = max(maxRunes, b.runes[id])
	}
	n := len(nodes)
	a := &automaton{
		fold:     b.fold,
		edgeOff:  make([]uint32, n+1),
		fail:     make([]int32, n),
		out:      make([]int32, n),
		report:   make([]int32, n),
		dict:     make([]int32, n),
		patterns: make([]acPattern, len(b.keys)),
		ringMask: 1<<bits.Len(uint(maxRunes)) - 1,
	}
	for id := range b.keys {
		a.patterns[id] = acPattern{runes: b.runes[id]}
	}
	// Flatten the edges, sorted by byte.
	total := 0
	for i := range nodes {
		slices.SortFunc(nodes[i].edges, func(x, y trieEdge) int { return int(x.c) - int(y.c) })
		total += len(nodes[i].edges)
	}
	a.edgeByte = make([]byte, 0, total)
	a.edgeNext = make([]int32, 0, total)
	for i := range nodes {
		a.edgeOff[i] = uint32(len(a.edgeByte))
		for _, e := range nodes[i].edges {
			a.edgeByte = append(a.edgeByte, e.c)
			a.edgeNext = append(a.edgeNext, e.next)
		}
		a.out[i] = nodes[i].out
	}
	a.edgeOff[n] = uint32(len(a.edgeByte))
	for _, e := range nodes[0].edges {
		a.root[e.c] = e.next
	}
	// Failure links, breadth first.
	a.fail[0], a.report[0], a.dict[0] = 0, -1, -1
	queue := make([]int32, 0, n)
	for _, e := range nodes[0].edges {
		a.fail[e.next] = 0
		queue = append(queue, e.next)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := a.fail[s]
		if a.out[f] >= 0 {
			a.dict[s] = f
		} else {
			a.dict[s] = a.dict[f]
		}
		if a.out[s] >= 0 {
			a.report[s] = s
		} else {
			a.report[s] = a.dict[s]
		}
		for _, e := range nodes[s].edges {
			a.fail[e.next] = a.step(a.fail[s], e.c)
			queue = append(queue, e.next)
		}
	}
	return a
}

// step returns the state after reading byte c in state s.
func (a *automaton) step(s int32, c byte) int32 {
	for s != 0 {
		lo, hi := a.edgeOff[s], a.edgeOff[s+1]
		if hi-lo <= 8 {
			for k := lo; k < hi; k++ {
				if a.edgeByte[k] == c {
					return a.edgeNext[k]
				}
			}
		} else {
			for lo < hi {
				m := lo + (hi-lo)/2
				switch b := a.edgeByte[m]; {
				case b == c:
					return a.edgeNext[m]
				case b < c:
					lo = m + 1
				default:
					hi = m
				}
			}
		}
		s = a.fail[s]
	}
	return a.root[c]
}

// scan finds every occurrence of every pattern in s and calls emit with the
// pattern's id (as returned by acBuilder.add) and the occurrence's byte span
// in s, in order of end offset. ring is scratch space of at least ringMask+1
// entries.
func (a *automaton) scan(s string, ring []int32, emit func(id int32, start, end int)) {
	ring = ring[:a.ringMask+1]
	mask := a.ringMask
	state := int32(0)
	ri := 0 // runes read
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		ring[ri&mask] = int32(i)
		ri++
		if c := s[i]; c < utf8.RuneSelf {
			if a.fold {
				c = asciiFold[c]
			}
			state = a.step(state, c)
			i++
		} else {
			r, w := utf8.DecodeRuneInString(s[i:])
			if a.fold {
				r = foldRune(r)
			}
			n := utf8.EncodeRune(buf[:], r)
			for _, c := range buf[:n] {
				state = a.step(state, c)
			}
			i += w
		}
		for t := a.report[state]; t >= 0; t = a.dict[t] {
			id := a.out[t]
			emit(id, int(ring[(ri-int(a.patterns[id].runes))&mask]), i)
		}
	}
}
