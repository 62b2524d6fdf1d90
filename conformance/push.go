package conformance

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// The push checks: the other transport of the interface, checked from the
// receiving end. A [PushReceiver] is a push receiver a vendor points its
// pusher at for a while; it answers some deliveries 500 and 429 on purpose
// and expects them again, and its report has the shape of [Run]'s.

// MaxPushBody is the largest push body a receiver must accept.
const MaxPushBody = 5 << 20

// PushCatalogue is every check of the push receiver, in report order.
var PushCatalogue = []Check{
	{
		ID: "PUSH-01", Level: LevelMust, Title: "deliveries arrive",
		Sends:    `Listens for the whole run and answers every POST.`,
		Requires: `At least one delivery arrives during the run.`,
		Rule:     `"Webhooks are an acceptable transport." Kit decision: a pusher sends what changed without being asked; a run that receives nothing checks nothing.`,
	},
	{
		ID: "PUSH-02", Level: LevelMust, Title: "deliveries are JSON POSTs of at most 5 MiB",
		Sends:    `Reads every request.`,
		Requires: `Each request is a POST with Content-Type application/json and a body of at most 5 MiB (a larger one is answered 413).`,
		Rule:     `Kit decision: a delivery is one POST of a JSON body; a receiver accepts bodies up to 5 MiB.`,
	},
	{
		ID: "PUSH-03", Level: LevelMust, Title: "Standard Webhooks headers are present and well formed",
		Sends:    `Reads the headers of every delivery.`,
		Requires: `webhook-id (1 to 256 bytes, no full stop, white space or control character), webhook-timestamp (decimal Unix seconds) and webhook-signature are present.`,
		Rule:     `Kit decision: deliveries follow the Standard Webhooks specification, version 1 (symmetric).`,
	},
	{
		ID: "PUSH-04", Level: LevelMust, Title: "signatures verify with the secret",
		Sends:    `Computes the HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}" under the secret given to the receiver.`,
		Requires: `A "v1," signature of webhook-signature matches. A delivery that does not verify is answered 401 and checked no further.`,
		Rule:     `Kit decision: the signature is "v1," and the base64 HMAC-SHA256 of the id, the timestamp and the raw body, under the base64-decoded key after "whsec_".`,
	},
	{
		ID: "PUSH-05", Level: LevelMust, Title: "timestamps are within 5 minutes",
		Sends:    `Compares webhook-timestamp with the receiver's clock.`,
		Requires: `Each timestamp is within 5 minutes of the receiver's clock: a retry is stamped when it is sent, not when the delivery was queued.`,
		Rule:     `Kit decision: receivers refuse timestamps more than 5 minutes away, to defeat replays.`,
	},
	{
		ID: "PUSH-06", Level: LevelMust, Title: "bodies match the push-delivery envelope",
		Sends:    `Decodes every authentic body.`,
		Requires: `One JSON object: type "records", resource one of conversations, assistants, events and usage, records an array of 1 to 1000 items.`,
		Rule:     `Kit decision: {"type": "records", "resource", "records"}, one resource per delivery (schema push-delivery).`,
	},
	{
		ID: "PUSH-07", Level: LevelMust, Title: "every record matches its schema",
		Sends:    `Validates every record of every authentic delivery against the schema of its resource, in strict mode.`,
		Requires: `Every record validates: exactly the JSON REST serves, a deleted conversation as its tombstone.`,
		Rule:     `Kit decision: a pushed record is exactly the record the REST interface serves.`,
	},
	{
		ID: "PUSH-08", Level: LevelMust, Title: "a delivery answered 500 is sent again",
		Sends:    `Answers the first attempt of the first delivery 500.`,
		Requires: `The same webhook-id arrives again before the run ends. FAIL when it does not; SKIP when no delivery arrived.`,
		Rule:     `Kit decision: delivery is at least once; anything but 2xx is retried with backoff.`,
	},
	{
		ID: "PUSH-09", Level: LevelMust, Title: "a delivery answered 429 is sent again",
		Sends:    `Answers the first attempt of the second delivery 429 with Retry-After: 1.`,
		Requires: `The same webhook-id arrives again before the run ends, not sooner than one second later. FAIL when it does not arrive; WARN when it arrives sooner; SKIP with fewer than two deliveries.`,
		Rule:     `Kit decision: delivery is at least once; anything but 2xx is retried with backoff.`,
	},
	{
		ID: "PUSH-10", Level: LevelMust, Title: "a retry keeps its webhook-id and body",
		Sends:    `Compares every attempt with the earlier attempts of the same webhook-id.`,
		Requires: `Attempts of one webhook-id carry the same body, byte for byte, so a receiver can drop duplicates by id.`,
		Rule:     `Kit decision: the webhook-id identifies the delivery, the same on every retry; a receiver remembers the ids it accepted.`,
	},
}

