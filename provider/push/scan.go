package push

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// ScanResult counts what one [Pusher.Scan] queued.
type ScanResult struct {
	// Records and Deliveries count the records read and the deliveries
	// queued, per resource.
	Records, Deliveries map[string]int
	// Unsupported lists the resources the DataSource does not hold.
	Unsupported []string
}

// watermark is the key of the last record queued of a resource: for
// conversations and assistants (updatedAt, id), for events (occurredAt, id),
// for usage the start of the hour from which the next scan pushes again.
type watermark struct {
	at time.Time
	id string
}

// Scan reads, for each resource, the records that changed since its
// watermark and queues them for delivery, advancing the watermark after each
// page queued. Records of one page travel in as few deliveries as the limits
// allow. Usage is pushed as hourly buckets grouped by every dimension: the
// buckets of the hours from the one before the watermark to the current one,
// which may still grow, so they are pushed again by the next scan.
//
// A failure leaves the watermarks of the pages queued before it; the next
// scan goes on from there.
func (p *Pusher) Scan(ctx context.Context) (ScanResult, error) {
	res := ScanResult{Records: map[string]int{}, Deliveries: map[string]int{}}
	for _, r := range p.cfg.Resources {
		var err error
		if r == "usage" {
			err = p.scanUsage(ctx, &res)
		} else {
			err = p.scanList(ctx, r, &res)
		}
		if errors.Is(err, provider.ErrUnsupported) {
			res.Unsupported = append(res.Unsupported, r)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("push: scan %s: %w", r, err)
		}
	}
	return res, nil
}

// page is one page of a list resource, encoded, with the key of its last
// record.
type page struct {
	records [][]byte
	last    provider.Key
	more    bool
}

func (p *Pusher) fetch(ctx context.Context, resource string, after *provider.Key) (page, error) {
	tenant := p.cfg.Tenant
	switch resource {
	case "conversations":
		pg, err := p.cfg.Source.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, After: after, Limit: spec.MaxPushRecords})
		return encodePage(pg, err, provider.ConversationKey)
	case "assistants":
		pg, err := p.cfg.Source.ListAssistants(ctx, provider.AssistantQuery{Tenant: tenant, After: after, Limit: spec.MaxPushRecords})
		return encodePage(pg, err, provider.AssistantKey)
	case "events":
		pg, err := p.cfg.Source.ListEvents(ctx, provider.EventQuery{Tenant: tenant, After: after, Limit: spec.MaxPushRecords})
		return encodePage(pg, err, provider.EventKey)
	}
	return page{}, fmt.Errorf("unknown resource %q", resource)
}

func encodePage[T any](pg provider.Page[T], err error, key func(*T) provider.Key) (page, error) {
	if err != nil {
		return page{}, err
	}
	out := page{more: pg.HasMore}
	for i := range pg.Items {
		b, err := json.Marshal(&pg.Items[i])
		if err != nil {
			return page{}, err
		}
		out.records = append(out.records, b)
		out.last = key(&pg.Items[i])
	}
	return out, nil
}

func (p *Pusher) scanList(ctx context.Context, resource string, res *ScanResult) error {
	wm, ok, err := p.loadWatermark(ctx, resource)
	if err != nil {
		return err
	}
	var after *provider.Key
	best := provider.Key{Time: wm.at, ID: wm.id}
	if ok {
		after = &provider.Key{Time: wm.at, ID: wm.id}
		if p.cfg.Lookback > 0 {
			// Every id sorts after "": the window starts at the time itself.
			after = &provider.Key{Time: wm.at.Add(-p.cfg.Lookback)}
		}
	}
	for {
		pg, err := p.fetch(ctx, resource, after)
		if err != nil {
			return err
		}
		if len(pg.records) == 0 {
			return nil
		}
		n, err := p.enqueue(ctx, resource, pg.records)
		if err != nil {
			return err
		}
		res.Records[resource] += len(pg.records)
		res.Deliveries[resource] += n
		if !ok || best.Less(pg.last) {
			best, ok = pg.last, true
			if err := p.saveWatermark(ctx, resource, watermark{at: best.Time, id: best.ID}); err != nil {
				return err
			}
		}
		if !pg.more {
			return nil
		}
		after = &pg.last
	}
}

