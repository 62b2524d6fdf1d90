package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/internal/app/orgapi"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/webhooktest"
	"github.com/aiusage/kit/spec"
)

// chromium returns the path of a Chromium to drive, or skips the test. With
// AIUSAGE_REQUIRE_CHROMIUM=1 (as .ci/run sets) a missing browser fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("AIUSAGE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium: install it (Debian: apt-get install -y chromium) or set AIUSAGE_CHROMIUM to a Chromium binary"
	if os.Getenv("AIUSAGE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// newBrowser starts a headless Chromium with a window of width x height and
// returns a context for chromedp actions in one tab.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(width, height),
	)
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	require.NoError(t, chromedp.Run(ctx)) // start the browser now
	return ctx
}

// shot saves a full-page screenshot of the current page as NAME.png under
// AIUSAGE_SCREENSHOTS, when set (make screenshots sets it).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("AIUSAGE_SCREENSHOTS")
	if dir == "" {
		return
	}
	var png []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&png, 90)))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

func signInBrowser(t *testing.T, ctx context.Context, base, email string) {
	t.Helper()
	var h1 string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`#email`, chromedp.ByQuery),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Click(`form[action="/signin"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`nav[aria-label=Main]`, chromedp.ByQuery),
		chromedp.Text(`h1`, &h1, chromedp.ByQuery),
	))
	require.Equal(t, "Overview", h1)
}

// TestBrowserAdministrator signs in as an Administrator in Chromium, creates
// an API key, uses it, revokes it and sees the next call refused.
func TestBrowserAdministrator(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	ctx := newBrowser(t, 1280, 900)
	signInBrowser(t, ctx, e.url, "ada@acme.test")
	shot(t, ctx, "overview")

	var secret, notice string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`a[href="/settings/api-keys"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#name`, chromedp.ByQuery),
	))
	shot(t, ctx, "api-keys-empty")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#name`, "crm-sync", chromedp.ByQuery),
		chromedp.SetValue(`#type`, "API", chromedp.ByQuery),
		chromedp.Click(`form[action="/settings/api-keys"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#secret`, chromedp.ByQuery),
		chromedp.Value(`#secret`, &secret, chromedp.ByQuery),
		chromedp.Text(`.notice`, &notice, chromedp.ByQuery),
	))
	require.True(t, strings.HasPrefix(secret, "aiu_"), secret)
	require.Contains(t, notice, "shown only this once")
	shot(t, ctx, "api-key-created")
	status, _ := e.api(t, http.MethodGet, "/organisations", secret, "")
	require.Equal(t, http.StatusOK, status)

	// Revoke: open the confirmation, then confirm.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(e.url+"/settings/api-keys"),
		chromedp.Click(`details.confirm summary`, chromedp.ByQuery),
		chromedp.Click(`details.confirm button.danger`, chromedp.ByQuery),
		chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
		chromedp.Text(`.notice`, &notice, chromedp.ByQuery),
	))
	require.Contains(t, notice, "revoked")
	status, _ = e.api(t, http.MethodGet, "/organisations", secret, "")
	require.Equal(t, http.StatusUnauthorized, status, "the next API call after revocation")
	shot(t, ctx, "api-keys")

	// The users page at a phone's width.
	phone := newBrowser(t, 390, 844)
	signInBrowser(t, phone, e.url, "ada@acme.test")
	require.NoError(t, chromedp.Run(phone, chromedp.Navigate(e.url+"/settings/users"), chromedp.WaitVisible(`#email`, chromedp.ByQuery)))
	var overflow bool
	require.NoError(t, chromedp.Run(phone, chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow)))
	require.False(t, overflow, "the page scrolls sideways at a phone's width")
	shot(t, phone, "users-phone")
}

// TestBrowserReviewer signs in as a Reviewer, decides a task and sees the
// webhook arrive at a real receiver.
func TestBrowserReviewer(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	ctx := t.Context()
	rcv := webhooktest.NewReceiver(t, "")
	hook, err := e.review.CreateWebhook(ctx, e.org.ID, spec.WebhookCreate{URL: rcv.URL(), Events: []string{spec.EventTaskCompleted}})
	require.NoError(t, err)
	rcv.SetSecret(hook.Secret)
	key, err := e.orgs.CreateKey(ctx, orgapi.KeyCreate{OrganisationID: e.org.ID, Name: "bot", Type: orgapi.KeyTypeAPI}, admin)
	require.NoError(t, err)
	status, body := e.api(t, http.MethodPost, "/review-tasks", key.Secret,
		`{"agentId":"`+e.agent.ID+`","request":{"messages":[{"role":"user","content":"Draft the press release for Project Falcon."}]}}`)
	require.Equal(t, http.StatusCreated, status, body)
	var task spec.ReviewTask
	require.NoError(t, json.Unmarshal([]byte(body), &task))
	require.Eventually(t, func() bool {
		got, err := e.review.Task(ctx, e.org.ID, task.ID)
		return err == nil && got.Status == spec.StatusRequiresIntervention
	}, 30*time.Second, 20*time.Millisecond)

	b := newBrowser(t, 1280, 900)
	signInBrowser(t, b, e.url, "rex@acme.test")
	var marked, notice string
	var keysLinks int
	require.NoError(t, chromedp.Run(b,
		chromedp.Evaluate(`document.querySelectorAll('a[href="/settings/api-keys"]').length`, &keysLinks),
		chromedp.Click(`a[href="/review"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`article.task`, chromedp.ByQuery),
		chromedp.Text(`article.task mark`, &marked, chromedp.ByQuery),
	))
	require.Zero(t, keysLinks, "a Reviewer is offered no key settings")
	require.Equal(t, "Project Falcon", marked)
	shot(t, b, "review")
	require.NoError(t, chromedp.Run(b,
		chromedp.SendKeys(`article.task textarea`, "After the announcement.", chromedp.ByQuery),
		chromedp.Click(`article.task button[value=approve]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.notice`, chromedp.ByQuery),
		chromedp.Text(`.notice`, &notice, chromedp.ByQuery),
	))
	require.Contains(t, notice, "approved")

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ds, err := rcv.WaitAcknowledged(wctx, 1)
	require.NoError(t, err)
	require.Equal(t, spec.EventTaskCompleted, ds[0].Type)
	require.Contains(t, string(ds[0].Body), `"status":"approved"`)
	got, err := e.review.Task(ctx, e.org.ID, task.ID)
	require.NoError(t, err)
	require.Equal(t, "Rex", got.Decision.Reviewer)
	require.Equal(t, "After the announcement.", got.Decision.Comment)
}