// PushConfig configures a [PushReceiver].
type PushConfig struct {
	// Secret is the signing secret given to the pusher: "whsec_" and base64.
	Secret string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Progress receives a line per delivery; nil discards.
	Progress io.Writer
}

// PushReceiver receives a pusher's deliveries and checks them. It is an
// [http.Handler]; serve it for the time of the run, then call Report. It is
// safe for concurrent use.
type PushReceiver struct {
	cfg PushConfig

	mu      sync.Mutex
	results map[string][]finding // by check id: what failed
	passes  map[string]int       // by check id: deliveries that passed it
	// bodies holds, by webhook-id, the SHA-256 of the first body: every id
	// of the run is kept (not a bounded memory such as webhook.Verifier's),
	// since PUSH-10 and the retry checks need each one, but not the bodies.
	bodies   map[string][sha256.Size]byte
	refused  map[string]refusal // by webhook-id: the attempts refused on purpose
	order    []string           // webhook-ids in order of first arrival
	requests int
}

type finding struct {
	status   Status
	message  string
	evidence *Evidence
}

type refusal struct {
	status  int
	at      time.Time
	retried bool
	early   bool
}

// NewPushReceiver checks cfg and returns a receiver.
func NewPushReceiver(cfg PushConfig) (*PushReceiver, error) {
	if _, err := webhook.Sign(cfg.Secret, "msg_check", time.Now(), nil); err != nil {
		return nil, fmt.Errorf("conformance: push secret: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return &PushReceiver{cfg: cfg, results: map[string][]finding{}, passes: map[string]int{},
		bodies: map[string][sha256.Size]byte{}, refused: map[string]refusal{}}, nil
}

func (p *PushReceiver) fail(id, msg string, ev *Evidence) {
	p.results[id] = append(p.results[id], finding{status: StatusFail, message: msg, evidence: ev})
}

// ServeHTTP checks one delivery and answers it: 401, 400 or 413 for a
// delivery that fails a check, 500 or 429 on purpose for the first attempt of
// the first two deliveries, 200 otherwise.
func (p *PushReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := p.cfg.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPushBody))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	id := r.Header.Get(webhook.HeaderID)
	ev := &Evidence{Request: r.Method + " " + r.URL.RequestURI() + " webhook-id=" + strconv.Quote(id)}
	fmt.Fprintf(p.cfg.Progress, "delivery %s (%d bytes)\n", id, len(body))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		p.fail("PUSH-02", fmt.Sprintf("the body is larger than %d bytes", MaxPushBody), ev)
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		p.fail("PUSH-02", "the body could not be read: "+err.Error(), ev)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost || mt != "application/json" {
		p.fail("PUSH-02", fmt.Sprintf("%s with Content-Type %q; want POST with application/json", r.Method, r.Header.Get("Content-Type")), ev)
	} else {
		p.passes["PUSH-02"]++
	}
	verr := webhook.Verify(p.cfg.Secret, r.Header, body, now, webhook.DefaultTolerance)
	switch {
	case errors.Is(verr, webhook.ErrID), errors.Is(verr, webhook.ErrTimestamp) && r.Header.Get(webhook.HeaderTimestamp) == "",
		errors.Is(verr, webhook.ErrTimestamp) && !decimal(r.Header.Get(webhook.HeaderTimestamp)),
		errors.Is(verr, webhook.ErrSignature) && r.Header.Get(webhook.HeaderSignature) == "":
		p.fail("PUSH-03", verr.Error(), ev)
		w.WriteHeader(http.StatusUnauthorized)
		return
	case errors.Is(verr, webhook.ErrSignature):
		p.passes["PUSH-03"]++
		p.fail("PUSH-04", verr.Error(), ev)
		w.WriteHeader(http.StatusUnauthorized)
		return
	case errors.Is(verr, webhook.ErrTimestamp):
		p.passes["PUSH-03"]++
		p.passes["PUSH-04"]++
		p.fail("PUSH-05", verr.Error(), ev)
		w.WriteHeader(http.StatusUnauthorized)
		return
	case verr != nil:
		p.fail("PUSH-03", verr.Error(), ev)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	p.passes["PUSH-03"]++
	p.passes["PUSH-04"]++
	p.passes["PUSH-05"]++

	// Retries and idempotency.
	digest := sha256.Sum256(body)
	if first, seen := p.bodies[id]; seen {
		if first != digest {
			p.fail("PUSH-10", "webhook-id "+id+" arrived again with another body", ev)
		} else {
			p.passes["PUSH-10"]++
		}
		if ref, ok := p.refused[id]; ok && !ref.retried {
			ref.retried = true
			ref.early = ref.status == http.StatusTooManyRequests && now.Sub(ref.at) < time.Second
			p.refused[id] = ref
		}
		w.WriteHeader(http.StatusOK) // a duplicate: accepted, nothing more to check
		return
	}
	p.bodies[id] = digest
	p.order = append(p.order, id)

	d, err := spec.DecodePushDelivery(body)
	if err != nil {
		p.fail("PUSH-06", err.Error(), ev)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	p.passes["PUSH-06"]++
	schema, _ := spec.PushRecordSchema(d.Resource)
	bad := false
	for i, rec := range d.Records {
		findings, err := spec.Validate(schema, rec, spec.WithMode(spec.Strict))
		if err != nil {
			p.fail("PUSH-07", fmt.Sprintf("records[%d]: %v", i, err), ev)
			bad = true
			continue
		}
		for _, f := range findings {
			if f.Level == spec.LevelError {
				e := *ev
				e.Pointer = fmt.Sprintf("/records/%d%s", i, f.Pointer)
				p.fail("PUSH-07", fmt.Sprintf("records[%d] (%s): %s", i, schema, f.String()), &e)
				bad = true
			}
		}
	}
	if !bad {
		p.passes["PUSH-07"]++
	}
	switch len(p.order) {
	case 1:
		p.refused[id] = refusal{status: http.StatusInternalServerError, at: now}
		w.WriteHeader(http.StatusInternalServerError)
	case 2:
		p.refused[id] = refusal{status: http.StatusTooManyRequests, at: now}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func decimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Report returns the report of the deliveries received so far, for a
// receiver listening at addr since started.
func (p *PushReceiver) Report(addr string, started time.Time) *Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	rep := &Report{URL: addr, Started: started, Duration: p.cfg.Now().Sub(started), Requests: p.requests, Results: []Result{}}
	for _, c := range PushCatalogue {
		res := Result{ID: c.ID, Level: c.Level, Endpoint: "POST " + addr, Title: c.Title, Rule: c.Rule}
		switch c.ID {
		case "PUSH-01":
			if len(p.order) == 0 && p.requests == 0 {
				res.Status, res.Message = StatusFail, "no delivery arrived during the run"
			} else {
				res.Status, res.Message = StatusPass, fmt.Sprintf("%d requests, %d distinct webhook-ids", p.requests, len(p.order))
			}
		case "PUSH-08", "PUSH-09":
			res.Status, res.Message = p.retryResult(c.ID)
		default:
			fs := p.results[c.ID]
			switch {
			case len(fs) > 0:
				res.Status = StatusFail
				res.Message = fs[0].message
				if len(fs) > 1 {
					res.Message += fmt.Sprintf(" (and %d more)", len(fs)-1)
				}
				res.Evidence = fs[0].evidence
			case p.passes[c.ID] == 0:
				res.Status, res.Message = StatusSkip, "no delivery reached this check"
			default:
				res.Status, res.Message = StatusPass, fmt.Sprintf("%d deliveries", p.passes[c.ID])
			}
		}
		if c.Level == LevelShould && res.Status == StatusFail {
			res.Status = StatusWarn
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}

func (p *PushReceiver) retryResult(id string) (Status, string) {
	want := http.StatusInternalServerError
	if id == "PUSH-09" {
		want = http.StatusTooManyRequests
	}
	var ids []string
	for msg, ref := range p.refused {
		if ref.status == want {
			ids = append(ids, msg)
		}
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return StatusSkip, "no delivery was answered " + strconv.Itoa(want) + " (too few deliveries arrived)"
	}
	ref := p.refused[ids[0]]
	switch {
	case !ref.retried:
		return StatusFail, fmt.Sprintf("webhook-id %s, answered %d, did not arrive again before the run ended", ids[0], want)
	case ref.early:
		return StatusWarn, fmt.Sprintf("webhook-id %s, answered 429 with Retry-After: 1, arrived again within a second", ids[0])
	}
	return StatusPass, fmt.Sprintf("webhook-id %s, answered %d, arrived again", ids[0], want)
}
