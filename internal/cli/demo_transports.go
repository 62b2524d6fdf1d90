package cli

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/push"
	"github.com/aiusage/kit/provider/sqlsource"
	"github.com/aiusage/kit/spec"
)

// The demo collects from three sources, one per transport of the vendor's
// side, each with a tenant of its own so that the one view shows three sets
// of data: the REST provider (demoTenant), a scheduled export it writes, and
// a push stream it sends.
const (
	demoExportTenant = "demo-export"
	demoPushTenant   = "demo-push"
	// demoTransportEvery is how often the demo writes an export set, pushes
	// what changed, and syncs its sources.
	demoTransportEvery = time.Minute
)

// demoTransports runs the export writer and the pusher of the demo.
type demoTransports struct {
	exportDir string
	exportID  string // the export source
	pushID    string // the push source
	wg        sync.WaitGroup
}

// fillDemoTenants generates the data of the export and push tenants, once.
func fillDemoTenants(ctx context.Context, src *sqlsource.Source, conversations int) error {
	for i, tenant := range []string{demoExportTenant, demoPushTenant} {
		page, err := src.ListConversations(ctx, provider.ConversationQuery{Tenant: tenant, Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Items) > 0 {
			continue
		}
		cfg := demodata.Config{Seed: uint64(2 + i), Conversations: max(conversations/5, 20), Tenant: tenant,
			End: time.Now().UTC().Truncate(time.Hour)}
		if err := src.WriteBatch(ctx, func(w provider.Writer) error { return demodata.Fill(ctx, cfg, tenant, w) }); err != nil {
			return fmt.Errorf("generate the data of %s: %w", tenant, err)
		}
	}
	return nil
}

// start writes a first export set, connects the export and push sources
// (once: later starts find them in demo_state), syncs the export source,
// and runs the export writer and the pusher every demoTransportEvery until
// ctx ends; stop waits for them.
func (t *demoTransports) start(ctx context.Context, base string, ds *demoStore, src *sqlsource.Source, svc *sources.Service,
	orgID string, log *slog.Logger) error {
	db := ds.db
	dir, err := filepath.Abs(t.exportDir)
	if err != nil {
		return fmt.Errorf("--export-dir: %w", err)
	}
	t.exportDir = dir
	x, err := export.New(src, export.Config{Dir: dir, Tenant: demoExportTenant})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := x.Write(ctx, export.Auto); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if t.exportID, err = demoSource(ctx, ds, svc, orgID, "export_source",
		sources.SourceCreate{Name: "Demo export", URL: dir, Transport: sources.TransportExport, Every: demoTransportEvery}, nil); err != nil {
		return err
	}
	if _, err := svc.SyncNow(ctx, t.exportID); err != nil {
		log.Error("demo: first sync of the export", "error", err)
	}
	t.wg.Go(func() {
		_ = x.Run(ctx, demoTransportEvery, 24*time.Hour, func(_ spec.ExportManifest, _ []string, err error) {
			if err != nil {
				log.Error("demo: export", "error", err)
			}
		})
	})

	secretName := "push_secret"
	var secret string
	if t.pushID, err = demoSource(ctx, ds, svc, orgID, "push_source",
		sources.SourceCreate{Name: "Demo push", Transport: sources.TransportPush}, func(s sources.Source) error {
			secret = s.PushSecret
			return ds.set(ctx, secretName, s.PushSecret)
		}); err != nil {
		return err
	}
	if secret == "" {
		if secret, err = ds.get(ctx, secretName); err != nil {
			return err
		}
	}
	if strings.Contains(db.URL(), ":memory:") {
		log.Warn("demo: the push stream needs a database file or PostgreSQL; with an in-memory database it is left out")
		return nil
	}
	p, err := push.New(ctx, push.Config{DatabaseURL: db.URL(), Source: src, Tenant: demoPushTenant,
		URL: base + sources.PushPath(t.pushID), Secret: secret, Logger: log})
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	t.wg.Go(func() {
		defer p.Close()
		if err := p.Run(ctx, demoTransportEvery); err != nil {
			log.Error("demo: push", "error", err)
		}
	})
	return nil
}

// stop waits for the export writer and the pusher, once ctx has ended.
func (t *demoTransports) stop() { t.wg.Wait() }

// demoSource returns the source the demo remembers as name, adding it with
// n the first time (and calling created with it).
func demoSource(ctx context.Context, ds *demoStore, svc *sources.Service, orgID, name string, n sources.SourceCreate,
	created func(sources.Source) error) (string, error) {
	id, err := ds.get(ctx, name)
	if err != nil || id != "" {
		return id, err
	}
	s, err := svc.Add(ctx, orgID, n)
	if err != nil {
		return "", fmt.Errorf("add the source %s: %w", n.Name, err)
	}
	if created != nil {
		if err := created(s); err != nil {
			return "", err
		}
	}
	return s.ID, ds.set(ctx, name, s.ID)
}
