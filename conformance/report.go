package conformance

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// ReadBaseline reads a baseline file: one check id per line; blank lines
// and lines starting with # are ignored, and anything after the id on a line
// is a comment.
func ReadBaseline(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id := strings.Fields(line)[0]
		if !knownIDOrPrefix(id) {
			return nil, fmt.Errorf("%s:%d: unknown check id %q", path, n, id)
		}
		ids = append(ids, id)
	}
	return ids, sc.Err()
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a person: results grouped by endpoint,
// failures with their evidence, and a summary line. color adds ANSI colours.
func (r *Report) WriteText(w io.Writer, color bool) error {
	paint := func(s Status) string {
		if !color {
			return string(s)
		}
		code := map[Status]string{StatusPass: "32", StatusFail: "31", StatusWarn: "33", StatusSkip: "90", StatusError: "35"}[s]
		return "\x1b[" + code + "m" + string(s) + "\x1b[0m"
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "conformance of %s\n", r.URL)
	groups := []string{}
	byGroup := map[string][]Result{}
	for _, res := range r.Results {
		if _, ok := byGroup[res.Endpoint]; !ok {
			groups = append(groups, res.Endpoint)
		}
		byGroup[res.Endpoint] = append(byGroup[res.Endpoint], res)
	}
	for _, g := range groups {
		name := g
		if g == "*" {
			name = "whole run"
		}
		fmt.Fprintf(bw, "\n%s\n", name)
		for _, res := range byGroup[g] {
			mark := ""
			if res.Baselined {
				mark = " (baseline)"
			}
			fmt.Fprintf(bw, "  %-5s %-7s %-6s %s%s\n", paint(res.Status), res.ID, res.Level, res.Title, mark)
			if res.Status == StatusPass {
				continue
			}
			if res.Message != "" {
				fmt.Fprintf(bw, "        %s\n", res.Message)
			}
			if res.Status == StatusFail || res.Status == StatusWarn || res.Status == StatusError {
				if res.Evidence != nil {
					if res.Evidence.Pointer != "" {
						fmt.Fprintf(bw, "        at %s\n", res.Evidence.Pointer)
					}
					if res.Evidence.Curl != "" {
						fmt.Fprintf(bw, "        $ %s\n", res.Evidence.Curl)
					}
					if res.Evidence.Response != "" {
						fmt.Fprintf(bw, "        > %s\n", oneLine(res.Evidence.Response, 200))
					}
				}
				fmt.Fprintf(bw, "        rule: %s\n", res.Rule)
			}
		}
	}
	for _, id := range r.Stale {
		fmt.Fprintf(bw, "\nstale baseline entry: %s no longer fails; remove it from the baseline\n", id)
	}
	c := r.Counts()
	fmt.Fprintf(bw, "\n%d checks: %d passed, %d failed, %d warned, %d skipped, %d errored; %d requests in %s\n",
		len(r.Results), c[StatusPass], c[StatusFail], c[StatusWarn], c[StatusSkip], c[StatusError], r.Requests, r.Duration.Round(1e6))
	return bw.Flush()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// WriteJUnit writes the report as JUnit XML: one test suite per endpoint, a
// test case per result; FAIL and ERROR are failures (a baselined one is
// skipped), SKIP is skipped, WARN passes with its message in system-out.
func (r *Report) WriteJUnit(w io.Writer) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Name    string      `xml:"name,attr"`
		Suites  []testsuite `xml:"testsuite"`
	}
	out := testsuites{Name: "aiusage conformance " + r.URL}
	idx := map[string]int{}
	for _, res := range r.Results {
		i, ok := idx[res.Endpoint]
		if !ok {
			i = len(out.Suites)
			idx[res.Endpoint] = i
			out.Suites = append(out.Suites, testsuite{Name: res.Endpoint})
		}
		s := &out.Suites[i]
		tc := testcase{Name: res.ID + " " + res.Title, Classname: "conformance" + strings.ReplaceAll(res.Endpoint, "/", ".")}
		detail := res.Message
		if res.Evidence != nil {
			detail += "\n" + res.Evidence.Curl + "\n" + res.Evidence.Response
		}
		switch {
		case res.Baselined:
			tc.Skipped = &skipped{Message: "expected failure (baseline): " + res.Message}
			s.Skipped++
		case res.Status == StatusFail || res.Status == StatusError:
			tc.Failure = &failure{Message: res.Message, Type: string(res.Level), Text: detail}
			s.Failures++
		case res.Status == StatusSkip:
			tc.Skipped = &skipped{Message: res.Message}
			s.Skipped++
		case res.Status == StatusWarn:
			tc.SystemOut = "WARN: " + detail
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Test runs the suite and turns each result into a subtest: FAIL (and a MUST
// ERROR) is t.Error, SKIP is t.Skip with its reason, WARN is t.Log. A
// configuration error or an unreachable provider fails t at once.
func Test(t *testing.T, cfg Config) {
	t.Helper()
	rep, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	for _, res := range rep.Results {
		t.Run(res.ID+strings.ReplaceAll(res.Endpoint, "*", "/all"), func(t *testing.T) {
			msg := fmt.Sprintf("%s %s: %s", res.Level, res.Title, res.Message)
			if res.Evidence != nil {
				msg += "\n" + res.Evidence.Curl + "\n" + res.Evidence.Response
			}
			switch {
			case res.Baselined:
				t.Skip("expected failure (baseline): " + msg)
			case res.Status == StatusFail, res.Status == StatusError && res.Level == LevelMust:
				t.Error(msg)
			case res.Status == StatusSkip:
				t.Skip(res.Message)
			case res.Status == StatusWarn, res.Status == StatusError:
				t.Log(msg)
			}
		})
	}
	for _, id := range rep.Stale {
		t.Errorf("stale baseline entry %s: it no longer fails", id)
	}
}
