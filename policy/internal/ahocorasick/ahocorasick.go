// Package ahocorasick is the automaton package policy finds StringMatch
// terms and the literals of its Regex prefilter with: every occurrence of
// every pattern in one pass over a text, whatever the number of patterns,
// instead of a search per pattern. Patterns and text are compared rune by
// rune, optionally case-folded (package policy/internal/fold). FuzzScan
// holds it to a plain search.
package ahocorasick

import (
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/aiusage/kit/policy/internal/fold"
)

// DefaultDenseEntries bounds the dense transition table of an automaton (4
// bytes each, so at most 512 KiB): rows go to the states closest to the root,
// where a scan spends most of its time. On the benchmark's 5,000 terms
// (about 16,000 states of 50 byte classes), a table for every state (4 MiB)
// scans about 20% faster.
const DefaultDenseEntries = 1 << 17

// Automaton is an Aho-Corasick automaton over the UTF-8 bytes of runes: it
// finds every occurrence of every pattern in one pass over a text, whatever
// the number of patterns. The text is decoded rune by rune (an invalid byte is
// U+FFFD, as in a range loop), folded by [fold.Rune] when fold is set, and fed
// to the automaton re-encoded; patterns are stored the same way, so a pattern
// occurrence always starts and ends on a rune of the original text.
//
// States are numbered breadth first. The first ndense states have a dense
// row of complete transitions (a DFA row, over byte classes); the others keep
// their trie edges, sorted, and fall back along failure links until they
// reach a dense state.
type Automaton struct {
	fold bool
	cls  [256]uint16 // byte class; ASCII bytes are folded first when fold is set
	ncls int
	// dense holds the rows of states 0..ndense-1, dense[s*ncls : (s+1)*ncls],
	// each entry the next state encoded by encode, complemented (^) when that
	// state reports a pattern.
	dense      []int32
	ndense     int32
	sparseBase int32 // ndense * ncls

	edgeOff  []uint32 // trie edges of state s: edgeOff[s]..edgeOff[s+1]
	edgeByte []byte
	edgeNext []int32
	fail     []int32 // longest proper suffix state
	out      []int32 // pattern ending exactly at the state, or -1
	report   []int32 // first state on the suffix chain (the state included) with out >= 0, or -1
	dict     []int32 // next state after this one on the suffix chain with out >= 0, or -1

	runes    []int32 // length of each pattern in runes
	ringMask int     // ring buffer size - 1, at least the longest pattern in runes
}

// Builder collects distinct patterns for an [Automaton].
type Builder struct {
	fold  bool
	index map[string]int32 // folded pattern -> pattern id
	keys  []string
	runes []int32
}

// NewBuilder returns a Builder of an automaton that folds case (fold) or
// not.
func NewBuilder(fold bool) *Builder {
	return &Builder{fold: fold, index: map[string]int32{}}
}

// Add registers pattern p (folded when the builder folds) and returns its id;
// adding an equal pattern again returns the same id. The empty pattern is
// rejected with -1.
func (b *Builder) Add(p string) int32 {
	if p == "" {
		return -1
	}
	k := fold.String(p, b.fold)
	if id, ok := b.index[k]; ok {
		return id
	}
	id := int32(len(b.keys))
	b.index[k] = id
	b.keys = append(b.keys, k)
	b.runes = append(b.runes, int32(utf8.RuneCountInString(k)))
	return id
}

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

// Build returns the automaton of the patterns added, with a dense table of
// at most denseEntries entries (but at least the root's row; 0 means
// DefaultDenseEntries); nil when there are no patterns.
func (b *Builder) Build(denseEntries int) *Automaton {
	if denseEntries <= 0 {
		denseEntries = DefaultDenseEntries
	}
	if len(b.keys) == 0 {
		return nil
	}
	nodes, used := b.trie()
	a := newAutomaton(b, nodes)
	byteClass := a.classes(used)
	a.ndense = int32(min(len(nodes), max(1, denseEntries/a.ncls)))
	a.dense = make([]int32, int(a.ndense)*a.ncls)
	a.link(byteClass)
	a.encodeDense()
	return a
}

