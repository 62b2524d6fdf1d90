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

	"github.com/aiusage/kit/internal/app/org"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/internal/testkit/race"
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
	if race.Enabled {
		// The browser drives the same handlers the HTTP tests drive under
		// the race detector; instrumenting the server for the browser's
		// slower walk adds minutes and finds nothing more.
		t.Skip("the browser tests run without the race detector (make test)")
	}
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
	// The first action starts the browser; it lives as long as ctx. Headless
	// windows are at least 500 pixels wide, so a phone's width is emulated.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank"),
		chromedp.EmulateViewport(int64(width), int64(height))))
	return ctx
}

// shot saves a full-page screenshot of the current page as NAME.png under
// AIUSAGE_SCREENSHOTS, when set (make screenshots sets it).
//
// Every page it is called on must fit the window's width: it fails the test
// when the page scrolls sideways.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	require.NoError(t, err)
	require.False(t, overflow, "the page of screenshot %s scrolls sideways", name)
	dir := os.Getenv("AIUSAGE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

func signInBrowser(t *testing.T, ctx context.Context, base, email string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(base+"/"))
	signInForm(t, ctx, email, password)
	// The header's account links: on a phone the navigation is a closed
	// menu.
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`.who a[href="/account/password"]`)))
	require.Equal(t, "Overview", text(t, ctx, "h1"))
}

// signInForm fills the sign-in form the browser shows: the email, then
// Continue, then the password the next page asks for, then Sign in.
func signInForm(t *testing.T, ctx context.Context, email, pw string) {
	t.Helper()
	do(t, ctx,
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#password`)),
		chromedp.SendKeys(chromedp.CSS(`#password`), pw),
		chromedp.Click(chromedp.CSS(`form[action="/signin"] button[type=submit]`)),
	)
}

// text returns the text of the first element sel matches. A page that is
// still being replaced after a click can drop the node between its query
// and the read of its text ("No node with given id found"): the read is
// then tried again, on the new page, for a few seconds.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var v string
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		v, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err == nil || !strings.Contains(err.Error(), "No node with given id") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err, "text of %s", sel)
	return strings.TrimSpace(v)
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// clickThrough clicks sel, which loads another page (a form's submit, a
// link, a redirect through the identity provider), and returns once a new
// document has replaced the current one and finished loading. A wait for a
// selector alone can match the page being left, when both pages have it
// (an alert, a notice, the same form), and the reads after it then see the
// old page or lose its nodes ("No node with given id found").
func clickThrough(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.aiusageLeaving = true`))
	require.NoError(t, err)
	do(t, ctx, chromedp.Click(chromedp.CSS(sel)))
	// While the page is replaced, an evaluation can fail (its context
	// destroyed): that is not yet an answer.
	require.Eventually(t, func() bool {
		arrived, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.aiusageLeaving !== true && document.readyState === 'complete'`))
		return err == nil && arrived
	}, 15*time.Second, 25*time.Millisecond, "clicking %s loads a new page", sel)
}

