package spec

import (
	"fmt"
	"regexp"
	"time"
)

// ExportFormat is the format member of every export manifest and index: the
// version of the scheduled-export format (docs/export.md).
const ExportFormat = "aiusage-export/1"

// The kinds of an export set.
const (
	// ExportFull is a set holding every record the provider holds.
	ExportFull = "full"
	// ExportIncrement is a set holding what changed since the previous set.
	ExportIncrement = "increment"
)

// ExportManifestName is the name of a set's manifest within the set's
// directory; ExportIndexName the name of the index at the export's root.
const (
	ExportManifestName = "manifest.json"
	ExportIndexName    = "index.json"
)

// ExportManifest is the manifest of one export set (schema
// export-manifest): the files of the set and the window they cover. A set
// exists once its manifest does.
type ExportManifest struct {
	Format    string       `json:"format"`
	ID        string       `json:"id"`
	Sequence  int64        `json:"sequence"`
	Kind      string       `json:"kind"`
	Previous  string       `json:"previous,omitempty"`
	CreatedAt Time         `json:"createdAt"`
	From      Time         `json:"from,omitzero"`
	To        Time         `json:"to"`
	Tenant    string       `json:"tenant,omitempty"`
	Files     []ExportFile `json:"files"`
}

// ExportFile is one file of an export set: the records of one resource, one
// JSON document a line, gzip-compressed.
type ExportFile struct {
	Resource string `json:"resource"`
	Path     string `json:"path"`
	Records  int64  `json:"records"`
	Bytes    int64  `json:"bytes"`
	// SHA256 is the checksum of the compressed file, lowercase hexadecimal.
	SHA256 string `json:"sha256"`
	// Usage describes the buckets of the usage file; nil for other files.
	Usage *ExportUsageWindow `json:"usage,omitempty"`
}

// ExportUsageWindow is the range of usage buckets an export file holds:
// every non-empty bucket of Granularity and GroupBy in [StartAt, EndAt).
type ExportUsageWindow struct {
	StartAt     Time     `json:"startAt"`
	EndAt       Time     `json:"endAt"`
	Granularity string   `json:"granularity"`
	GroupBy     []string `json:"groupBy"`
}

// ExportIndex is index.json at the root of an export (schema export-index):
// the published sets in ascending sequence.
type ExportIndex struct {
	Format    string           `json:"format"`
	UpdatedAt Time             `json:"updatedAt"`
	Sets      []ExportIndexSet `json:"sets"`
}

// ExportIndexSet names one published set in an [ExportIndex].
type ExportIndexSet struct {
	ID       string `json:"id"`
	Sequence int64  `json:"sequence"`
	Kind     string `json:"kind"`
	// Manifest is the manifest's path relative to the export's root.
	Manifest string `json:"manifest"`
}

var exportSetID = regexp.MustCompile(`^[0-9]{12}-[0-9]{8}T[0-9]{9}Z$`)

// ExportSetID returns the id of the set of sequence seq created at t: the
// sequence in 12 digits, then t in UTC to the millisecond, for example
// 000000000042-20260309T101500123Z. Ids sort as their sequences do.
func ExportSetID(seq int64, t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%012d-%s%03dZ", seq, t.Format("20060102T150405"), t.Nanosecond()/int(time.Millisecond))
}

// CheckExportSetID returns an error when id is not the form of
// [ExportSetID]: an id is also a directory name, so nothing else is
// accepted.
func CheckExportSetID(id string) error {
	if !exportSetID.MatchString(id) {
		return fmt.Errorf("set id %q is not of the form 000000000042-20260309T101500123Z", id)
	}
	return nil
}
