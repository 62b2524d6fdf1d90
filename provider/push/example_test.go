package push_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/provider/push"
	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/webhook"
)

// Push a provider's conversations to a receiver that checks each
// delivery's signature. A pusher that runs for good calls [push.Pusher.Run]
// instead of Scan and Wait.
func Example() {
	ctx := context.Background()
	secret := webhook.NewSecret()

	// The receiver: it checks the signature, then keeps the records.
	var mu sync.Mutex
	received := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var d spec.PushDelivery
		if err := json.Unmarshal(body, &d); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		received[d.Resource] += len(d.Records)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	// The vendor's data, and the database where the pusher keeps its
	// watermarks and its queue.
	src := memsource.New()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"c1", "c2"} {
		if err := src.UpsertConversation(ctx, "acme", spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at)}); err != nil {
			log.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "push")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	p, err := push.New(ctx, push.Config{DatabaseURL: "sqlite:" + filepath.Join(dir, "vendor.db"), Source: src, Tenant: "acme",
		URL: recv.URL, Secret: secret, Resources: []string{"conversations"}})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	if err := p.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer p.Stop(context.WithoutCancel(ctx))

	start := time.Now()
	res, err := p.Scan(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued:", res.Records["conversations"], "records in", res.Deliveries["conversations"], "delivery")
	out, err := p.Wait(ctx, start, 20*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println("given up:", out.GivenUp, "received:", received["conversations"])
	// Output:
	// queued: 2 records in 1 delivery
	// given up: 0 received: 2
}