func (p *Pusher) scanUsage(ctx context.Context, res *ScanResult) error {
	wm, ok, err := p.loadWatermark(ctx, "usage")
	if err != nil {
		return err
	}
	now := p.cfg.Now().UTC()
	from := now.Add(-p.cfg.UsageBackfill).Truncate(time.Hour)
	if ok {
		from = wm.at.Add(-time.Hour).Truncate(time.Hour)
	}
	end := now.Truncate(time.Hour).Add(time.Hour)
	var after *provider.UsageKey
	for {
		pg, err := p.cfg.Source.Usage(ctx, provider.UsageQuery{Tenant: p.cfg.Tenant, Start: from, End: end,
			Granularity: spec.GranularityHour, GroupBy: spec.Dimensions, After: after, Limit: spec.MaxPushRecords})
		if err != nil {
			return err
		}
		records := make([][]byte, 0, len(pg.Items))
		for i := range pg.Items {
			b, err := json.Marshal(&pg.Items[i])
			if err != nil {
				return err
			}
			records = append(records, b)
		}
		if len(records) > 0 {
			n, err := p.enqueue(ctx, "usage", records)
			if err != nil {
				return err
			}
			res.Records["usage"] += len(records)
			res.Deliveries["usage"] += n
		}
		if !pg.HasMore || len(pg.Items) == 0 {
			break
		}
		k := provider.BucketKey(&pg.Items[len(pg.Items)-1])
		after = &k
	}
	return p.saveWatermark(ctx, "usage", watermark{at: now.Truncate(time.Hour)})
}

// enqueue splits records into deliveries within the limits and queues them,
// returning how many it queued.
func (p *Pusher) enqueue(ctx context.Context, resource string, records [][]byte) (int, error) {
	n := 0
	// The version of the records: when they were read, on the wall clock
	// (Config.Now sets the usage windows, not this).
	asOf := spec.NewTime(time.Now().UTC().Truncate(time.Millisecond))
	for len(records) > 0 {
		body, used := buildBody(resource, records[:min(len(records), p.cfg.MaxRecords)], MaxBodyBytes, asOf)
		if _, err := p.jobs.Insert(ctx, deliveryArgs{MsgID: newMessageID(), Resource: resource, Body: body},
			&river.InsertOpts{Queue: p.queue}); err != nil {
			return n, fmt.Errorf("queue a delivery: %w", err)
		}
		n++
		records = records[used:]
	}
	return n, nil
}

// buildBody returns the body of a delivery of the first records of resource
// that fit in limit bytes (at least one, even larger), read at asOf, and how
// many it took.
func buildBody(resource string, records [][]byte, limit int, asOf spec.Time) ([]byte, int) {
	head := `{"type":"` + spec.PushTypeRecords + `","resource":"` + resource + `","asOf":"` + asOf.String() + `","records":[`
	body := append(make([]byte, 0, 1024), head...)
	used := 0
	for _, rec := range records {
		if used > 0 && len(body)+1+len(rec)+2 > limit {
			break
		}
		if used > 0 {
			body = append(body, ',')
		}
		body = append(body, rec...)
		used++
	}
	return append(body, "]}"...), used
}

func (p *Pusher) loadWatermark(ctx context.Context, resource string) (watermark, bool, error) {
	var ms int64
	var id string
	err := p.db.QueryRowContext(ctx, `SELECT at_ms, id FROM aiusage_push_watermarks WHERE target = $1 AND resource = $2`,
		p.target, resource).Scan(&ms, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return watermark{}, false, nil
	}
	if err != nil {
		return watermark{}, false, fmt.Errorf("read the watermark: %w", err)
	}
	return watermark{at: time.UnixMilli(ms).UTC(), id: id}, true, nil
}

func (p *Pusher) saveWatermark(ctx context.Context, resource string, wm watermark) error {
	_, err := p.db.ExecContext(ctx, `INSERT INTO aiusage_push_watermarks (target, resource, at_ms, id) VALUES ($1, $2, $3, $4)
ON CONFLICT (target, resource) DO UPDATE SET at_ms = excluded.at_ms, id = excluded.id`,
		p.target, resource, sqldb.Millis(wm.at), wm.id)
	if err != nil {
		return fmt.Errorf("save the watermark: %w", err)
	}
	return nil
}
