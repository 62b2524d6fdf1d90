package sources

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/httpx"
	"github.com/aiusage/kit/internal/infra/ident"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/mcp"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/spec"
)

// buildView builds the collected views: one provider.Handler over the
// consumer store, whose tenant (the source id) comes from the request, with
// the MCP binding at /mcp; and one over the store's merged view, whose
// tenant is an organisation (orgTenant) and merges its sources, with the
// same MCP tools at /mcp over the merged view. Both seal
// cursors with one key; their tenants differ, so neither accepts the
// other's cursors.
func (s *Service) buildView(ctx context.Context) error {
	key, err := s.cursorKey(ctx)
	if err != nil {
		return err
	}
	m, err := mcp.NewServer(s.store, append(slices.Clone(s.cfg.MCPOptions), mcp.WithCursorKey(key))...)
	if err != nil {
		return fmt.Errorf("sources: mcp: %w", err)
	}
	h, err := provider.NewHandler(s.store, provider.WithAuthenticator(viewAuth{}), provider.WithCursorKey(key),
		provider.WithLogger(s.log), provider.WithMount("/mcp", m.HTTPHandler()))
	if err != nil {
		return fmt.Errorf("sources: collected view: %w", err)
	}
	s.view = h
	merged := s.store.Merged(s.orgSources)
	om, err := mcp.NewServer(merged, append(slices.Clone(s.cfg.MCPOptions), mcp.WithCursorKey(key))...)
	if err != nil {
		return fmt.Errorf("sources: organisation mcp: %w", err)
	}
	org, err := provider.NewHandler(merged, provider.WithAuthenticator(viewAuth{}),
		provider.WithCursorKey(key), provider.WithLogger(s.log), provider.WithMount("/mcp", om.HTTPHandler()))
	if err != nil {
		return fmt.Errorf("sources: organisation view: %w", err)
	}
	s.orgView = org
	return nil
}

// orgTenantPrefix starts the tenant of an organisation's view, which no
// source id (a UUID) does.
const orgTenantPrefix = "organisation:"

// orgTenant is the tenant of the view of organisation orgID.
func orgTenant(orgID string) string { return orgTenantPrefix + orgID }

// orgSources returns the ids of the sources of the organisation tenant
// names (see orgTenant).
func (s *Service) orgSources(ctx context.Context, tenant string) ([]string, error) {
	org, ok := strings.CutPrefix(tenant, orgTenantPrefix)
	if !ok {
		return nil, nil
	}
	return s.sourceIDs(ctx, org)
}

// verified is what the sources handler checked before the collected view
// runs: the credential, of the organisation that owns the source.
type verified struct {
	credential, keyName string
	// tenant is the source id, or the organisation's tenant (orgTenant).
	tenant string
}

type verifiedKey struct{}

// viewAuth authenticates the collected views' requests: the credential must
// be the one the sources handler verified for this request; the tenant is the
// source id, or the organisation's for its view.
type viewAuth struct{}

func (viewAuth) Authenticate(ctx context.Context, credential string) (*provider.Principal, error) {
	v, ok := ctx.Value(verifiedKey{}).(verified)
	if !ok || subtle.ConstantTimeCompare([]byte(v.credential), []byte(credential)) != 1 {
		return nil, fmt.Errorf("sources: credential not verified: %w", provider.ErrUnauthorized)
	}
	return &provider.Principal{Name: "api-key:" + v.keyName, Tenant: v.tenant}, nil
}

