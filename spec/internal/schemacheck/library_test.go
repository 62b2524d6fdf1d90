package schemacheck_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/stretchr/testify/require"

	"github.com/aiusage/kit/spec"
	"github.com/aiusage/kit/spec/internal/schemacheck"
)

// library is the validator the checker shortcuts: the embedded schemas
// compiled with jsonschema/v6 as package spec compiles them, with the
// locations of the kit's keywords that decide whether an error of the
// library is a finding.
type library struct {
	schemas    map[string]*jsonschema.Schema
	extensible map[string]bool // x-extensible-enum, by schema location
	messages   map[string]bool // x-message, by schema location
}

var loadLibrary = sync.OnceValues(func() (*library, error) {
	l := &library{schemas: map[string]*jsonschema.Schema{}, extensible: map[string]bool{}, messages: map[string]bool{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noRemote{})
	entries, err := fs.ReadDir(spec.SchemaFS(), ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := fs.ReadFile(spec.SchemaFS(), e.Name())
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		id := spec.SchemaBaseURL + e.Name()
		if err := c.AddResource(id, doc); err != nil {
			return nil, err
		}
		l.annotate(id, "", doc)
	}
	for _, name := range spec.Schemas() {
		if l.schemas[name], err = c.Compile(spec.SchemaBaseURL + name + ".json"); err != nil {
			return nil, err
		}
	}
	return l, nil
})

type noRemote struct{}

func (noRemote) Load(url string) (any, error) { return nil, fmt.Errorf("%s is not embedded", url) }

func (l *library) annotate(id, ptr string, v any) {
	switch v := v.(type) {
	case map[string]any:
		loc := id + "#" + ptr
		l.extensible[loc] = v["x-extensible-enum"] == true
		_, l.messages[loc] = v["x-message"].(string)
		for k, child := range v {
			l.annotate(id, ptr+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), child)
		}
	case []any:
		for i, child := range v {
			l.annotate(id, ptr+"/"+strconv.Itoa(i), child)
		}
	}
}

// findsNothing reports whether spec's validation of inst against schema
// name, with the library, returns no finding: the library reports no error,
// or in lenient mode only values outside an extensible enum (which spec
// drops), none of them below an x-message (which spec turns into one error).
func (l *library) findsNothing(t testing.TB, name string, inst any, lenient bool) bool {
	t.Helper()
	err := l.schemas[name].Validate(inst)
	if err == nil {
		return true
	}
	var ve *jsonschema.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	return lenient && l.silent(ve)
}

func (l *library) silent(ve *jsonschema.ValidationError) bool {
	if l.messages[ve.SchemaURL] {
		return false
	}
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			if !l.silent(c) {
				return false
			}
		}
		return true
	}
	_, enum := ve.ErrorKind.(*kind.Enum)
	return enum && l.extensible[ve.SchemaURL]
}

// embedded is the checker's loader of the embedded schemas.
func embedded(url string) ([]byte, error) {
	name, ok := strings.CutPrefix(url, spec.SchemaBaseURL)
	if !ok || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s is not embedded", url)
	}
	return fs.ReadFile(spec.SchemaFS(), name)
}

var checkers sync.Map // schema name -> *schemacheck.Checker

// checker returns the compiled check of schema name.
func checker(t testing.TB, name string) *schemacheck.Checker {
	t.Helper()
	if c, ok := checkers.Load(name); ok {
		return c.(*schemacheck.Checker)
	}
	c, err := schemacheck.Compile(spec.SchemaBaseURL+name+".json", embedded)
	require.NoError(t, err, name)
	checkers.Store(name, c)
	return c
}
