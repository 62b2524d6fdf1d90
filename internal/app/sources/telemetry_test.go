package sources_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/spec"
)

// TestTelemetrySource: a telemetry source is created by EnsureTelemetry
// only, once, listed with the others, never synced, and not added, moved
// nor removed through the sources' own methods.
func TestTelemetrySource(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		_, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "laptops", Transport: sources.TransportTelemetry})
		require.ErrorIs(t, err, spec.ErrInvalid)

		pushed, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "laptops", Transport: sources.TransportPush})
		require.NoError(t, err)
		id := uuid.NewString()
		for range 2 {
			require.NoError(t, e.src.EnsureTelemetry(ctx, e.org.ID, id, "laptops"))
		}
		require.ErrorIs(t, e.src.EnsureTelemetry(ctx, e.other.ID, id, "laptops"), spec.ErrConflict)
		list, err := e.src.List(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		// Added in one millisecond, the two list in the order of their ids.
		if list[0].ID != pushed.ID {
			list[0], list[1] = list[1], list[0]
		}
		require.Equal(t, pushed.ID, list[0].ID)
		require.Equal(t, id, list[1].ID)
		require.Equal(t, sources.TransportTelemetry, list[1].Transport)
		require.Equal(t, "laptops (telemetry)", list[1].Name) // the push source has the key's name

		_, err = e.src.Remove(ctx, e.org.ID, id)
		require.ErrorIs(t, err, spec.ErrConflict)
		require.ErrorIs(t, e.src.SetURL(ctx, e.org.ID, id, "https://example.com"), spec.ErrConflict)
		_, err = e.src.SyncNow(ctx, id)
		require.ErrorIs(t, err, spec.ErrInvalid)
		n, err := e.src.Schedule(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// TestTelemetryReceived: a telemetry source has no last received before
// TelemetryReceived, then the latest time it was given; an older time, an
// unknown source or a source of another transport changes nothing.
func TestTelemetryReceived(t *testing.T) {
	t.Parallel()
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		e := newEnv(t, db)
		pushed, err := e.src.Add(ctx, e.org.ID, sources.SourceCreate{Name: "pushed", Transport: sources.TransportPush})
		require.NoError(t, err)
		id := uuid.NewString()
		require.NoError(t, e.src.EnsureTelemetry(ctx, e.org.ID, id, "laptops"))
		got, err := e.src.Get(ctx, e.org.ID, id)
		require.NoError(t, err)
		require.Nil(t, got.LastReceivedAt, "nothing received yet")

		at := time.Date(2026, 11, 28, 6, 30, 0, 123e6, time.UTC)
		require.NoError(t, e.src.TelemetryReceived(ctx, id, at))
		require.NoError(t, e.src.TelemetryReceived(ctx, id, at.Add(-time.Hour)), "an older time")
		require.NoError(t, e.src.TelemetryReceived(ctx, uuid.NewString(), at), "an unknown source")
		require.NoError(t, e.src.TelemetryReceived(ctx, pushed.ID, at), "a push source")
		require.ErrorIs(t, e.src.TelemetryReceived(ctx, "nope", at), spec.ErrInvalid)
		list, err := e.src.List(ctx, e.org.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		if list[0].ID != pushed.ID { // added in one millisecond: in the order of their ids
			list[0], list[1] = list[1], list[0]
		}
		require.Nil(t, list[0].LastReceivedAt)
		require.NotNil(t, list[1].LastReceivedAt)
		require.Equal(t, at, *list[1].LastReceivedAt)
	})
}
