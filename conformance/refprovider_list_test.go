package conformance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aiusage/kit/spec"
)

// --- lists

var (
	refTimeRe = regexp.MustCompile(`"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3})Z"`)
	plusTwo   = time.FixedZone("", 2*3600)
)

// encode writes a record as served, with the defects of the wire format.
func (p *refProvider) encode(it *refItem) []byte {
	v := it.v
	if it.full != nil && p.has(dTombstoneMessages) {
		v = it.full
	}
	b, _ := json.Marshal(v)
	if _, isEvent := v.(spec.Event); isEvent && (p.has(dMissingID) && it.idx%4 == 1 || p.has(dUnknownEnum) && it.idx%10 == 3) {
		var m map[string]any
		json.Unmarshal(b, &m)
		if p.has(dMissingID) {
			delete(m, "id")
		} else {
			m["action"] = "Archived"
		}
		b, _ = json.Marshal(m)
	}
	switch {
	case p.has(dOffsetTimestamps):
		b = refTimeRe.ReplaceAllFunc(b, func(m []byte) []byte {
			t, _ := time.Parse(time.RFC3339Nano, string(m[1:len(m)-1]))
			return []byte(`"` + t.In(plusTwo).Format("2006-01-02T15:04:05.000-07:00") + `"`)
		})
	case p.has(dMixedPrecision):
		b = bytes.ReplaceAll(b, []byte(`.000Z"`), []byte(`Z"`))
	}
	return b
}

func (p *refProvider) serveList(pr refPrincipal, resource string, v url.Values) ([]byte, error) {
	q := refParams{v, p}
	var (
		updatedSince, startedAfter, occurredAfter time.Time
		category, digest                          string
		err                                       error
	)
	if resource != "events" {
		if updatedSince, err = q.time("updatedSince"); err != nil {
			return nil, err
		}
		if resource == "conversations" {
			if startedAfter, err = q.time("startedAfter"); err != nil {
				return nil, err
			}
		}
		digest = filterDigest("updatedSince", ms(updatedSince), "startedAfter", ms(startedAfter))
	} else {
		if occurredAfter, err = q.time("occurredAfter"); err != nil {
			return nil, err
		}
		c, ok, err := q.get("category")
		if err != nil {
			return nil, err
		}
		if ok && !slices.Contains(spec.EventCategories, c) {
			return nil, invalid("category", "must be one of %s, got %q", strings.Join(spec.EventCategories, ", "), truncate(c))
		}
		category = c
		digest = filterDigest("occurredAfter", ms(occurredAfter), "category", category)
	}
	limit, err := q.limit()
	if err != nil {
		return nil, err
	}
	cur, err := p.readCursor(q, resource, pr.tenant, digest)
	if err != nil {
		return nil, err
	}
	if cur != nil && digest != "" && p.has(dFilteredCursor400) {
		return nil, invalid("cursor", "is malformed")
	}
	tenant := pr.tenant
	if cur != nil && p.has(dCursorAuthority) && p.tenants[cur.Tenant] != nil {
		tenant = cur.Tenant
	}
	if cur != nil && p.has(dFilterFirstPageOnly) {
		updatedSince, startedAfter, occurredAfter = time.Time{}, time.Time{}, time.Time{}
	}
	if cur != nil && p.has(dCategoryFirstPageOnly) {
		category = ""
	}
	if cur != nil && p.has(dLimitFirstPageOnly) {
		limit = 100
	}
	td := p.tenants[tenant]
	all := map[string][]*refItem{"conversations": td.conversations, "assistants": td.assistants, "events": td.events}[resource]
	if cur != nil && p.has(dTenantLaterPages) {
		// The query of the next page lost its tenant condition.
		var merged []*refItem
		for _, tn := range []string{tenantMain, tenantOther} {
			o := p.tenants[tn]
			merged = append(merged, map[string][]*refItem{"conversations": o.conversations, "assistants": o.assistants, "events": o.events}[resource]...)
		}
		sort.SliceStable(merged, func(a, b int) bool { return itemLess(merged[a], merged[b]) })
		all = merged
	}

	desc := p.has(dWrongOrder) && resource == "conversations"
	var matched []*refItem
	for _, it := range all {
		if it.stale && !(p.has(dDuplicateAcrossPages) && resource == "conversations") {
			continue
		}
		if !updatedSince.IsZero() {
			if it.at.Before(updatedSince) || p.has(dUpdatedSinceExcl) && it.at.Equal(updatedSince) {
				continue
			}
		}
		if !startedAfter.IsZero() && !it.started.After(startedAfter) {
			continue
		}
		if !occurredAfter.IsZero() {
			if it.at.Before(occurredAfter) || !p.has(dOccurredAfterIncl) && it.at.Equal(occurredAfter) {
				continue
			}
		}
		if category != "" && it.category != category && !p.has(dCategoryIgnored) {
			continue
		}
		matched = append(matched, it)
	}
	if desc {
		slices.Reverse(matched)
	}
	if cur != nil {
		cat := time.UnixMilli(cur.Ms).UTC()
		after := func(it *refItem) bool {
			switch {
			case p.has(dTieSkip) && resource == "conversations":
				return it.at.After(cat)
			case desc:
				return it.at.Before(cat) || it.at.Equal(cat) && it.id < cur.Key
			default:
				return it.at.After(cat) || it.at.Equal(cat) && it.id > cur.Key
			}
		}
		i := slices.IndexFunc(matched, after)
		if i < 0 {
			i = len(matched)
		}
		matched = matched[i:]
	}
	page, more := matched, false
	if len(page) > limit {
		page, more = page[:limit], true
	}
	var next *string
	seal := func() *string {
		last := page[len(page)-1]
		s := p.seal(refCursor{Endpoint: resource, Tenant: tenant, Filters: digest, Ms: last.at.UnixMilli(), Key: last.id})
		return &s
	}
	switch {
	case p.has(dHasMoreNullCursor):
		// hasMore says the page is full; the cursor is made only when a
		// record follows.
		if more {
			next = seal()
		}
		more = len(page) == limit
	case p.has(dCursorLoop):
		// No look-ahead: a full page has more, and the page after the end
		// sends the cursor back.
		more = len(page) == limit
		if more {
			next = seal()
		}
		if len(page) == 0 && cur != nil {
			s, _, _ := q.get("cursor")
			next, more = &s, true
		}
	case p.has(dHasMoreNullAlways):
		if more {
			next = seal()
		}
		more = true
	case p.has(dCursorLoopAlways):
		switch {
		case len(page) > 0:
			next, more = seal(), true
		case cur != nil:
			s, _, _ := q.get("cursor")
			next, more = &s, true
		}
	case more:
		next = seal()
	}
	recs := make([][]byte, len(page))
	for i, it := range page {
		recs[i] = p.encode(it)
		if cur != nil && p.has(dOffsetLaterPages) {
			recs[i] = refTimeRe.ReplaceAllFunc(recs[i], func(m []byte) []byte {
				t, _ := time.Parse(time.RFC3339Nano, string(m[1:len(m)-1]))
				return []byte(`"` + t.In(plusTwo).Format("2006-01-02T15:04:05.000-07:00") + `"`)
			})
		}
	}
	return p.envelope(recs, more, next), nil
}

