package dashboard

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/app/people"
	"github.com/aiusage/kit/spec"
)

// The usage page's Person filter: one person's usage, by their email, their
// name as a dashboard user, or the userId a provider reports for them.

const (
	// maxPersonLength is the longest Person the usage page reads, in
	// characters: an email is at most 254.
	maxPersonLength = 320
	// maxPersonSuggestions bounds the userIds the Person field suggests.
	maxPersonSuggestions = 500
)

// person is the usage page's Person filter, resolved.
type person struct {
	// Label names the person on the page: the email, and the name of the
	// dashboard user it is.
	Label string
	// IDs are the userIds whose usage is the person's, lower-cased.
	IDs []string
}

// suggestion is an entry of the Person field's list.
type suggestion struct{ Value, Label string }

// resolvePerson resolves the Person filter v (trimmed, not empty) of
// organisation orgID: an email of one of its dashboard users, or a name of
// exactly one of them (case-insensitive), is that user's email; anything
// else is a userId as the sources report it, compared lower-cased. A name
// that several users bear is refused, naming their emails.
func (d *Dashboard) resolvePerson(ctx context.Context, orgID, v string) (person, error) {
	users, err := d.cfg.People.Users(ctx, orgID)
	if err != nil {
		return person{}, err
	}
	id := strings.ToLower(v)
	var named []people.User
	for _, u := range users {
		switch {
		case u.Email == id:
			return person{Label: personLabel(u.Email, u.Name), IDs: []string{u.Email}}, nil
		case u.Name != "" && strings.EqualFold(strings.TrimSpace(u.Name), v):
			named = append(named, u)
		}
	}
	switch len(named) {
	case 0:
		return person{Label: v, IDs: []string{id}}, nil
	case 1:
		return person{Label: personLabel(named[0].Email, named[0].Name), IDs: []string{named[0].Email}}, nil
	}
	emails := make([]string, len(named))
	for i, u := range named {
		emails[i] = u.Email
	}
	slices.Sort(emails)
	return person{}, badParamf("The parameter user (%s) is the name of %d people: %s; give one's email.", v, len(named), strings.Join(emails, ", "))
}

func personLabel(email, name string) string {
	if name == "" {
		return email
	}
	return email + " (" + name + ")"
}

// parsePerson reads the parameter user: "" is everyone.
func parsePerson(v string) (string, error) {
	v = strings.TrimSpace(v)
	if n := utf8.RuneCountInString(v); n > maxPersonLength || !utf8.ValidString(v) {
		return "", badParamf("The parameter user must be an email, a name or a userId of at most %d characters.", maxPersonLength)
	}
	return v, nil
}

// personSuggestions are the Person field's entries: the organisation's dashboard
// users (their email, labelled with their name), then the userIds of the
// range's usage (seen) that are none of them, in order, at most
// maxPersonSuggestions in all.
func (d *Dashboard) personSuggestions(ctx context.Context, orgID string, seen []string) ([]suggestion, error) {
	users, err := d.cfg.People.Users(ctx, orgID)
	if err != nil {
		return nil, err
	}
	out := make([]suggestion, 0, len(users)+len(seen))
	known := map[string]bool{}
	for _, u := range users {
		out = append(out, suggestion{Value: u.Email, Label: u.Name})
		known[u.Email] = true
	}
	slices.Sort(seen)
	for _, id := range slices.Compact(seen) {
		if id != "" && !known[strings.ToLower(id)] {
			out = append(out, suggestion{Value: id})
		}
	}
	return out[:min(len(out), maxPersonSuggestions)], nil
}

// seenUsers returns the userIds of the organisation's usage from from to
// to, whoever the page keeps to: the page's own series by user when it
// keeps to no one, else one more series by day and user. A range with too
// many of them for one series suggests none.
func (d *Dashboard) seenUsers(ctx context.Context, orgID string, from, to time.Time, byUser []sqlstore.UsagePoint, filtered bool) ([]string, error) {
	points := byUser
	if filtered {
		var err error
		points, err = d.cfg.Sources.UsageSeries(ctx, orgID, sqlstore.UsageSeriesQuery{Start: from, End: to,
			Granularity: spec.GranularityDay, GroupBy: []string{spec.DimensionUserID}})
		if errors.Is(err, spec.ErrTooLarge) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
	}
	ids := make([]string, 0, len(points))
	for _, p := range points {
		ids = append(ids, p.UserID)
	}
	return ids, nil
}

// usageLink is the usage page of uq, kept to the person of userId user
// ("" for everyone).
func usageLink(uq usageQuery, user string) string {
	v := url.Values{"from": {uq.From}, "to": {uq.To}}
	if uq.Granularity != spec.GranularityDay {
		v.Set("granularity", uq.Granularity)
	}
	if uq.Metric != defaultUsageMetr {
		v.Set("metric", uq.Metric)
	}
	if user != "" {
		v.Set("user", user)
	}
	return "/usage?" + v.Encode()
}
