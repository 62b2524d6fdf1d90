package export_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aiusage/kit/provider/export"
	"github.com/aiusage/kit/provider/memsource"
	"github.com/aiusage/kit/spec"
)

// Write a full set of a provider's data to a directory, then an increment
// of what changed since.
func Example() {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	src := memsource.New()
	for _, id := range []string{"c1", "c2"} {
		if err := src.UpsertConversation(ctx, "acme", spec.Conversation{ID: id, StartedAt: spec.NewTime(at), UpdatedAt: spec.NewTime(at)}); err != nil {
			log.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "export")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	now := at.Add(time.Hour)
	x, err := export.New(src, export.Config{Dir: dir, Tenant: "acme", Now: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	m, err := x.Write(ctx, export.Auto) // no set yet: a full set
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Sequence, m.Kind)
	for _, f := range m.Files {
		fmt.Println(" ", f.Path, f.Records)
	}

	now = now.Add(time.Hour)
	if err := src.UpsertConversation(ctx, "acme", spec.Conversation{ID: "c3", StartedAt: spec.NewTime(now), UpdatedAt: spec.NewTime(now)}); err != nil {
		log.Fatal(err)
	}
	m, err = x.Write(ctx, export.Auto) // the full set is recent: an increment
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Sequence, m.Kind, "after", m.Previous != "")
	fmt.Println(" ", m.Files[0].Path, m.Files[0].Records)
	// Output:
	// 1 full
	//   conversations.ndjson.gz 2
	//   assistants.ndjson.gz 0
	//   events.ndjson.gz 0
	//   usage.ndjson.gz 0
	// 2 increment after true
	//   conversations.ndjson.gz 1
}