// trie returns the trie of the patterns, in insertion order, and the bytes
// they use.
func (b *Builder) trie() ([]trieNode, *[256]bool) {
	nodes := []trieNode{{out: -1}}
	var used [256]bool
	for id, k := range b.keys {
		s := int32(0)
		for i := 0; i < len(k); i++ {
			used[k[i]] = true
			t := nodes[s].child(k[i])
			if t < 0 {
				t = int32(len(nodes))
				nodes = append(nodes, trieNode{out: -1})
				nodes[s].edges = append(nodes[s].edges, trieEdge{k[i], t})
			}
			s = t
		}
		nodes[s].out = int32(id)
	}
	return nodes, &used
}

// newAutomaton returns the automaton of the trie nodes, its states numbered
// breadth first with their edges sorted by byte; the links and the dense
// table are still to be made.
func newAutomaton(b *Builder, nodes []trieNode) *Automaton {
	n := len(nodes)
	order := make([]int32, 0, n) // new -> old
	renum := make([]int32, n)    // old -> new
	order = append(order, 0)
	for i := 0; i < len(order); i++ {
		nd := &nodes[order[i]]
		slices.SortFunc(nd.edges, func(x, y trieEdge) int { return int(x.c) - int(y.c) })
		for _, e := range nd.edges {
			renum[e.next] = int32(len(order))
			order = append(order, e.next)
		}
	}
	a := &Automaton{
		fold:     b.fold,
		edgeOff:  make([]uint32, n+1),
		fail:     make([]int32, n),
		out:      make([]int32, n),
		report:   make([]int32, n),
		dict:     make([]int32, n),
		runes:    b.runes,
		ringMask: 1<<bits.Len(uint(slices.Max(b.runes))) - 1,
		edgeByte: make([]byte, 0, n-1),
		edgeNext: make([]int32, 0, n-1),
	}
	for s, old := range order {
		a.edgeOff[s] = uint32(len(a.edgeByte))
		for _, e := range nodes[old].edges {
			a.edgeByte = append(a.edgeByte, e.c)
			a.edgeNext = append(a.edgeNext, renum[e.next])
		}
		a.out[s] = nodes[old].out
	}
	a.edgeOff[n] = uint32(len(a.edgeByte))
	return a
}

// classes sets the byte classes of a, one per byte used in a pattern and
// class 0 for the others, ASCII bytes folded first when a folds, and
// returns the class of each byte as a pattern holds it.
func (a *Automaton) classes(used *[256]bool) *[256]uint16 {
	var byteClass [256]uint16
	for c := range 256 {
		if used[c] {
			a.ncls++
			byteClass[c] = uint16(a.ncls)
		}
	}
	a.ncls++
	for c := range 256 {
		a.cls[c] = byteClass[c]
		if a.fold && c < utf8.RuneSelf {
			a.cls[c] = byteClass[fold.ASCII(byte(c))]
		}
	}
	return &byteClass
}

// link sets the failure links, dictionary links and dense rows, breadth
// first: a state's failure state comes before it.
func (a *Automaton) link(byteClass *[256]uint16) {
	a.fail[0], a.report[0], a.dict[0] = 0, -1, -1
	for s := range int32(len(a.out)) {
		if s > 0 {
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
		}
		if s < a.ndense {
			// The failure state's row, with this state's own edges.
			row := a.dense[int(s)*a.ncls : int(s+1)*a.ncls]
			if s > 0 {
				f := int(a.fail[s])
				copy(row, a.dense[f*a.ncls:(f+1)*a.ncls])
			}
			for k := a.edgeOff[s]; k < a.edgeOff[s+1]; k++ {
				row[byteClass[a.edgeByte[k]]] = a.edgeNext[k]
			}
		}
		for k := a.edgeOff[s]; k < a.edgeOff[s+1]; k++ {
			if s == 0 {
				a.fail[a.edgeNext[k]] = 0
			} else {
				a.fail[a.edgeNext[k]] = a.next(a.fail[s], a.edgeByte[k])
			}
		}
	}
}

// encodeDense encodes the dense rows for Scan: a state as its position (see
// encode), complemented when it reports, so that Scan needs no
// multiplication and no second lookup per byte.
func (a *Automaton) encodeDense() {
	a.sparseBase = a.ndense * int32(a.ncls)
	for i, t := range a.dense {
		if e := a.encode(t); a.report[t] >= 0 {
			a.dense[i] = ^e
		} else {
			a.dense[i] = e
		}
	}
}