// Routes adds the sources' routes to r, the service's router, the push
// receiver's among them ([Service.PushRoutes]).
func (s *Service) Routes(r chi.Router) {
	// The collected views are provider.Handlers, which refuse a malformed
	// query string themselves; the list of sources does the same.
	r.With(httpx.StrictQuery(func(w http.ResponseWriter, r *http.Request, err *httpx.QueryError) {
		s.writeError(w, r, &spec.Error{Kind: spec.ErrInvalid, Detail: err.Param + " " + err.Message})
	})).Get("/organisations/{organisationId}/sources", s.adapt(s.listHandler))
	r.Handle("/organisations/{organisationId}/sources/{sourceId}", s.adapt(s.viewHandler))
	r.Handle("/organisations/{organisationId}/sources/{sourceId}/*", s.adapt(s.viewHandler))
	for _, res := range orgResources {
		r.Handle("/organisations/{organisationId}/"+res, s.adapt(s.orgViewHandler))
		r.Handle("/organisations/{organisationId}/"+res+"/*", s.adapt(s.orgViewHandler))
	}
	s.PushRoutes(r)
}

// orgResources are the lists of an organisation's view, and its MCP
// binding.
var orgResources = []string{"conversations", "assistants", "events", "usage", "mcp"}

// authorize authenticates the request's API key, checks that it belongs to
// organisation {organisationId} and takes a slot of the key's and the
// organisation's requests in flight (Config.Concurrency), which the caller
// gives back with release when it is done. It returns the error to answer
// otherwise.
func (s *Service) authorize(w http.ResponseWriter, r *http.Request) (_ org.Principal, cred string, release func(), _ error) {
	// Missing, mistyped, revoked and expired keys get one answer, as on the
	// organisation API.
	noKey := spec.Errorf(spec.ErrUnauthorized, "A valid API key is required, as X-API-Key or Authorization Bearer.")
	cred, _ = httpx.Credential(r, false)
	if cred == "" {
		return org.Principal{}, "", nil, noKey
	}
	p, err := s.orgs.AuthenticateFor(r.Context(), cred, keyUse(r))
	switch {
	case errors.Is(err, spec.ErrUnauthorized):
		return org.Principal{}, "", nil, noKey
	case errors.Is(err, spec.ErrForbidden):
		return org.Principal{}, "", nil, spec.Errorf(spec.ErrForbidden, "Only API keys of type API may read the organisation's data.")
	case err != nil:
		return org.Principal{}, "", nil, failure(r, err, spec.ErrUnavailable, "The service cannot check the key now.")
	}
	orgID, ok := ident.CanonicalUUID(chi.URLParam(r, "organisationId"))
	if !ok || orgID != p.OrganisationID {
		return org.Principal{}, "", nil, spec.Errorf(spec.ErrNotFound, "No such organisation.")
	}
	release, err = s.cfg.Concurrency.Admit(w, r, p.KeyID, p.OrganisationID)
	var bodyErr *spec.Error
	switch {
	case errors.As(err, &bodyErr) && errors.Is(err, spec.ErrTooLarge):
		// The handler answers it in its own shape (MCP's JSON-RPC error)
		// at its first read, holding no slot.
		return p, cred, func() {}, nil
	case errors.As(err, &bodyErr):
		// The body did not arrive in time or was cut off, and net/http has
		// ended the request's context: nothing more can be read for it.
		return org.Principal{}, "", nil, &spec.Error{Kind: spec.ErrInvalid, Detail: "The request body " + bodyErr.Fields[0].Message + "."}
	case err != nil:
		w.Header().Set("Retry-After", httpx.RetryAfterConcurrent)
		return org.Principal{}, "", nil, spec.Errorf(spec.ErrRateLimited, "Too many requests of this key or organisation are in flight; retry when one has finished.")
	}
	return p, cred, release, nil
}

// keyUse is the API a request to the views uses, for the key's last use:
// MCP for a source's MCP binding (/sources/{sourceId}/mcp) and the
// organisation's (/organisations/{organisationId}/mcp), the organisation
// API otherwise.
func keyUse(r *http.Request) org.KeyUse {
	if rest := chi.URLParam(r, "*"); chi.URLParam(r, "sourceId") != "" && (rest == "mcp" || strings.HasPrefix(rest, "mcp/")) {
		return org.UseMCP
	}
	if chi.URLParam(r, "sourceId") == "" && (below(r.URL.Path, 3) == "/mcp" || strings.HasPrefix(below(r.URL.Path, 3), "/mcp/")) {
		return org.UseMCP
	}
	return org.UseOrganisationAPI
}

