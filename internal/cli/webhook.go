package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/aiusage/kit/spec/webhook"
)

func webhookCommand() *command {
	return &command{
		name:    "webhook",
		summary: "receive the service's webhooks: a listener that checks signatures",
		subs:    []*command{webhookListenCommand()},
	}
}

type webhookListenFlags struct {
	serverFlags
	secret    string
	tolerance time.Duration
}

func webhookListenCommand() *command {
	f := &webhookListenFlags{}
	return &command{
		name:    "listen",
		summary: "receive webhook deliveries, check their signatures and print them",
		long: `Listens on ADDR for webhook deliveries of the review-task API (any path),
checks each one's Standard Webhooks signature (webhook-id, webhook-timestamp,
webhook-signature) with --secret, the whsec_ secret the service answered when
the webhook was registered, and prints every delivery as one JSON line on
standard output:

  {"id", "type", "taskId", "status", "verified": true, "timestamp", "data": <the task>}

A verified delivery is answered 204; one whose signature or timestamp does not
verify is answered 401, printed with "verified": false and the reason, and
retried by the service. A delivery whose webhook-id was already accepted (a
retry whose answer was lost, or a replay) is answered 204 and not printed
again; the listener remembers the last 10,000 ids, each while its timestamp
is within --tolerance. For trying the service out locally: register the
webhook with an http://127.0.0.1:PORT/ URL on a service started with
--allow-private-webhooks.

Logs one line with its URL when ready. Stops on SIGINT or SIGTERM.`,
		flags: func(fs *flag.FlagSet) {
			f.register(fs, "127.0.0.1:9000", 5*time.Second)
			fs.StringVar(&f.secret, "secret", "", "the webhook's signing `SECRET` (whsec_...; required)")
			fs.DurationVar(&f.tolerance, "tolerance", webhook.DefaultTolerance, "how far a delivery's timestamp may be from now")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			if f.secret == "" {
				return usagef("%s: --secret is required: the whsec_ secret of the webhook's registration", e.cmd)
			}
			if _, err := webhook.Sign(f.secret, "msg_check", time.Now(), nil); err != nil {
				return usagef("%s: --secret: %v", e.cmd, err)
			}
			log, err := f.logger(e.cmd, e.stderr)
			if err != nil {
				return err
			}
			printer, err := webhookPrinter(f.secret, f.tolerance, e.stdout)
			if err != nil {
				return usagef("%s: %v", e.cmd, err)
			}
			return f.serve(ctx, log, printer, serveHooks{}, "webhook listener ready")
		},
	}
}

// receivedWebhook is what "webhook listen" prints of a delivery.
type receivedWebhook struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	TaskID    string          `json:"taskId,omitempty"`
	Status    string          `json:"status,omitempty"`
	Verified  bool            `json:"verified"`
	Error     string          `json:"error,omitempty"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// webhookPrinter verifies each delivery and prints it as a JSON line, once
// per webhook-id.
func webhookPrinter(secret string, tolerance time.Duration, out io.Writer) (http.Handler, error) {
	v, err := webhook.NewVerifier(secret, &webhook.VerifierOptions{Tolerance: tolerance})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST webhook deliveries here", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		line := receivedWebhook{ID: r.Header.Get(webhook.HeaderID), Timestamp: r.Header.Get(webhook.HeaderTimestamp)}
		verr := v.Verify(r.Header, body)
		if errors.Is(verr, webhook.ErrDuplicate) {
			w.WriteHeader(http.StatusNoContent) // printed when first received
			return
		}
		line.Verified = verr == nil
		if verr != nil {
			line.Error = verr.Error()
		}
		var payload struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(body, &payload) == nil {
			line.Type, line.Data = payload.Type, payload.Data
			var task struct{ ID, Status string }
			_ = json.Unmarshal(payload.Data, &task)
			line.TaskID, line.Status = task.ID, task.Status
		}
		mu.Lock()
		_ = writeJSONLine(out, line)
		mu.Unlock()
		if verr != nil {
			http.Error(w, "signature does not verify", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}), nil
}
