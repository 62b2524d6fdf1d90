// Package cli holds the subcommands of the aiusage binary. cmd/aiusage only
// calls [Run]; tests call it too, in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and found a failure (an invalid document, a failed check)
	ExitUsage   = 2 // the command line or the configuration is wrong
)

// env is what a command may use of its process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// cmd is the name of the running command, its path in the tree without
	// the program: "provider serve". Commands start their messages with it.
	cmd string
}

// command is one node of the command tree. A command has either run or subs.
type command struct {
	name    string
	summary string
	// args is the synopsis of the positional arguments, for the usage line.
	// A command without one takes no positional arguments: runLeaf refuses
	// them before it runs.
	args string
	// long is more help text, shown by "aiusage help COMMAND".
	long string
	// flags declares the command's flags on fs.
	flags func(fs *flag.FlagSet)
	// run executes the command with its positional arguments.
	run  func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error
	subs []*command
}

// usageError is a mistake on the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// exitError ends a command with a code, its message (if any) already printed.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func root() *command {
	return &command{
		name:    "aiusage",
		summary: "the aiusage kit: AI usage data providers, conformance, consumer and oversight service",
		subs: []*command{
			adminCommand(),
			conformanceCommand(),
			consumerCommand(),
			demoCommand(),
			mcpCommand(),
			policyCommand(),
			providerCommand(),
			serviceCommand(),
			specCommand(),
			versionCommand(),
			webhookCommand(),
		},
	}
}

// Run runs the aiusage command line args (without the program name) and
// returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	return run(ctx, e, args)
}

func run(ctx context.Context, e *env, args []string) int {
	r := root()
	err := dispatch(ctx, e, r, []string{r.name}, args)
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "aiusage: %s\n", ue.msg)
		return ExitUsage
	default:
		fmt.Fprintf(e.stderr, "aiusage: %v\n", err)
		return ExitFailure
	}
}

func dispatch(ctx context.Context, e *env, c *command, path, args []string) error {
	if c.run != nil {
		// A command that runs may still have commands under it
		// ("conformance push"), named by its first argument.
		if len(args) > 0 {
			for _, s := range c.subs {
				if s.name == args[0] {
					return dispatch(ctx, e, s, append(path, s.name), args[1:])
				}
			}
		}
		return runLeaf(ctx, e, c, path, args)
	}
	if len(args) == 0 {
		writeHelp(e.stderr, c, path)
		return usagef("%s needs a command", strings.Join(path, " "))
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(e, c, path, args[1:])
	}
	if c.name == "aiusage" && (name == "-version" || name == "--version") {
		name = "version"
	}
	for _, s := range c.subs {
		if s.name == name {
			return dispatch(ctx, e, s, append(path, name), args[1:])
		}
	}
	return usagef("unknown command %q for %s; run '%s help'", name, strings.Join(path, " "), strings.Join(path, " "))
}

// help prints the help of the command named by args under c.
func help(e *env, c *command, path, args []string) error {
	for _, a := range args {
		var next *command
		for _, s := range c.subs {
			if s.name == a {
				next = s
			}
		}
		if next == nil {
			return usagef("unknown command %q for %s", a, strings.Join(path, " "))
		}
		c, path = next, append(path, a)
	}
	writeHelp(e.stdout, c, path)
	return nil
}

func runLeaf(ctx context.Context, e *env, c *command, path, args []string) error {
	fs := newFlagSet(c, path)
	fs.SetOutput(io.Discard)
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		writeHelp(e.stdout, c, path)
		return nil
	}
	name := strings.Join(path[1:], " ")
	if err != nil {
		return usagef("%s: %v", name, err)
	}
	if err := applyEnv(fs, name, e.getenv); err != nil {
		return usagef("%s: %v", name, err)
	}
	if c.args == "" && len(positional) > 0 {
		return usagef("%s takes no arguments, got %q", name, positional[0])
	}
	ce := *e
	ce.cmd = name
	return c.run(ctx, &ce, fs, positional)
}

func newFlagSet(c *command, path []string) *flag.FlagSet {
	fs := flag.NewFlagSet(strings.Join(path, " "), flag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs)
	}
	return fs
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		// fs.Parse stops before the first non-flag, or just after a "--".
		if parsed := args[:len(args)-len(rest)]; len(parsed) > 0 && parsed[len(parsed)-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func writeHelp(w io.Writer, c *command, path []string) {
	name := strings.Join(path, " ")
	if c.run == nil {
		fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s <command> [flags]\n\nCommands:\n", name, c.summary, name)
		subs := append([]*command(nil), c.subs...)
		sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
		if len(path) == 1 {
			subs = append(subs, &command{name: "help", summary: "show the help of a command: aiusage help COMMAND..."})
		}
		for _, s := range subs {
			fmt.Fprintf(w, "  %-12s %s\n", s.name, s.summary)
		}
		fmt.Fprintf(w, "\nRun '%s <command>' for the flags of a command.\n", strings.Join(append([]string{path[0]}, "help"), " ")+strings.TrimPrefix(name, path[0]))
		return
	}
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s [flags]", name, c.summary, name)
	if c.args != "" {
		fmt.Fprintf(w, " %s", c.args)
	}
	fmt.Fprintln(w)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.long))
	}
	fs := newFlagSet(c, path)
	cmd := strings.Join(path[1:], " ")
	n, withEnv := 0, 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if envFor(cmd, f.Name) != "" {
			withEnv++
		}
	})
	if n == 0 {
		return
	}
	if withEnv > 0 {
		fmt.Fprintf(w, "\nFlags ([$VARIABLE]: the environment variable read when the flag is not given):\n")
	} else {
		fmt.Fprintf(w, "\nFlags:\n")
	}
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if kind != "" {
			fmt.Fprintf(w, " %s", kind)
		}
		if v := envFor(cmd, f.Name); v != "" {
			fmt.Fprintf(w, "  [$%s]", v)
		}
		fmt.Fprintf(w, "\n      %s", usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}
