package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/source"
)

func buildCmd() *cobra.Command {
	var (
		file        string
		platforms   []string
		outputs     []string
		args        []string
		images      []string
		jobs        int
		compression string
		quiet       bool
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the images of a recipe",
		Example: `  pallet build -f examples/hello/pallet.yaml
  pallet build --platform linux/arm64 --output docker:hello.tar
  pallet build --arg VERSION=1.2.3 --output registry:localhost:5000/hello`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logf := func(format string, a ...any) {
				if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...)
				}
			}
			overrides, err := parseArgs(args)
			if err != nil {
				return err
			}
			// Outputs are checked before any work so a typo costs nothing.
			var targets []output.Target
			for _, o := range outputs {
				t, err := output.Parse(o, output.Options{})
				if err != nil {
					return err
				}
				targets = append(targets, t)
			}
			r, err := recipe.Load(file)
			if err != nil {
				return err
			}
			p, err := plan.New(r, plan.Options{Args: overrides, Platforms: platforms, Images: images})
			if err != nil {
				return err
			}
			work, err := os.MkdirTemp("", "pallet-build-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			fetcher := source.New()
			fetcher.Log = logf
			start := time.Now()
			res, err := build.Run(ctx, p, build.Options{
				Jobs:        jobs,
				WorkDir:     work,
				Compression: layer.Compression(compression),
				Fetcher:     fetcher,
				Log:         logf,
			})
			if err != nil {
				return err
			}
			for _, t := range targets {
				ts := time.Now()
				if err := t.Write(ctx, res.Images); err != nil {
					return fmt.Errorf("output %s: %w", t, err)
				}
				logf("%-50s %6.2fs", "output "+t.String(), time.Since(ts).Seconds())
			}
			logf("built %d image(s) in %.2fs", len(res.Images), time.Since(start).Seconds())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "pallet.yaml", "recipe file")
	f.StringSliceVar(&platforms, "platform", nil, "build only these platforms (os/arch[/variant], repeatable or comma-separated)")
	f.StringArrayVarP(&outputs, "output", "o", []string{"oci:out"}, "where images go: oci:DIR, docker:FILE.tar or registry:REF (repeatable)")
	f.StringArrayVar(&args, "arg", nil, "override a recipe arg (K=V, repeatable)")
	f.StringSliceVar(&images, "image", nil, "build only these images of the recipe")
	f.IntVarP(&jobs, "jobs", "j", 0, "parallel jobs (default: number of CPUs)")
	f.StringVar(&compression, "compression", string(layer.Gzip), "layer compression: gzip or zstd")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

func parseArgs(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--arg %q: want K=V", kv)
		}
		out[k] = v
	}
	return out, nil
}