// ResourceStatus is the sync status of one resource of a source. A
// resource the provider does not offer (it answered 404 or 501 for it) is
// NotOffered, with the provider's answer in NotOfferedDetail, and has no
// LastError: it is a state of the provider, not a failed sync.
type ResourceStatus struct {
	Records     int64      `json:"records"`
	Missing     int64      `json:"missing"`
	Quarantined int64      `json:"quarantined"`
	InProgress  bool       `json:"inProgress"`
	Watermark   *time.Time `json:"watermark"`
	LastSuccess *time.Time `json:"lastSuccess"`
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt"`
	NeedsFull   bool       `json:"needsFull,omitempty"`
	Reason      string     `json:"needsFullReason,omitempty"`
	// NotOffered is set when the provider's last answer said it does not
	// offer the resource; NotOfferedAt is when.
	NotOffered       bool       `json:"notOffered,omitempty"`
	NotOfferedDetail string     `json:"notOfferedDetail,omitempty"`
	NotOfferedAt     *time.Time `json:"notOfferedAt,omitempty"`
}

// Failed reports whether the last attempt to sync the resource failed: it
// has an error more recent than its last success. A resource the provider
// does not offer has not failed.
func (rs *ResourceStatus) Failed() bool {
	return rs.LastError != "" && (rs.LastSuccess == nil || rs.LastErrorAt != nil && rs.LastErrorAt.After(*rs.LastSuccess))
}

