package demodata

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/aiusage/kit/spec"
)

const (
	msSecond = int64(1000)
	msMinute = 60 * msSecond
	msHour   = 60 * msMinute
	msDay    = 24 * msHour
)

// Random streams: every part of the dataset draws from its own generator, so
// that changing one part never shifts another.
const (
	streamOrg = iota + 1
	streamTies
	streamEvents
	streamAssistant  = 1 << 32 // + assistant index
	streamConvBase   = 2 << 32 // + conversation index
	streamUserSalt   = 0x75736572
	streamConvSalt   = 0x636f6e76
	streamThreadSalt = 0x74687264
	streamEventSalt  = 0x65766e74
)

// asstPlan is an assistant and what the conversations tell about it.
type asstPlan struct {
	a        spec.Assistant
	ref      *spec.AssistantRef
	prof     *profile
	dept     int
	owner    int32 // -1: none
	created  int64
	editAt   int64
	archived bool
	archAt   int64 // when archived; conversations end before it
	model    int
	userSeen map[int32]struct{}
	convs    int64
	lastUsed int64
}

// convPlan is what outlives the first pass over a conversation: enough to
// roll up assistants, place ties and deletions, and rebuild the rest.
type convPlan struct {
	start   int64
	updated int64
	deleted int64 // 0: not deleted
	user    int32
	asst    int32 // -1: none
	tie     bool  // updatedAt shared with other conversations
	sweep   bool  // deleted by the retention sweep
}

type generator struct {
	cfg        Config
	seed       uint64
	start, end int64 // the window [start, end) in unix milliseconds
	domain     string
	depts      []string
	deptSlugs  []string
	deptUsers  [][]int32
	users      []User
	userDept   []int
	userRefs   []*spec.User
	userPower  []float64 // cumulative activity weights
	asst       []asstPlan
	candidates [][]int32 // per department: assistants its users use
	private    map[int32][]int32
	convs      []convPlan
	deletions  []Deletion
	sweeps     []int64
	replies    int // usage records in all
	sysHash    map[string]string
}

func newGenerator(cfg Config) (*generator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &generator{
		cfg:     cfg,
		seed:    cfg.Seed,
		end:     cfg.End.UnixMilli(),
		domain:  slug(cfg.Tenant) + ".example",
		private: map[int32][]int32{},
		sysHash: map[string]string{},
	}
	g.start = g.end - Span.Milliseconds()
	g.buildUsers()
	g.buildAssistants()
	g.planConversations()
	g.placeTies()
	g.placeDeletions()
	g.rollUpAssistants()
	return g, nil
}

func (g *generator) buildUsers() {
	r := newRand(g.seed, streamOrg)
	n := g.cfg.Users
	nd := min(len(deptDefs), max(n, 1))
	weights := make([]int, nd)
	for i := 0; i < nd; i++ {
		g.depts = append(g.depts, deptDefs[i].name)
		g.deptSlugs = append(g.deptSlugs, slug(deptDefs[i].name))
		weights[i] = deptDefs[i].weight
	}
	wsum := sumInts(weights)
	g.deptUsers = make([][]int32, nd)
	taken := map[string]int{}
	g.users = make([]User, n)
	g.userDept = make([]int, n)
	g.userRefs = make([]*spec.User, n)
	g.userPower = make([]float64, n)
	total := 0.0
	for i := 0; i < n; i++ {
		d := i // every department has someone
		if i >= nd {
			d = weighted(r, weights, wsum)
		}
		first, last := pick(r, firstNames), pick(r, lastNames)
		local := first + "." + last
		if k := taken[local]; k > 0 {
			taken[local] = k + 1
			local += strconv.Itoa(k + 1)
		} else {
			taken[local] = 1
		}
		def := deptDefs[d]
		team := pick(r, def.teams)
		groups := []string{g.deptSlugs[d], g.deptSlugs[d] + "-" + team, "all-" + pick(r, regions)}
		if r.IntN(100) < 12 {
			groups = append(groups, "managers")
		}
		if r.IntN(100) < 6 {
			groups = append(groups, "ai-champions")
		}
		u := User{
			ID:         hexID("u_", mix32(uint32(i)^uint32(mix64(g.seed+streamUserSalt)))),
			Name:       title(first) + " " + title(last),
			Email:      local + "@" + g.domain,
			Department: def.name,
			Groups:     groups,
		}
		g.users[i] = u
		g.userDept[i] = d
		g.userRefs[i] = u.Ref()
		g.deptUsers[d] = append(g.deptUsers[d], int32(i))
		// Activity follows a long tail: a few people use AI all day.
		x := r.Float64()
		total += x*x*x*20 + 0.2
		g.userPower[i] = total
	}
}