func (p *refProvider) envelope(recs [][]byte, more bool, next *string) []byte {
	var b bytes.Buffer
	if len(recs) == 0 && p.has(dDataNullEmpty) {
		b.WriteString(`{"data":null`)
	} else {
		b.WriteString(`{"data":[`)
		b.Write(bytes.Join(recs, []byte(",")))
		b.WriteString("]")
	}
	switch {
	case p.has(dHasMoreString):
		fmt.Fprintf(&b, `,"hasMore":"%t"`, more)
	case more || !p.has(dEnvelopeNoHasMore):
		fmt.Fprintf(&b, `,"hasMore":%t`, more)
	}
	switch {
	case next != nil:
		c, _ := json.Marshal(*next)
		fmt.Fprintf(&b, `,"nextCursor":%s`, c)
	case p.has(dCursorNumber):
		b.WriteString(`,"nextCursor":0`)
	default:
		b.WriteString(`,"nextCursor":null`)
	}
	if !more && len(recs) > 0 && p.has(dDuplicateData) {
		b.WriteString(`,"data":[]`)
	}
	b.WriteString("}")
	return b.Bytes()
}

// --- single records

func (p *refProvider) serveSingle(pr refPrincipal, resource, id string) ([]byte, error) {
	if p.has(dHostileID500) && (len(id) > 1000 || strings.ContainsAny(id, `'"/`)) {
		return nil, errCrash
	}
	switch {
	case len(id) > 1000:
		return nil, invalid("id", "is longer than 1000 bytes")
	case !utf8.ValidString(id):
		return nil, invalid("id", "is not valid UTF-8")
	case strings.ContainsFunc(id, unicode.IsControl):
		return nil, invalid("id", "contains control characters")
	}
	tenants := []string{pr.tenant}
	if p.has(dOtherTenantByID) {
		tenants = []string{tenantMain, tenantOther}
	}
	for _, tn := range tenants {
		td := p.tenants[tn]
		l := td.conversations
		if resource == "assistants" {
			l = td.assistants
		}
		for _, it := range l {
			if it.id != id || it.stale {
				continue
			}
			if it.tomb && p.has(dTombstoneGone) {
				break
			}
			if c, ok := it.v.(spec.Conversation); ok && p.has(dSingleDiffers) && !it.tomb {
				c.UpdatedAt, c.Status = spec.NewTime(it.at.Add(-time.Hour)), "in_progress"
				return p.encode(&refItem{idx: it.idx, v: c}), nil
			}
			return p.encode(it), nil
		}
	}
	if p.has(dUnknownID200) {
		if resource == "assistants" {
			return json.Marshal(spec.Assistant{ID: id, CreatedAt: spec.NewTime(time.Unix(0, 0))})
		}
		return json.Marshal(spec.Conversation{ID: id, StartedAt: spec.NewTime(time.Unix(0, 0))})
	}
	return nil, &refError{status: http.StatusNotFound, detail: fmt.Sprintf("No %s with id %q.", strings.TrimSuffix(resource, "s"), truncate(id))}
}
