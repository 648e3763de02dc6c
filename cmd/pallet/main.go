// Command pallet builds container images from artifacts, for Linux and
// Windows, without a daemon. The commands are thin: each parses flags and
// hands over to the internal packages.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pallet:", err)
		os.Exit(1)
	}
}

// run executes one pallet command line; tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:           "pallet",
		Short:         "Build container images from artifacts, for Linux and Windows, without a daemon",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(buildCmd(), fetchCmd(), inspectCmd(), schemaCmd(), versionCmd(), authCmd(), indexCmd())
	registerInsecure(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}
