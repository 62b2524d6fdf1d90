package push

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/aiusage/kit/spec/webhook"
)

// deliveryArgs is the job of one delivery. Body is kept as bytes (base64 in
// the job's JSON), so every attempt sends, and signs, exactly the same body.
type deliveryArgs struct {
	MsgID    string `json:"msgId"`
	Resource string `json:"resource"`
	Body     []byte `json:"body"`
}

func (deliveryArgs) Kind() string { return "aiusage_push_delivery" }

type deliveryWorker struct {
	river.WorkerDefaults[deliveryArgs]
	p *Pusher
	// retryAfter holds, by job id, the Retry-After of the attempt that just
	// failed, for NextRetry.
	retryAfter sync.Map
}

func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[deliveryArgs]) error {
	err := w.p.send(ctx, job.Args.MsgID, job.Args.Body)
	var refused *RefusedError
	if errors.As(err, &refused) && refused.RetryAfter > 0 {
		w.retryAfter.Store(job.ID, refused.RetryAfter)
	}
	if errors.As(err, &refused) && refused.Final() {
		w.p.cfg.Logger.Warn("push: delivery refused for good, given up", "webhook-id", job.Args.MsgID,
			"resource", job.Args.Resource, "status", refused.Status, "body", refused.Body)
		return river.JobCancel(err)
	}
	if err != nil && job.Attempt >= job.MaxAttempts {
		w.p.cfg.Logger.Warn("push: delivery given up after its last attempt", "webhook-id", job.Args.MsgID,
			"resource", job.Args.Resource, "attempts", job.Attempt, "error", err.Error())
	}
	return err
}

// NextRetry waits RetryBase, doubled per attempt up to RetryMax, drawn at
// random between half of it and all of it, so that pushers that failed
// together do not retry together; and at least the Retry-After the receiver
// asked for, up to an hour.
func (w *deliveryWorker) NextRetry(job *river.Job[deliveryArgs]) time.Time {
	d := w.p.backoff(job.Attempt)
	if v, ok := w.retryAfter.LoadAndDelete(job.ID); ok {
		d = max(d, min(v.(time.Duration), time.Hour))
	}
	return time.Now().Add(d)
}

func (w *deliveryWorker) Timeout(*river.Job[deliveryArgs]) time.Duration {
	return w.p.timeout() + 5*time.Second
}

func (p *Pusher) backoff(attempt int) time.Duration {
	d := p.cfg.RetryMax
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 40 {
		if b := p.cfg.RetryBase << (attempt - 1); b > 0 && b < d {
			d = b
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func (p *Pusher) timeout() time.Duration {
	if p.client.Timeout > 0 {
		return p.client.Timeout
	}
	return 30 * time.Second
}

// RefusedError is an attempt the receiver answered with a status other than
// 2xx.
type RefusedError struct {
	Status int
	// RetryAfter is the wait the receiver asked for with Retry-After
	// (seconds or an HTTP date), at most a day; 0 when it asked for none.
	RetryAfter time.Duration
	// Body is the start of the receiver's answer, for the log.
	Body string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the receiver answered %d: %s", e.Status, e.Body)
}

// Final reports whether the receiver refused the body itself, so that no
// later attempt of the same body can succeed: 400, 410 (the receiver asks for
// no more attempts), 413 and 422. Any other status is retried.
func (e *RefusedError) Final() bool {
	switch e.Status {
	case http.StatusBadRequest, http.StatusGone, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// send makes one attempt: a signed POST of body under msgID, stamped with
// the wall clock (not Config.Now: the receiver compares the timestamp with its
// own clock).
func (p *Pusher) send(ctx context.Context, msgID string, body []byte) error {
	r := webhook.Send(ctx, p.client, webhook.Message{URL: p.cfg.URL, Secret: p.cfg.Secret, ID: msgID,
		Timestamp: time.Now(), Body: body})
	switch r.Outcome {
	case webhook.NotSent, webhook.NoAnswer:
		return r.Err
	case webhook.Delivered:
		return nil
	case webhook.Redirected:
		to := "elsewhere"
		if r.Location != nil {
			to = r.Location.Host
		}
		return &RefusedError{Status: r.Status, Body: "a redirect to " + to +
			", not followed: set the push URL to the receiver's own address"}
	}
	return &RefusedError{Status: r.Status, Body: r.Answer, RetryAfter: r.RetryAfter}
}

// Outcome counts the deliveries of this pusher's queue by how they ended.
type Outcome struct {
	// Pending counts the deliveries not yet acknowledged nor given up.
	Pending int
	// GivenUp counts the deliveries given up (refused for good, or out of
	// attempts) since the time passed to [Pusher.Outcome].
	GivenUp int
}

var pendingStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}

// Outcome counts the deliveries pending, and those given up since since.
func (p *Pusher) Outcome(ctx context.Context, since time.Time) (Outcome, error) {
	var o Outcome
	n, err := p.count(ctx, pendingStates, time.Time{})
	if err != nil {
		return o, err
	}
	o.Pending = n
	if o.GivenUp, err = p.count(ctx, []rivertype.JobState{rivertype.JobStateCancelled, rivertype.JobStateDiscarded}, since); err != nil {
		return o, err
	}
	return o, nil
}

func (p *Pusher) count(ctx context.Context, states []rivertype.JobState, finalizedSince time.Time) (int, error) {
	n := 0
	params := river.NewJobListParams().Queues(p.queue).States(states...).First(1000)
	for {
		res, err := p.jobs.JobList(ctx, params)
		if err != nil {
			return 0, fmt.Errorf("push: list deliveries: %w", err)
		}
		for _, j := range res.Jobs {
			if finalizedSince.IsZero() || j.FinalizedAt != nil && !j.FinalizedAt.Before(finalizedSince) {
				n++
			}
		}
		if len(res.Jobs) < 1000 || res.LastCursor == nil {
			return n, nil
		}
		params = params.After(res.LastCursor)
	}
}

// Wait returns when no delivery of this pusher's queue is pending, with the
// number given up since since; it looks every interval. The pusher must be
// started.
func (p *Pusher) Wait(ctx context.Context, since time.Time, interval time.Duration) (Outcome, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		o, err := p.Outcome(ctx, since)
		if err != nil || o.Pending == 0 {
			return o, err
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-t.C:
		}
	}
}