func title(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

var visibilityOrder = []string{spec.VisibilityTeam, spec.VisibilityOrganisation, spec.VisibilityPrivate, spec.VisibilityPublic}

func (g *generator) buildAssistants() {
	n := g.cfg.Assistants
	g.asst = make([]asstPlan, n)
	salt := uint32(mix64(g.seed + streamAssistant))
	for i := 0; i < n; i++ {
		r := newRand(g.seed, streamAssistant+uint64(i))
		p := &profiles[i%len(profiles)]
		ap := &g.asst[i]
		ap.prof = p
		name := p.name
		if k := i / len(profiles); k > 0 {
			name += " (" + qualifiers[(k-1)%len(qualifiers)]
			if k > len(qualifiers) {
				name += " " + strconv.Itoa((k-1)/len(qualifiers)+1)
			}
			name += ")"
		}
		id := hexID("asst_", mix32(uint32(i)^salt))
		ap.ref = &spec.AssistantRef{ID: id, Name: name}

		var owner int32 = -1
		ap.dept = -1
		for d, dn := range g.depts {
			if dn == p.dept && len(g.deptUsers[d]) > 0 {
				owner = pick(r, g.deptUsers[d])
			}
		}
		if owner < 0 && len(g.users) > 0 {
			owner = int32(r.IntN(len(g.users)))
		}
		ap.owner = owner
		if owner >= 0 {
			ap.dept = g.userDept[owner]
		}

		vis := visibilityOrder[i%len(visibilityOrder)]
		if i >= len(visibilityOrder) {
			vis = visibilityOrder[weighted(r, []int{45, 30, 15, 10}, 100)]
		}
		if r.IntN(100) < 75 {
			ap.created = g.start - between(r, msDay, 300*msDay)
		} else {
			ap.created = g.pickTime(r, g.start, g.end-7*msDay)
		}
		ap.editAt = between(r, max(ap.created, g.start), g.end-msHour)
		if i%8 == 5 || r.IntN(100) < 8 {
			ap.archived = true
			ap.archAt = g.pickTime(r, max(ap.created, g.start)+3*msDay, g.end-msDay)
		}
		ap.model = modelIndex(p.model)
		ap.userSeen = map[int32]struct{}{}

		a := spec.Assistant{
			ID:          id,
			Name:        name,
			Description: p.description,
			Status:      "active",
			CreatedAt:   msTime(ap.created),
			Visibility:  vis,
			Model:       p.model,
			Parameters:  &spec.Parameters{Temperature: ptr(p.temperature), MaxTokens: ptr(pick(r, []int64{2048, 4096, 8192}))},
		}
		if owner >= 0 {
			a.Owner = g.userRefs[owner]
		}
		if r.IntN(100) < 30 {
			a.Parameters.TopP = ptr(pick(r, []float64{0.9, 0.95, 1}))
		}
		if r.IntN(100) < 80 {
			a.Instructions = p.instructions
		} else {
			a.InstructionsHash = sha256Of(p.instructions)
		}
		for _, s := range p.skills {
			a.Skills = append(a.Skills, spec.Skill{ID: s.id, Name: s.name, Type: s.typ})
		}
		for j, c := range p.connectors {
			a.Connectors = append(a.Connectors, spec.Connector{
				ID:     hexID("conn_", mix32(uint32(i)<<4|uint32(j)^salt)),
				Type:   c.typ,
				Scopes: c.scopes,
			})
		}
		if r.IntN(100) < 25 && len(a.Connectors) < 3 {
			c := pick(r, allConnectors)
			a.Connectors = append(a.Connectors, spec.Connector{ID: hexID("conn_", mix32(uint32(i)<<4|15^salt)), Type: c.typ, Scopes: c.scopes})
		}
		for j, k := range p.knowledge {
			kid := hexID("kn_", mix32(uint32(i)<<4|uint32(j)^salt^0x6b6e))
			item := spec.KnowledgeItem{ID: kid, Name: k.name, Type: k.typ, MimeType: k.mime}
			switch k.typ {
			case "file":
				item.Hash = sha256Of(id, k.name)
				item.SizeBytes = between(r, 8<<10, 12<<20)
				item.URI = "https://files." + g.domain + "/knowledge/" + kid
			case "url":
				item.URI = "https://wiki." + g.domain + "/" + slug(k.name)
			default:
				item.URI = "snowflake://" + slug(g.cfg.Tenant) + "/analytics/" + slug(k.name)
			}
			a.Knowledge = append(a.Knowledge, item)
		}
		ap.a = a
	}

	g.assistantAccess()
}

// assistantAccess works out who may use which assistant: organisation and
// public assistants everyone, team assistants their department (weighted
// up), private ones their owner.
func (g *generator) assistantAccess() {
	g.candidates = make([][]int32, len(g.depts))
	for i := range g.asst {
		ap := &g.asst[i]
		switch ap.a.Visibility {
		case spec.VisibilityPrivate:
			if ap.owner >= 0 {
				g.private[ap.owner] = append(g.private[ap.owner], int32(i))
			}
		case spec.VisibilityTeam:
			if ap.dept >= 0 {
				for k := 0; k < 4; k++ {
					g.candidates[ap.dept] = append(g.candidates[ap.dept], int32(i))
				}
			}
		default:
			for d := range g.candidates {
				g.candidates[d] = append(g.candidates[d], int32(i))
			}
		}
	}
}

func modelIndex(name string) int {
	for i, m := range models {
		if m.name == name {
			return i
		}
	}
	return 0
}

func ptr[T any](v T) *T { return &v }

func msTime(ms int64) spec.Time { return spec.NewTime(time.UnixMilli(ms)) }

// hourWeights shape activity over the UTC day: Europe's working day, then the
// Americas'.
var hourWeights = []int{2, 1, 1, 1, 2, 3, 6, 10, 14, 16, 16, 14, 15, 17, 18, 17, 15, 12, 10, 8, 6, 5, 4, 3}
var hourWeightSum = sumInts(hourWeights)

// pickTime returns a time in [lo, hi] that falls mostly on working hours of
// weekdays.
func (g *generator) pickTime(r *rand.Rand, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	first := lo - lo%msDay
	days := (hi - first) / msDay
	for try := 0; try < 4; try++ {
		day := first + r.Int64N(days+1)*msDay
		// 1970-01-01 was a Thursday: weekday 0 is Sunday.
		if wd := (day/msDay + 4) % 7; (wd == 0 || wd == 6) && r.IntN(100) < 75 {
			continue
		}
		t := day + int64(weighted(r, hourWeights, hourWeightSum))*msHour + r.Int64N(msHour)
		if t >= lo && t <= hi {
			return t
		}
	}
	return between(r, lo, hi)
}

func (g *generator) pickUser(r *rand.Rand) int32 {
	x := r.Float64() * g.userPower[len(g.userPower)-1]
	return int32(sort.SearchFloat64s(g.userPower, x))
}

func (g *generator) pickAssistant(r *rand.Rand, user int32) int32 {
	if own := g.private[user]; len(own) > 0 && r.IntN(100) < 35 {
		return pick(r, own)
	}
	if c := g.candidates[g.userDept[user]]; len(c) > 0 {
		return pick(r, c)
	}
	return -1
}

// convRand returns the generator of conversation i, reseeding r.
func (g *generator) convRand(src *rand.PCG, i int) {
	src.Seed(mix64(g.seed^0x5eed5eed5eed5eed), mix64(streamConvBase+uint64(i)+0x9e3779b97f4a7c15))
}

func (g *generator) planConversations() {
	n := g.cfg.Conversations
	g.convs = make([]convPlan, n)
	if len(g.users) == 0 {
		g.convs = g.convs[:0]
		return
	}
	src := &rand.PCG{}
	r := rand.New(src)
	var s shape
	for i := 0; i < n; i++ {
		g.convRand(src, i)
		g.shape(r, &s)
		g.convs[i] = convPlan{start: s.at[0], updated: s.updated, user: s.user, asst: s.asst}
		g.replies += s.replies
		if s.asst >= 0 {
			ap := &g.asst[s.asst]
			ap.convs++
			ap.userSeen[s.user] = struct{}{}
			ap.lastUsed = max(ap.lastUsed, s.at[s.n-1])
		}
	}
}

// placeTies gives about 5% of conversations, in groups of 2..20, one shared
// updatedAt: a bulk change (a label applied by an administrator) touched them
// in one statement. The shared time is after every member's own updatedAt.
func (g *generator) placeTies() {
	r := newRand(g.seed, streamTies)
	n := len(g.convs)
	groups := 0
	// Each group is followed by a gap of on average 19 times its size, so
	// that 5% of conversations are tied.
	for i := int(between(r, 0, 100)); i+2 <= n; {
		size := min(int(between(r, 2, 20)), n-i)
		g.tie(r, i, size)
		groups++
		i += size + int(between(r, 0, int64(38*size)))
	}
	if groups == 0 && n >= 2 {
		g.tie(r, 0, 2)
	}
}

func (g *generator) tie(r *rand.Rand, from, size int) {
	t := int64(0)
	for k := from; k < from+size; k++ {
		t = max(t, g.convs[k].updated)
	}
	t = min(t+between(r, 0, 30*msMinute), g.end-1)
	for k := from; k < from+size; k++ {
		g.convs[k].updated = t
		g.convs[k].tie = true
	}
}

// placeDeletions deletes about 3% of the conversations that share no
// updatedAt: some by their user, some by the weekly retention sweep, which
// deletes many at one instant.
func (g *generator) placeDeletions() {
	r := newRand(g.seed, streamTies+100)
	// The sweep runs on Sundays at 02:00 UTC.
	for d := g.start - g.start%msDay; d < g.end; d += msDay {
		if (d/msDay+4)%7 == 0 && d+2*msHour >= g.start && d+2*msHour < g.end {
			g.sweeps = append(g.sweeps, d+2*msHour)
		}
	}
	for i := range g.convs {
		if g.convs[i].tie || r.IntN(1000) >= 30 {
			continue
		}
		g.deleteConv(r, i)
	}
	if len(g.deletions) == 0 {
		for i := range g.convs {
			if !g.convs[i].tie {
				g.deleteConv(r, i)
				break
			}
		}
	}
}

func (g *generator) deleteConv(r *rand.Rand, i int) {
	c := &g.convs[i]
	at := int64(0)
	if r.IntN(100) < 40 {
		k := sort.Search(len(g.sweeps), func(k int) bool { return g.sweeps[k] >= c.updated+7*msDay })
		if k < len(g.sweeps) {
			at = g.sweeps[k]
			c.sweep = true
		}
	}
	if at == 0 {
		at = min(c.updated+between(r, msMinute, 10*msDay), g.end-1)
	}
	c.deleted = at
	g.deletions = append(g.deletions, Deletion{ID: g.convID(i), At: time.UnixMilli(at).UTC()})
}

func (g *generator) convID(i int) string {
	return timeID("conv_", g.convs[i].start, mix32(uint32(i)^uint32(mix64(g.seed+streamConvSalt))))
}

// rollUpAssistants fills in each assistant's usage rollup and updatedAt from
// the conversations, and ties a few assistants' updatedAt.
func (g *generator) rollUpAssistants() {
	r := newRand(g.seed, streamTies+200)
	for i := range g.asst {
		ap := &g.asst[i]
		upd := max(ap.editAt, ap.lastUsed, ap.created)
		if ap.archived {
			upd = ap.archAt
			ap.a.Status = "archived"
		}
		ap.a.UpdatedAt = msTime(upd)
		ap.a.Usage = &spec.AssistantUsage{ConversationCount: ap.convs, UserCount: int64(len(ap.userSeen))}
		if ap.convs > 0 {
			ap.a.Usage.LastUsedAt = msTime(ap.lastUsed)
		}
		ap.userSeen = nil
	}
	// About 15% of assistants, in groups of 2..6, share one updatedAt: a
	// policy change re-saved them together.
	n := len(g.asst)
	groups := 0
	for i := 0; i < n; {
		if r.IntN(100) >= 4 || n-i < 2 {
			i++
			continue
		}
		size := min(int(between(r, 2, 6)), n-i)
		g.tieAssistants(r, i, size)
		groups++
		i += size
	}
	if groups == 0 && n >= 2 {
		g.tieAssistants(r, n-2, 2)
	}
}

func (g *generator) tieAssistants(r *rand.Rand, from, size int) {
	t := int64(0)
	for k := from; k < from+size; k++ {
		t = max(t, g.asst[k].a.UpdatedAt.UnixMilli())
	}
	t = min(t+between(r, 0, 6*msHour), g.end-1)
	for k := from; k < from+size; k++ {
		g.asst[k].a.UpdatedAt = msTime(t)
	}
}

// run passes every record to fn in load order: conversations, deletions,
// assistants, events, usage records.
func (g *generator) run(fn func(any) error) error {
	src := &rand.PCG{}
	r := rand.New(src)
	var s shape
	for i := range g.convs {
		g.convRand(src, i)
		g.shape(r, &s)
		if err := fn(g.conversation(r, &s, i)); err != nil {
			return err
		}
	}
	for _, d := range g.deletions {
		if err := fn(d); err != nil {
			return err
		}
	}
	for i := range g.asst {
		if err := fn(g.asst[i].a); err != nil {
			return err
		}
	}
	if err := g.events(fn); err != nil {
		return err
	}
	for i := range g.convs {
		g.convRand(src, i)
		g.shape(r, &s)
		if err := g.usage(&s, i, g.convID(i), fn); err != nil {
			return err
		}
	}
	return nil
}