// TestBrowserAdministrator signs in as an Administrator in Chromium, creates
// an API key, uses it, revokes it and sees the next call refused.
func TestBrowserAdministrator(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	e := newEnv(t, db)
	ctx := newBrowser(t, 1280, 900)
	signInBrowser(t, ctx, e.url, "ada@acme.test")

	do(t, ctx,
		chromedp.Click(chromedp.CSS(`a[href="/settings/api-keys"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#name`)),
	)
	shot(t, ctx, "api-keys-empty")
	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS(`#name`), "crm-sync"),
		chromedp.SetValue(chromedp.CSS(`#type`), "API"),
		chromedp.Click(chromedp.CSS(`form[action="/settings/api-keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)),
	)
	secret, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#secret`)))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret, "aiu_"), secret)
	require.Contains(t, text(t, ctx, ".notice"), "shown only this once")
	shot(t, ctx, "api-key-created")
	status, _ := e.api(t, http.MethodGet, "/organisations", secret, "")
	require.Equal(t, http.StatusOK, status)

	// Revoke: open the confirmation, then confirm.
	do(t, ctx,
		chromedp.Navigate(e.url+"/settings/api-keys"),
		chromedp.Click(chromedp.CSS(`details.confirm summary`)),
		chromedp.Click(chromedp.CSS(`details.confirm button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, ctx, ".notice"), "revoked")
	status, _ = e.api(t, http.MethodGet, "/organisations", secret, "")
	require.Equal(t, http.StatusUnauthorized, status, "the next API call after revocation")
	// The key's last use: the organisation API, before its revocation; a
	// key with a name of 200 characters, never used.
	_, err = e.orgs.CreateKey(t.Context(), org.KeyCreate{OrganisationID: e.org.ID, Name: strings.Repeat("Key", 66) + "!!", Type: org.KeyTypeAPI}, admin)
	require.NoError(t, err)
	do(t, ctx, chromedp.Navigate(e.url+"/settings/api-keys"), chromedp.WaitVisible(chromedp.CSS(`td.lastused`)))
	used := text(t, ctx, `tr:has(td.lastused) + tr td.lastused`)
	require.Contains(t, used, "organisation API")
	require.Contains(t, used, " UTC")
	require.Equal(t, "never used", text(t, ctx, `td.lastused`), "the newest key first")
	shot(t, ctx, "api-keys")
	createIngestionKey(t, ctx, e.url, "laptops")
	shot(t, ctx, "ingestion-key-created")

	// The pages at a phone's width: nothing scrolls sideways.
	phone := newBrowser(t, 390, 844)
	signInBrowser(t, phone, e.url, "ada@acme.test")
	for _, path := range []string{"/", "/settings/api-keys", "/settings/users", "/review"} {
		do(t, phone, chromedp.Navigate(e.url+path), chromedp.WaitVisible(chromedp.CSS(`h1`)))
		shot(t, phone, "phone-"+strings.Trim(strings.ReplaceAll(path, "/", "-"), "-")+map[bool]string{true: "overview"}[path == "/"])
		overflow, err := chromedp.Run(phone, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		require.NoError(t, err)
		require.False(t, overflow, "%s scrolls sideways at a phone's width", path)
	}
	createIngestionKey(t, phone, e.url, "phones")
	shot(t, phone, "phone-ingestion-key-created")
}

// createIngestionKey creates an Ingestion key named name on the API keys page
// of the dashboard at base, and requires what to paste beside its secret,
// with the key.
func createIngestionKey(t *testing.T, ctx context.Context, base, name string) {
	t.Helper()
	do(t, ctx,
		chromedp.Navigate(base+"/settings/api-keys"),
		chromedp.WaitVisible(chromedp.CSS(`#name`)),
		chromedp.SendKeys(chromedp.CSS(`#name`), name),
		chromedp.SetValue(chromedp.CSS(`#type`), "Ingestion"),
		chromedp.Click(chromedp.CSS(`form[action="/settings/api-keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#otelenv`)),
	)
	secret, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#secret`)))
	require.NoError(t, err)
	env, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#otelenv`)))
	require.NoError(t, err)
	require.Contains(t, env, `OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer `+secret+`"`)
	settings, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#ccsettings`)))
	require.NoError(t, err)
	require.Contains(t, settings, `"CLAUDE_CODE_ENABLE_TELEMETRY": "1"`)
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
	key, err := e.orgs.CreateKey(ctx, org.KeyCreate{OrganisationID: e.org.ID, Name: "bot", Type: org.KeyTypeAPI}, admin)
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
	require.Contains(t, text(t, b, ".tiles"), "1\nreview task waits for a person")
	shot(t, b, "overview")
	keysLinks, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll('a[href="/settings/api-keys"]').length`))
	require.NoError(t, err)
	require.Zero(t, keysLinks, "a Reviewer is offered no key settings")
	do(t, b,
		chromedp.Click(chromedp.CSS(`a[href="/review"]`)),
		chromedp.WaitVisible(chromedp.CSS(`article.task`)),
	)
	require.Equal(t, "Project Falcon", text(t, b, "article.task mark"))
	shot(t, b, "review")
	do(t, b,
		chromedp.SendKeys(chromedp.CSS(`article.task textarea`), "After the announcement."),
		chromedp.Click(chromedp.CSS(`article.task button[value=approve]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	require.Contains(t, text(t, b, ".notice"), "approved")

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ds, err := rcv.WaitAcknowledged(wctx, 1)
	require.NoError(t, err)
	require.Equal(t, spec.EventTaskCompleted, ds[0].Type)
	require.Contains(t, string(ds[0].Body), `"status":"approved"`)
	got, err := e.review.Task(ctx, e.org.ID, task.ID)
	require.NoError(t, err)
	require.Equal(t, "rex@acme.test", got.Decision.Reviewer)
	require.Equal(t, "After the announcement.", got.Decision.Comment)
}
