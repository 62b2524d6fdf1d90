package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// errorModel is where the kit's one error model lives: the one client-facing
// error type (spec.Error) and the one table between error kinds and HTTP
// statuses each way (spec.StatusOf, spec.KindOf).
const errorModel = "spec/errors.go"

// TestOneErrorModel searches the module's non-test Go files for a second
// error model: a struct type with an Error method and a field named Kind or
// Code (an error that tells clients its kind or code), and a switch that
// maps error kinds to HTTP statuses, or statuses to kinds, in two cases or
// more. Each exists once, in spec/errors.go; a caller keeps its nuance
// (a 429 read as unavailable) beside its call of spec.KindOf or
// spec.StatusOf.
func TestOneErrorModel(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	found, err := errorModels(root)
	require.NoError(t, err)
	require.Equal(t, []string{
		errorModel + ": type Error, a client-facing error",
	}, found)
}

// TestErrorModelsCatches checks that errorModels finds each kind of second
// model.
func TestErrorModelsCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import ("errors"; "net/http")

var ErrA, ErrB = errors.New("a"), errors.New("b")

type Failure struct{ Code string }

func (f *Failure) Error() string { return f.Code }

type plain struct{ Kind error }

func toStatus(err error) int {
	switch {
	case errors.Is(err, ErrA):
		return http.StatusBadRequest
	case errors.Is(err, ErrB):
		return http.StatusNotFound
	}
	return 500
}

func toKind(status int) (kind error) {
	switch status {
	case http.StatusBadRequest:
		kind = ErrA
	case 404, 410:
		kind = ErrB
	}
	return kind
}

func notATable(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "bad"
	case http.StatusNotFound:
		return "none"
	}
	return ""
}
`
	require.NoError(t, os.Mkdir(filepath.Join(dir, "p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(src), 0o644))
	found, err := errorModels(dir)
	require.NoError(t, err)
	require.Equal(t, []string{
		"p/p.go: type Failure, a client-facing error",
		"p/p.go:14: a table from error kinds to HTTP statuses",
		"p/p.go:24: a table from HTTP statuses to error kinds",
	}, found)
}

// errorModels returns the client-facing error types and the kind/status
// tables of the non-test Go files under root, as "file: what" lines.
func errorModels(root string) ([]string, error) {
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, name := range clientErrors(f) {
			found = append(found, rel+": type "+name+", a client-facing error")
		}
		if rel == errorModel {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sw, ok := n.(*ast.SwitchStmt); ok {
				if what := statusTable(sw); what != "" {
					found = append(found, rel+":"+strconv.Itoa(fset.Position(sw.Pos()).Line)+": "+what)
				}
			}
			return true
		})
		return nil
	})
	return found, err
}

// clientErrors returns the struct types of f that have an Error method and
// a field named Kind or Code. (An Error method in another file of the
// package is missed; the kit keeps a type's Error method beside it.)
func clientErrors(f *ast.File) []string {
	methods := map[string]bool{}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || fd.Name.Name != "Error" || len(fd.Recv.List) != 1 {
			continue
		}
		typ := fd.Recv.List[0].Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if id, ok := typ.(*ast.Ident); ok {
			methods[id.Name] = true
		}
	}
	var names []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok || !methods[ts.Name.Name] {
				continue
			}
			for _, field := range st.Fields.List {
				for _, name := range field.Names {
					if name.Name == "Kind" || name.Name == "Code" {
						names = append(names, ts.Name.Name)
					}
				}
			}
		}
	}
	return names
}

// statusTable says what table sw is: two cases or more that map error kinds
// (errors.Is, an error kind or an error code) to HTTP statuses, returning or
// assigning an http.Status constant; or two or more that map HTTP statuses
// (http.Status constants or numbers from 100 to 599) to error kinds.
func statusTable(sw *ast.SwitchStmt) string {
	toStatus, toKind := 0, 0
	for _, stmt := range sw.Body.List {
		cc := stmt.(*ast.CaseClause)
		if len(cc.List) == 0 {
			continue
		}
		results := resultsOf(cc.Body)
		switch {
		case anyOf(cc.List, mentionsKind) && anyOf(results, isStatus):
			toStatus++
		case anyOf(cc.List, mentionsStatus) && anyOf(results, isKind):
			toKind++
		}
	}
	switch {
	case toStatus >= 2:
		return "a table from error kinds to HTTP statuses"
	case toKind >= 2:
		return "a table from HTTP statuses to error kinds"
	}
	return ""
}

// resultsOf returns the expressions the statements return or assign.
func resultsOf(body []ast.Stmt) []ast.Expr {
	var out []ast.Expr
	for _, s := range body {
		switch s := s.(type) {
		case *ast.ReturnStmt:
			out = append(out, s.Results...)
		case *ast.AssignStmt:
			out = append(out, s.Rhs...)
		}
	}
	return out
}

func anyOf(es []ast.Expr, f func(ast.Expr) bool) bool {
	for _, e := range es {
		if f(e) {
			return true
		}
	}
	return false
}

// mentionsStatus reports whether e holds an HTTP status: an http.Status
// constant or an integer from 100 to 599.
func mentionsStatus(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			found = found || isStatus(n)
		case *ast.BasicLit:
			if v, err := strconv.Atoi(n.Value); n.Kind == token.INT && err == nil && v >= 100 && v < 600 {
				found = true
			}
		}
		return !found
	})
	return found
}

// isStatus reports whether e is an http.Status constant.
func isStatus(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "http" && strings.HasPrefix(sel.Sel.Name, "Status")
}

// mentionsKind reports whether e holds an error kind: a call of errors.Is
// or errors.As, an error kind or an error code.
func mentionsKind(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				pkg, ok := sel.X.(*ast.Ident)
				found = found || ok && pkg.Name == "errors" && (sel.Sel.Name == "Is" || sel.Sel.Name == "As")
			}
		case *ast.Ident:
			found = found || named(n.Name, "Err") || named(n.Name, "Code")
		}
		return !found
	})
	return found
}

// isKind reports whether e names an error kind: ErrX or pkg.ErrX.
func isKind(e ast.Expr) bool {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		e = sel.Sel
	}
	id, ok := e.(*ast.Ident)
	return ok && named(id.Name, "Err")
}

// named reports whether name is prefix followed by a capital letter
// (ErrInvalid, CodeNotFound).
func named(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	return ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z'
}
