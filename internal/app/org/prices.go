package org

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/spec"
)

// MaxModelLength bounds the model string of a price, in characters.
const MaxModelLength = 200

// Price is what an organisation pays for one model, per million tokens of
// each kind: uncached input, cache read, cache write and output. A nil
// price is none given: tokens of that kind are not priced.
type Price struct {
	Model      string   `json:"model"`
	Input      *float64 `json:"input"`
	CacheRead  *float64 `json:"cacheRead"`
	CacheWrite *float64 `json:"cacheWrite"`
	Output     *float64 `json:"output"`
	// UpdatedAt is when the price was last set.
	UpdatedAt spec.Time `json:"updatedAt"`
}

// PriceSet sets the price of one model of an organisation, replacing the
// one it had.
type PriceSet struct {
	Model      string
	Input      *float64
	CacheRead  *float64
	CacheWrite *float64
	Output     *float64
}

// PriceFieldError is the error of [PriceSet.Validate]: Field names the
// field at fault (model, input, cacheRead, cacheWrite, output).
type PriceFieldError struct {
	Field  string
	Detail string
}

func (e *PriceFieldError) Error() string { return e.Field + ": " + e.Detail }

// Unwrap makes the error one of kind spec.ErrInvalid.
func (e *PriceFieldError) Unwrap() error { return spec.ErrInvalid }

// Validate checks a price: a model of 1 to [MaxModelLength] characters
// without control characters, prices that are finite and not negative, and
// at least one price given. A failure is a [*PriceFieldError], of kind
// spec.ErrInvalid.
func (p PriceSet) Validate() error {
	if strings.TrimSpace(p.Model) == "" {
		return &PriceFieldError{"model", "must not be empty"}
	}
	if !utf8.ValidString(p.Model) || strings.ContainsFunc(p.Model, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return &PriceFieldError{"model", "must be UTF-8 without control characters"}
	}
	if n := utf8.RuneCountInString(p.Model); n > MaxModelLength {
		return &PriceFieldError{"model", fmt.Sprintf("%d characters, at most %d", n, MaxModelLength)}
	}
	given := 0
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input", p.Input}, {"cacheRead", p.CacheRead}, {"cacheWrite", p.CacheWrite}, {"output", p.Output}} {
		if f.v == nil {
			continue
		}
		given++
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) || *f.v < 0 {
			return &PriceFieldError{f.name, "must be a finite number of at least 0"}
		}
	}
	if given == 0 {
		return &PriceFieldError{"input", "give at least one price"}
	}
	return nil
}

// SetPrice sets the price of model p.Model in organisation orgID, and
// records it in the audit trail. Usage already rolled up keeps its cost;
// the price applies to what is computed after the change.
func (s *Store) SetPrice(ctx context.Context, orgID string, p PriceSet, actor Actor) (Price, error) {
	if err := p.Validate(); err != nil {
		return Price{}, err
	}
	o, err := s.Organisation(ctx, orgID)
	if err != nil {
		return Price{}, err
	}
	now := s.Now()
	out := Price{Model: p.Model, Input: p.Input, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite, Output: p.Output,
		UpdatedAt: spec.NewTime(now)}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		before, err := priceIn(ctx, tx, o.ID, p.Model)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orgapi_prices (org_id, model, input, cache_read, cache_write, output, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (org_id, model) DO UPDATE SET input = excluded.input,
			cache_read = excluded.cache_read, cache_write = excluded.cache_write, output = excluded.output,
			updated_at = excluded.updated_at`,
			o.ID, p.Model, p.Input, p.CacheRead, p.CacheWrite, p.Output, sqldb.Millis(now)); err != nil {
			return err
		}
		var b any
		if before != nil {
			b = before
		}
		return s.audit(ctx, tx, o.ID, now, actor, AuditPriceSet, "price", p.Model, b, out)
	})
	return out, err
}

// DeletePrice removes the price of model from organisation orgID, and
// records it in the audit trail; a model without a price is
// spec.ErrNotFound.
func (s *Store) DeletePrice(ctx context.Context, orgID, model string, actor Actor) error {
	o, err := s.Organisation(ctx, orgID)
	if err != nil {
		return err
	}
	now := s.Now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		before, err := priceIn(ctx, tx, o.ID, model)
		if err != nil {
			return err
		}
		if before == nil {
			return &spec.Error{Kind: spec.ErrNotFound, Detail: fmt.Sprintf("No price for model %q in this organisation.", model)}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM orgapi_prices WHERE org_id = $1 AND model = $2`, o.ID, model); err != nil {
			return err
		}
		return s.audit(ctx, tx, o.ID, now, actor, AuditPriceDeleted, "price", model, before, nil)
	})
}

const priceColumns = `model, input, cache_read, cache_write, output, updated_at`

func scanPrice(row interface{ Scan(...any) error }) (Price, error) {
	var p Price
	var in, cr, cw, out sql.NullFloat64
	var at int64
	if err := row.Scan(&p.Model, &in, &cr, &cw, &out, &at); err != nil {
		return p, err
	}
	ptr := func(f sql.NullFloat64) *float64 {
		if !f.Valid {
			return nil
		}
		return &f.Float64
	}
	p.Input, p.CacheRead, p.CacheWrite, p.Output = ptr(in), ptr(cr), ptr(cw), ptr(out)
	p.UpdatedAt = spec.NewTime(fromMillis(at))
	return p, nil
}

// priceIn returns the price of model in organisation org within tx, or nil.
func priceIn(ctx context.Context, tx *sql.Tx, org, model string) (*Price, error) {
	p, err := scanPrice(tx.QueryRowContext(ctx, `SELECT `+priceColumns+` FROM orgapi_prices WHERE org_id = $1 AND model = $2`, org, model))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// Prices returns the price table of organisation orgID, by model in byte
// order; empty when it has none.
func (s *Store) Prices(ctx context.Context, orgID string) ([]Price, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+priceColumns+` FROM orgapi_prices WHERE org_id = $1 ORDER BY model`,
		strings.ToLower(orgID))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Price{}
	for rows.Next() {
		p, err := scanPrice(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ModelPrices returns the price table of organisation orgID by model.
func (s *Store) ModelPrices(ctx context.Context, orgID string) (map[string]Price, error) {
	ps, err := s.Prices(ctx, orgID)
	if err != nil {
		return nil, err
	}
	m := make(map[string]Price, len(ps))
	for _, p := range ps {
		m[p.Model] = p
	}
	return m, nil
}

// Cost returns what tokens cost at price p: each kind's count times its
// price per million; ok is false when a kind with tokens has no price
// given, and then the cost is not known from the price.
func (p Price) Cost(input, cacheRead, cacheWrite, output int64) (cost float64, ok bool) {
	for _, k := range []struct {
		n     int64
		price *float64
	}{{input, p.Input}, {cacheRead, p.CacheRead}, {cacheWrite, p.CacheWrite}, {output, p.Output}} {
		if k.n == 0 {
			continue
		}
		if k.price == nil {
			return 0, false
		}
		cost += float64(k.n) * *k.price / 1e6
	}
	return cost, true
}
