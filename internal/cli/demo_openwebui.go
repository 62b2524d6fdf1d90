package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/adapters/openwebui/webui"
	"github.com/aiusage/kit/internal/app/sources"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
)

// demoOpenWebUITenant is the tenant the Open WebUI database is served under.
const demoOpenWebUITenant = "openwebui"

// demoOpenWebUI serves an Open WebUI database at /openwebui, through the
// provider of adapters/openwebui, as a fourth source of the demo.
type demoOpenWebUI struct {
	path     string
	src      *webui.Source
	handler  http.Handler
	sourceID string
}

// startOpenWebUI opens the Open WebUI database at path read-only, first
// creating the adapter's sample database there when the file does not
// exist, and builds its provider handler, which token reads.
func startOpenWebUI(ctx context.Context, path, token string, log *slog.Logger) (*demoOpenWebUI, error) {
	created, err := webui.EnsureSample(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("--openwebui-db: %w", err)
	}
	if created {
		log.Info("sample Open WebUI database created", "path", path)
	}
	src, err := webui.Open(ctx, path, webui.Config{Tenant: demoOpenWebUITenant})
	if err != nil {
		return nil, fmt.Errorf("--openwebui-db: %w", err)
	}
	m, err := mcp.NewServer(src)
	if err != nil {
		_ = src.Close()
		return nil, err
	}
	h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: token, Tenant: demoOpenWebUITenant}),
		provider.WithMount("/mcp", m.HTTPHandler()))
	if err != nil {
		_ = src.Close()
		return nil, err
	}
	// The provider routes on its own: strip the prefix, and hide the
	// service router's route context.
	strip := http.StripPrefix("/openwebui", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))))
	}))
	return &demoOpenWebUI{path: path, src: src, handler: strip}, nil
}

func (o *demoOpenWebUI) mount(r chi.Router) {
	r.Handle("/openwebui", o.handler)
	r.Handle("/openwebui/*", o.handler)
}

// connect adds the provider as a source of the organisation (once: later
// starts find it in demo_state and point it at this process's address) and
// syncs it.
func (o *demoOpenWebUI) connect(ctx context.Context, ds *demoStore, svc *sources.Service, orgID, base, token string) error {
	url := base + "/openwebui"
	id, err := demoSource(ctx, ds, svc, orgID, "openwebui_source",
		sources.SourceCreate{Name: "Open WebUI", URL: url, Token: token, Every: time.Minute}, nil)
	if err != nil {
		return err
	}
	if err := svc.SetURL(ctx, orgID, id, url); err != nil {
		return fmt.Errorf("point the Open WebUI source at this address: %w", err)
	}
	o.sourceID = id
	if _, err := svc.SyncNow(ctx, id); err != nil {
		return fmt.Errorf("first sync of the Open WebUI source: %w", err)
	}
	return nil
}

// print writes the lines of the demo's block about the Open WebUI source.
func (o *demoOpenWebUI) print(w io.Writer, base, orgID string) {
	fmt.Fprintf(w, `  Open WebUI     source %[3]s  (the Open WebUI database %[4]s, served read-only at
                 %[1]s/openwebui/ and synced every minute; its collected data at
                 %[1]s/organisations/%[2]s/sources/%[3]s/)
`, base, orgID, o.sourceID, o.path)
}

func (o *demoOpenWebUI) close() { _ = o.src.Close() }