// Listed is a source as GET /organisations/{id}/sources lists it.
type Listed struct {
	Source
	Every     string                     `json:"every"`
	Resources map[string]*ResourceStatus `json:"resources"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// Statuses returns the sources of orgID with their per-resource sync status.
func (s *Service) Statuses(ctx context.Context, orgID string) ([]Listed, error) {
	list, err := s.List(ctx, orgID)
	if err != nil {
		return nil, err
	}
	status, err := s.store.Status(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]map[string]*ResourceStatus{}
	out := make([]Listed, len(list))
	for i, src := range list {
		res := map[string]*ResourceStatus{}
		for _, r := range Resources(src.Transport) {
			res[string(r)] = &ResourceStatus{}
		}
		byID[src.ID] = res
		out[i] = Listed{Source: src, Every: src.Every.String(), Resources: res}
	}
	for _, st := range status {
		res, ok := byID[st.Source]
		if !ok || res[string(st.Resource)] == nil { // a resource the source's transport does not sync
			continue
		}
		c := st.Checkpoint
		rs := &ResourceStatus{Records: st.Records, Missing: st.Missing, Quarantined: st.Quarantined,
			InProgress: c.InProgress, Watermark: timePtr(c.Watermark), LastSuccess: timePtr(c.LastSuccess),
			LastError: c.LastError, LastErrorAt: timePtr(c.LastErrorAt), NeedsFull: c.NeedsFull, Reason: c.NeedsFullReason}
		if c.NotOffered() {
			rs.NotOffered, rs.NotOfferedAt = true, rs.LastErrorAt
			rs.NotOfferedDetail = strings.TrimPrefix(c.LastError, consumer.NotOfferedPrefix)
			rs.LastError, rs.LastErrorAt = "", nil
		}
		res[string(st.Resource)] = rs
	}
	return out, nil
}

func (s *Service) listHandler(w http.ResponseWriter, r *http.Request) error {
	p, _, release, err := s.authorize(w, r)
	if err != nil {
		return err
	}
	defer release()
	out, err := s.Statuses(r.Context(), p.OrganisationID)
	if err != nil {
		return failure(r, err, nil, "The sources cannot be listed now.")
	}
	_ = httpx.WriteJSON(w, http.StatusOK, out) // an error means the client went away
	return nil
}

// viewHandler serves the collected view of one source: the provider
// interface with the path below /organisations/{id}/sources/{sourceId}.
func (s *Service) viewHandler(w http.ResponseWriter, r *http.Request) error {
	p, cred, release, err := s.authorize(w, r)
	if err != nil {
		return err
	}
	defer release()
	src, err := s.Get(r.Context(), p.OrganisationID, chi.URLParam(r, "sourceId"))
	switch {
	case errors.Is(err, spec.ErrNotFound):
		return spec.Errorf(spec.ErrNotFound, "No such source.")
	case err != nil:
		return failure(r, err, nil, "The source cannot be read now.")
	}
	serveBelow(s.view, w, r, verified{credential: cred, keyName: p.KeyName, tenant: src.ID}, 5)
	return nil
}

// orgViewHandler serves the view of the organisation: the lists of the
// provider interface (/conversations, /assistants, /events, /usage) over
// the union of its sources' data, and the MCP tools over them (/mcp).
// Single records (/conversations/{id},
// /assistants/{id}) are 404: an id is unique only within its source.
func (s *Service) orgViewHandler(w http.ResponseWriter, r *http.Request) error {
	p, cred, release, err := s.authorize(w, r)
	if err != nil {
		return err
	}
	defer release()
	if strings.Count(below(r.URL.Path, 3), "/") > 1 { // /conversations/{id} and the like
		return spec.Errorf(spec.ErrNotFound, "The organisation's view has no single records: an id is unique only within its source. "+
			"Read one at /organisations/{organisationId}/sources/{sourceId}/conversations/{id} (or assistants), with the record's sourceId.")
	}
	serveBelow(s.orgView, w, r, verified{credential: cred, keyName: p.KeyName, tenant: orgTenant(p.OrganisationID)}, 3)
	return nil
}

// serveBelow serves r with view, as v, at the part of its path from the
// n-th slash.
func serveBelow(view http.Handler, w http.ResponseWriter, r *http.Request, v verified, n int) {
	ctx := context.WithValue(r.Context(), verifiedKey{}, v)
	// The view routes on its own: it must not see this router's context.
	ctx = context.WithValue(ctx, chi.RouteCtxKey, (*chi.Context)(nil))
	r2 := r.WithContext(ctx)
	u := *r.URL
	u.Path = below(r.URL.Path, n)
	if r.URL.RawPath != "" {
		u.RawPath = below(r.URL.RawPath, n)
	}
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	view.ServeHTTP(w, r2)
}

// below returns the part of path from its n-th slash (counting the leading
// one as the first): for /organisations/O/sources/S/REST and 5, "/REST";
// "/" when there is none.
func below(path string, n int) string {
	parts := strings.SplitN(path, "/", n+1)
	if len(parts) < n+1 {
		return "/"
	}
	return "/" + parts[n]
}

// detailBusy is the detail of a request of the sources' API that ran out of
// time or met a busy service.
const detailBusy = "The request ran out of time or the service is busy; retry it shortly."

// failure is the error answering r, whose handler could not read what it
// needs (err): a 503 when the request ran out of time (httpx.TimedOut: its
// wait for a database connection or its query was cut by its deadline) or
// the service is busy; otherwise an error of kind (nil: 500) with detail,
// whose cause the writer logs with the request id.
func failure(r *http.Request, err, kind error, detail string) error {
	if httpx.TimedOut(r, err) || errors.Is(err, spec.ErrUnavailable) || sqldb.IsRetryable(err) {
		return &spec.Error{Kind: spec.ErrUnavailable, Detail: detailBusy}
	}
	return &spec.Error{Kind: kind, Detail: detail, Err: err}
}

func (s *Service) adapt(fn httpx.HandlerFunc) http.HandlerFunc { return httpx.Adapt(fn, s.writeError) }

// writeError writes err as the problem details answer of the sources' API.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpx.WriteError(w, r, err, &httpx.ErrorStyle{
		Logger:     s.log,
		Challenge:  `Bearer realm="aiusage"`,
		RetryAfter: "1",
		Internal:   "An unexpected error occurred. Quote the request id to the service's operators.",
		TimedOut:   detailBusy,
	})
}
