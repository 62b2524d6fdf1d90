package spec

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestOpenAPIBundleGolden pins the bundled OpenAPI documents, so that a change
// to a schema or a document shows up in review as a change of what vendors
// read. Refresh with: go test ./spec -run TestOpenAPIBundleGolden -update
func TestOpenAPIBundleGolden(t *testing.T) {
	t.Parallel()
	for _, name := range OpenAPIDocuments() {
		got, err := OpenAPI(name)
		require.NoError(t, err)
		path := filepath.Join("testdata", "openapi", name+".bundled.yaml")
		if *updateGolden {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, got, 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./spec -run TestOpenAPIBundleGolden -update to create it")
		if string(want) != string(got) {
			t.Errorf("bundled %s differs from %s at %s; refresh with -update if intended", name, path, firstDiff(string(want), string(got)))
		}
	}
}

// firstDiff describes the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d: want %q, got %q", i+1, wl, gl)
		}
	}
	return "no line"
}
