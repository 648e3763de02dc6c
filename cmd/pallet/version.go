package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version describes this binary from its build info: the module version
// `go install ...@vX` stamps, the commit a build from a checkout stamps,
// and the Go that built it.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "pallet (no build info)"
	}
	v, commit, dirty := info.Main.Version, "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	out := "pallet " + v
	if commit != "" {
		out += " commit " + commit + dirty
	}
	return out + " " + info.GoVersion
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pallet's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version())
			return err
		},
	}
}
