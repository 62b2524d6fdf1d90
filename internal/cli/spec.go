package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aiusage/kit/spec"
)

func specCommand() *command {
	return &command{
		name:    "spec",
		summary: "validate documents against the JSON Schemas, print schemas and OpenAPI documents",
		subs: []*command{
			specValidateCommand(),
			{
				name:    "list",
				summary: "print the names of the JSON Schemas, one per line",
				run: func(_ context.Context, e *env, _ *flag.FlagSet, _ []string) error {
					for _, n := range spec.Schemas() {
						fmt.Fprintln(e.stdout, n)
					}
					return nil
				},
			},
			{
				name:    "schema",
				summary: "print the JSON Schema NAME",
				args:    "NAME",
				run: func(_ context.Context, e *env, _ *flag.FlagSet, args []string) error {
					if len(args) != 1 {
						return usagef("%s needs exactly one schema name; run 'aiusage spec list' for the names", e.cmd)
					}
					b, err := spec.SchemaJSON(args[0])
					if err != nil {
						return usagef("unknown schema %q; known: %s", args[0], strings.Join(spec.Schemas(), ", "))
					}
					_, err = e.stdout.Write(b)
					return err
				},
			},
			specOpenAPICommand(),
		},
	}
}

func specOpenAPICommand() *command {
	var raw *bool
	return &command{
		name:    "openapi",
		summary: "print an OpenAPI 3.1 document: usage, organisation or review",
		args:    "NAME",
		long: `By default the document is bundled: every JSON Schema it uses is copied under
components/schemas, so the output stands alone. --raw prints the source, whose
schemas are references to ../schemas/NAME.json.`,
		flags: func(fs *flag.FlagSet) {
			raw = fs.Bool("raw", false, "print the source document with its relative schema references")
		},
		run: func(_ context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if len(args) != 1 {
				return usagef("%s needs exactly one document name: %s", e.cmd, strings.Join(spec.OpenAPIDocuments(), ", "))
			}
			get := spec.OpenAPI
			if *raw {
				get = spec.OpenAPISource
			}
			b, err := get(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			_, err = e.stdout.Write(b)
			return err
		},
	}
}

func specValidateCommand() *command {
	var schema *string
	var lenient *bool
	return &command{
		name:    "validate",
		summary: "validate JSON documents against a schema",
		args:    "FILE...",
		long: `Each FILE ("-" is standard input) holds one record or, for the record schemas
conversation, assistant, event and usage-bucket, a list envelope
{"data": [...], "hasMore": ..., "nextCursor": ...} whose items are checked too.
Each finding is printed as FILE:POINTER: message, where POINTER is the JSON
pointer of the failing value. Values outside an extensible enum are warnings
(they do not make a document invalid).

Exit status: 0 when every document is valid, 1 when one is not, 2 on a usage
error (unknown schema, unreadable file).`,
		flags: func(fs *flag.FlagSet) {
			schema = fs.String("schema", "", "schema `NAME` to validate against (required; see 'aiusage spec list')")
			lenient = fs.Bool("lenient", false, "accept values outside extensible enums without a warning, as the consumer does")
		},
		run: func(_ context.Context, e *env, _ *flag.FlagSet, files []string) error {
			if *schema == "" {
				return usagef("%s: --schema is required; one of: %s", e.cmd, strings.Join(spec.Schemas(), ", "))
			}
			if _, err := spec.SchemaJSON(*schema); err != nil || *schema == "common" {
				return usagef("%s: unknown schema %q; one of: %s", e.cmd, *schema, strings.Join(spec.Schemas(), ", "))
			}
			if len(files) == 0 {
				return usagef("%s: no FILE given (use - for standard input)", e.cmd)
			}
			mode := spec.Strict
			if *lenient {
				mode = spec.Lenient
			}
			docs := make([][]byte, len(files))
			stdinUsed := false
			for i, f := range files {
				var err error
				if f == "-" {
					if stdinUsed {
						return usagef("%s: standard input (-) given twice", e.cmd)
					}
					stdinUsed = true
					docs[i], err = io.ReadAll(e.stdin)
				} else {
					docs[i], err = os.ReadFile(f)
				}
				if err != nil {
					return usagef("%s: %v", e.cmd, err)
				}
			}
			invalid, errs, warns := 0, 0, 0
			for i, f := range files {
				name := f
				if f == "-" {
					name = "<stdin>"
				}
				findings, err := validateDocument(*schema, docs[i], mode)
				if errors.Is(err, spec.ErrInvalidJSON) {
					fmt.Fprintf(e.stdout, "%s:: %v\n", name, err)
					invalid++
					errs++
					continue
				}
				if err != nil {
					return err
				}
				for _, fd := range findings {
					if fd.Level == spec.LevelWarning {
						warns++
						fmt.Fprintf(e.stdout, "%s:%s: warning: %s\n", name, fd.Pointer, fd.Message)
						continue
					}
					errs++
					fmt.Fprintf(e.stdout, "%s:%s: %s\n", name, fd.Pointer, fd.Message)
				}
				if !spec.Valid(findings) {
					invalid++
				}
			}
			fmt.Fprintf(e.stderr, "%d of %d document(s) invalid against %s: %d error(s), %d warning(s)\n",
				invalid, len(files), *schema, errs, warns)
			if invalid > 0 {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
}

// validateDocument validates data against schema, or against the schema's
// list envelope when data is one.
func validateDocument(schema string, data []byte, mode spec.Mode) ([]spec.Finding, error) {
	if list, ok := spec.ListSchema(schema); ok && looksLikeEnvelope(data) {
		schema = list
	}
	return spec.Validate(schema, data, spec.WithMode(mode))
}

// looksLikeEnvelope reports whether data is an object with any member of the
// list envelope (data, hasMore, nextCursor), none of which a record has: a
// broken envelope is then reported against the envelope schema.
func looksLikeEnvelope(data []byte) bool {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return false
	}
	for _, m := range []string{"data", "hasMore", "nextCursor"} {
		if _, ok := probe[m]; ok {
			return true
		}
	}
	return false
}
