package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/aiusage/kit/spec"
)

// The export's index and manifests, decoded and checked against the format
// (docs/export.md) before a walk trusts them.

// ParseIndex decodes and checks index.json: its schema, and sets in
// strictly ascending sequence with manifests at ID/manifest.json.
func ParseIndex(b []byte) (spec.ExportIndex, error) {
	var idx spec.ExportIndex
	if err := checkSchema("export-index", b); err != nil {
		return idx, err
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return idx, err
	}
	for i, s := range idx.Sets {
		if i > 0 && s.Sequence <= idx.Sets[i-1].Sequence {
			return idx, fmt.Errorf("/sets/%d: sequence %d does not follow %d", i, s.Sequence, idx.Sets[i-1].Sequence)
		}
		if s.Manifest != s.ID+"/"+spec.ExportManifestName {
			return idx, fmt.Errorf("/sets/%d: manifest %q is not %s/%s", i, s.Manifest, s.ID, spec.ExportManifestName)
		}
	}
	return idx, nil
}

var fileName = regexp.MustCompile(`^(conversations|assistants|events|usage)\.ndjson\.gz$`)

// ParseManifest decodes and checks a set's manifest: its schema, one file
// per resource named RESOURCE.ndjson.gz, a usage window only on the usage
// file, and from <= to.
func ParseManifest(b []byte) (spec.ExportManifest, error) {
	var m spec.ExportManifest
	if err := checkSchema("export-manifest", b); err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		if seen[f.Resource] {
			return m, fmt.Errorf("/files/%d: a second file of %s", i, f.Resource)
		}
		seen[f.Resource] = true
		if f.Path != f.Resource+".ndjson.gz" || !fileName.MatchString(f.Path) {
			return m, fmt.Errorf("/files/%d/path: %q is not %s.ndjson.gz", i, f.Path, f.Resource)
		}
		if (f.Resource == "usage") != (f.Usage != nil) {
			return m, fmt.Errorf("/files/%d/usage: a usage window belongs to the usage file, and only there", i)
		}
		if f.Usage != nil && !f.Usage.StartAt.Before(f.Usage.EndAt.Time) {
			return m, fmt.Errorf("/files/%d/usage: startAt is not before endAt", i)
		}
	}
	if !m.From.IsZero() && m.From.After(m.To.Time) {
		return m, errors.New("/from: later than /to")
	}
	return m, nil
}

func checkSchema(name string, b []byte) error {
	findings, err := spec.Validate(name, b, spec.WithMode(spec.Lenient))
	if err != nil {
		return err
	}
	if !spec.Valid(findings) {
		return errors.New(findings[0].String())
	}
	return nil
}