// encode returns the position of state s as scan tracks it: the offset of
// its row in dense for a dense state, sparseBase + s - ndense for the others.
func (a *Automaton) encode(s int32) int32 {
	if s < a.ndense {
		return s * int32(a.ncls)
	}
	return a.sparseBase + s - a.ndense
}

// decode is the inverse of encode.
func (a *Automaton) decode(pos int32) int32 {
	if pos < a.sparseBase {
		return pos / int32(a.ncls)
	}
	return pos - a.sparseBase + a.ndense
}

// edge returns the trie edge of state s for byte c, or -1.
func (a *Automaton) edge(s int32, c byte) int32 {
	lo, hi := a.edgeOff[s], a.edgeOff[s+1]
	if hi-lo <= 8 {
		for k := lo; k < hi; k++ {
			if a.edgeByte[k] == c {
				return a.edgeNext[k]
			}
		}
		return -1
	}
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
	return -1
}

// next returns the state after reading byte c (already folded) in state s.
func (a *Automaton) next(s int32, c byte) int32 {
	for s >= a.ndense {
		if t := a.edge(s, c); t >= 0 {
			return t
		}
		s = a.fail[s]
	}
	t := a.dense[int(s)*a.ncls+int(a.cls[c])]
	if a.sparseBase == 0 {
		return t // while building: plain states
	}
	if t < 0 {
		t = ^t
	}
	return a.decode(t)
}

// RingLen is the length of the scratch space [Automaton.Scan] needs.
func (a *Automaton) RingLen() int { return a.ringMask + 1 }

// Scan finds every occurrence of every pattern in s and calls emit with the
// pattern's id (as returned by [Builder.Add]) and the occurrence's byte span
// in s, in order of end offset. ring is scratch space of at least RingLen
// entries.
func (a *Automaton) Scan(s string, ring []int32, emit func(id int32, start, end int)) {
	ring = ring[:a.ringMask+1]
	mask := a.ringMask
	dense, cls := a.dense, &a.cls
	sparseBase := uint32(a.sparseBase)
	pos := int32(0) // the current state, encoded
	ri := 0         // runes read
	for i := 0; i < len(s); {
		ring[ri&mask] = int32(i)
		ri++
		if c := s[i]; c < utf8.RuneSelf && uint32(pos) < sparseBase {
			// ASCII from a dense state: cls folds it.
			i++
			t := dense[int(pos)+int(cls[c])]
			if uint32(t) < sparseBase {
				pos = t // a dense state reporting nothing
				continue
			}
			if t >= 0 {
				pos = t // a sparse state reporting nothing
				continue
			}
			pos = ^t
		} else {
			var reports bool
			pos, i, reports = a.slowStep(s, i, pos)
			if !reports {
				continue
			}
		}
		a.emitAll(pos, ring, ri, i, emit)
	}
}

// slowStep reads the rune at byte offset i of s from the state encoded as
// pos: a non-ASCII rune, or any rune from a sparse state. It returns the new
// state, encoded, the new offset, and whether the state reports a pattern.
func (a *Automaton) slowStep(s string, i int, pos int32) (int32, int, bool) {
	state := a.decode(pos)
	if c := s[i]; c < utf8.RuneSelf {
		if a.fold {
			c = fold.ASCII(c)
		}
		state = a.next(state, c)
		i++
	} else {
		r, w := utf8.DecodeRuneInString(s[i:])
		if a.fold {
			r = fold.Rune(r)
		}
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		for _, c := range buf[:n] {
			state = a.next(state, c)
		}
		i += w
	}
	return a.encode(state), i, a.report[state] >= 0
}

// emitAll reports the patterns ending at byte offset end, after ri runes, in
// the state encoded as pos.
func (a *Automaton) emitAll(pos int32, ring []int32, ri, end int, emit func(id int32, start, end int)) {
	for t := a.report[a.decode(pos)]; t >= 0; t = a.dict[t] {
		id := a.out[t]
		emit(id, int(ring[(ri-int(a.runes[id]))&a.ringMask]), end)
	}
}
