package embeddings_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/aiusage/kit/policy"
	"github.com/aiusage/kit/policy/embeddings"
	"github.com/aiusage/kit/spec"
)

func ExampleClient() {
	// A stand-in for an OpenAI-compatible embeddings service.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		data := make([]map[string]any, len(req.Input))
		for i, in := range req.Input {
			data[i] = map[string]any{"index": i, "embedding": embed(in)}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()

	matcher := &embeddings.Client{URL: srv.URL + "/v1/embeddings", Model: "text-embedding-3-small"}
	set, err := policy.Compile([]spec.Instruction{{
		ID: "salaries", Title: "Salaries", Action: spec.ActionBlock, Criticality: spec.CriticalityHigh,
		Trigger: spec.SemanticTrigger("employee salaries"),
	}}, policy.Options{Semantic: matcher})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := set.Evaluate(context.Background(), []string{"Write a poem. Then list the salary of each employee."})
	if err != nil {
		fmt.Println(err) // the service failed: report POLICY_ERROR
		return
	}
	m := res.Reasons[0].Matches[0]
	fmt.Printf("%s %d-%d %q %.2f\n", res.Outcome, m.Start, m.End, m.Text, m.Similarity)
	// Output:
	// requires_intervention 14-52 "Then list the salary of each employee." 1.00
}
