package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

// version and commit are set at build time, as make build and make dist do:
//
//	go build -ldflags "-X github.com/aiusage/kit/internal/cli.version=v1.2.3 -X github.com/aiusage/kit/internal/cli.commit=0123abcd" ./cmd/aiusage
var version, commit = "", ""

// Version returns the version of the binary: the one set at build time, else
// the module version from the build information, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Commit returns the commit the binary was built from: the one set at build
// time, else the VCS revision of the build information (with "-dirty" when
// the tree was modified), else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			if modified == "true" {
				rev += "-dirty"
			}
			return rev
		}
	}
	return "unknown"
}

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the version of the aiusage binary and the commit it was built from",
		run: func(_ context.Context, e *env, _ *flag.FlagSet, _ []string) error {
			fmt.Fprintf(e.stdout, "aiusage %s (commit %s)\n", Version(), Commit())
			return nil
		},
	}
}
