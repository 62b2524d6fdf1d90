//go:build unix

package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/consumer"
	"github.com/aiusage/kit/consumer/sqlstore"
	"github.com/aiusage/kit/internal/infra/demodata"
	"github.com/aiusage/kit/internal/infra/sqldb"
	"github.com/aiusage/kit/internal/infra/sqldb/sqldbtest"
	"github.com/aiusage/kit/provider"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// The environment of the child process of TestSyncSurvivesSIGKILL.
const (
	killEnvChild    = "AIUSAGE_KILL_CHILD"
	killEnvProvider = "AIUSAGE_KILL_PROVIDER_URL"
	killEnvDatabase = "AIUSAGE_KILL_DATABASE_URL"
	killEnvPageSize = "AIUSAGE_KILL_PAGE_SIZE"
	// killOwner is the child's lease owner: a restarted child takes over
	// the lease its killed predecessor left behind, as a restarted
	// service with a stable owner name would.
	killOwner = "kill-child"
)

// TestKillChild is the child process of TestSyncSurvivesSIGKILL: one
// SyncOnce of the provider at $AIUSAGE_KILL_PROVIDER_URL into the store at
// $AIUSAGE_KILL_DATABASE_URL. Without AIUSAGE_KILL_CHILD=1 it returns at
// once.
func TestKillChild(t *testing.T) {
	if os.Getenv(killEnvChild) != "1" {
		return
	}
	ctx := context.Background()
	pageSize, err := strconv.Atoi(os.Getenv(killEnvPageSize))
	if err != nil {
		t.Fatalf("%s: %v", killEnvPageSize, err)
	}
	store, err := sqlstore.Open(ctx, os.Getenv(killEnvDatabase))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	client, err := consumer.NewClient(consumer.ClientConfig{
		URL: os.Getenv(killEnvProvider), Token: faultToken, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	poller, err := consumer.NewPoller(client, store, &consumer.Config{
		Source: faultSource, Owner: killOwner, PageSize: pageSize,
		Now: func() time.Time { return faultNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("kill-child: sync starts")
	res, err := poller.SyncOnce(ctx)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	for _, rr := range res.Resources {
		if rr.Skipped != "" {
			t.Fatalf("%s skipped: %s", rr.Resource, rr.Skipped)
		}
		fmt.Printf("kill-child: %s: %d pages, %d records, %d walks\n", rr.Resource, rr.Pages, rr.Records, rr.Walks)
	}
}

// killTrigger kills the current child with SIGKILL a random delay after
// its k-th request to the provider.
type killTrigger struct {
	mu    sync.Mutex
	proc  *os.Process
	n, at int
	delay time.Duration
	fired bool
	// quiet stops the changes of the provider during a run.
	quiet bool
}

// TestSyncSurvivesSIGKILL syncs a provider from a child process that is
// killed with SIGKILL at random points of the sync, several times, while
// the provider changes between and during the runs; a last child then
// syncs to the end, and the copy must equal the provider's data exactly.
func TestSyncSurvivesSIGKILL(t *testing.T) {
	if os.Getenv(killEnvChild) == "1" {
		t.Skip("in the child process")
	}
	for i, d := range sqldbtest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			start := time.Now()
			dbURL := sqldbtest.URL(t, d)
			// The parent's own store: it migrates the schema first and reads
			// checkpoints and the export. Closed before the schema is
			// dropped (cleanups run last-in first-out).
			store, err := sqlstore.Open(ctx, dbURL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = store.Close() })

			seed := uint64(21 + i)
			w := faultNewWorld(t, seed, 250)
			rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
			trig := &killTrigger{}
			var served int
			front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				trig.mu.Lock()
				trig.n++
				n := trig.n
				if trig.proc != nil && !trig.fired && n >= trig.at {
					trig.fired = true
					proc := trig.proc
					time.AfterFunc(trig.delay, func() { _ = proc.Kill() })
				}
				served++
				during := served%6 == 0 && !trig.quiet
				trig.mu.Unlock()
				if during { // the provider changes during the run, too
					w.mutate(context.WithoutCancel(ctx), 1)
				}
				w.srv.Config.Handler.ServeHTTP(rw, r)
			}))
			t.Cleanup(front.Close)

			const pageSize = 8
			run := func(killAt int, delay time.Duration) (killed bool, out string) {
				cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1", "-test.timeout=60s")
				cmd.Env = append(os.Environ(),
					killEnvChild+"=1",
					killEnvProvider+"="+front.URL,
					killEnvDatabase+"="+dbURL,
					killEnvPageSize+"="+strconv.Itoa(pageSize),
				)
				var buf bytes.Buffer
				cmd.Stdout, cmd.Stderr = &buf, &buf
				require.NoError(t, cmd.Start())
				trig.mu.Lock()
				trig.proc, trig.n, trig.at, trig.delay, trig.fired = cmd.Process, 0, killAt, delay, false
				trig.mu.Unlock()
				err := cmd.Wait()
				trig.mu.Lock()
				trig.proc = nil
				trig.mu.Unlock()
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
						return true, buf.String()
					}
				}
				require.NoError(t, err, "the child failed:\n%s", buf.String())
				return false, buf.String()
			}

			var kills, midSync, completed int
			for r := 0; r < 10 || midSync < 5; r++ {
				require.Less(t, r, 30, "too few kills landed in the middle of a sync")
				if r > 0 {
					w.mutate(ctx, 25) // between runs
				}
				killAt := 1 + rng.IntN(50)
				delay := time.Duration(rng.IntN(15000)) * time.Microsecond
				killed, out := run(killAt, delay)
				if !killed {
					completed++
					t.Logf("run %d: completed before its kill (request %d + %s):\n%s", r, killAt, delay, out)
					continue
				}
				kills++
				var inProgress []consumer.Resource
				for _, res := range consumer.Resources {
					cp, err := store.Checkpoint(ctx, faultSource, res)
					require.NoError(t, err)
					if cp.InProgress {
						inProgress = append(inProgress, res)
					}
				}
				if len(inProgress) > 0 {
					midSync++
				}
				t.Logf("run %d: killed at request %d + %s; walks in progress: %v", r, killAt, delay, inProgress)
			}

			// A last child syncs to the end, without being killed, while
			// the provider holds still.
			w.mutate(ctx, 25)
			trig.mu.Lock()
			trig.quiet = true
			trig.mu.Unlock()
			killed, out := run(1<<30, 0)
			require.False(t, killed)
			t.Logf("final run:\n%s", out)

			direct := faultClient(t, w.srv.URL)
			for _, r := range consumer.Resources {
				want := faultProviderData(t, ctx, direct, r)
				require.NotEmpty(t, want)
				faultSame(t, r, "export", want, faultExport(t, ctx, store, faultSource, r, false))
			}
			status, err := store.Status(ctx)
			require.NoError(t, err)
			require.Len(t, status, len(consumer.Resources))
			for _, st := range status {
				require.Zero(t, st.Missing, "%s: records marked missing", st.Resource)
				require.Zero(t, st.Quarantined, "%s: records quarantined", st.Resource)
				require.False(t, st.Checkpoint.InProgress, "%s: a walk still in progress", st.Resource)
				require.False(t, st.Checkpoint.NeedsFull, "%s: %s", st.Resource, st.Checkpoint.NeedsFullReason)
			}
			t.Logf("%d kills (%d in the middle of a walk), %d runs completed; %s", kills, midSync, completed, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestKillResumedWalkSeesLateRecords: a sync stopped in the middle of a
// walk (killed, or its context ended) leaves the walk's cursor, and the
// restarted sync resumes the walk from it. A record committed late (stamped
// a minute before the provider's newest record, well within the lookback)
// after the stop, sorting before the cursor, must still be copied by the
// restarted sync, as any sync copies the records committed before it
// started (however far the provider went on before the restart).
func TestKillResumedWalkSeesLateRecords(t *testing.T) {
	sqldbtest.Each(t, func(t *testing.T, db *sqldb.DB) {
		ctx := t.Context()
		store, err := sqlstore.New(ctx, db.DB, sqlstore.Dialect(db.Dialect))
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		src := memsource.New()
		h, err := provider.NewHandler(src, provider.WithTokens(provider.Token{Secret: faultToken, Tenant: faultTenant}))
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		client := faultClient(t, srv.URL)

		base := demodata.DefaultEnd
		write := func(id string, at time.Time) {
			require.NoError(t, src.UpsertConversation(ctx, faultTenant, spec.Conversation{
				ID: "c-" + id, StartedAt: spec.NewTime(at.Add(-time.Minute)), UpdatedAt: spec.NewTime(at), Model: "gpt-test",
			}))
			require.NoError(t, src.AppendEvent(ctx, faultTenant, spec.Event{
				ID: "e-" + id, OccurredAt: spec.NewTime(at), Type: "kill.test",
			}))
		}
		lists := []consumer.Resource{consumer.Conversations, consumer.Events}
		sync := func(stopAfter int) {
			for _, r := range lists {
				sctx, cancel := context.WithCancel(ctx)
				poller, err := consumer.NewPoller(client, store, &consumer.Config{
					Source: faultSource, Owner: killOwner, PageSize: 3, Resources: []consumer.Resource{r},
					Now: func() time.Time { return faultNow },
					OnPage: func(p consumer.PageProgress) {
						if p.Page == stopAfter {
							cancel() // the process dies after this page's commit
						}
					},
				})
				require.NoError(t, err)
				_, err = poller.SyncOnce(sctx)
				cancel()
				if stopAfter == 0 {
					require.NoError(t, err)
				}
			}
		}

		for i := range 5 {
			write(fmt.Sprintf("old-%d", i), base.Add(-2*time.Hour+time.Duration(i)*time.Minute))
		}
		sync(0)
		for i := 1; i <= 9; i++ {
			write(fmt.Sprintf("new-%d", i), base.Add(time.Duration(i)*10*time.Second))
		}
		// The walk of the incremental sync covers the last old records
		// and the new ones, three a page: stopped after its fourth page,
		// its cursor lies at new-7.
		sync(4)
		for _, r := range lists {
			cp, err := store.Checkpoint(ctx, faultSource, r)
			require.NoError(t, err)
			require.True(t, cp.InProgress, "%s: the stopped walk is not in progress", r)
			require.NotEmpty(t, cp.Cursor, "%s", r)
		}
		// Committed late, after the stop: 60 s older than the newest
		// record (lookback 5 minutes), before the cursor. Then the provider
		// goes on for six minutes before the restart.
		write("late", base.Add(30*time.Second))
		for i := 1; i <= 36; i++ {
			write(fmt.Sprintf("after-%02d", i), base.Add(90*time.Second+time.Duration(i)*10*time.Second))
		}
		sync(0) // the restart

		for _, r := range lists {
			want := faultList(t, ctx, client, r, consumer.Query{Limit: 1000})
			faultSame(t, r, "export after the restarted sync", want, faultExport(t, ctx, store, faultSource, r, false))
		}
	})
}
