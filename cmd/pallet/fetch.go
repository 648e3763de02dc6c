package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/build"
)

func fetchCmd() *cobra.Command {
	var (
		file      string
		platforms []string
		images    []string
		args      []string
		mirror    mirrorFlags
		lim       limitFlags
		quiet     bool
	)
	cmd := &cobra.Command{
		Use:   "fetch --mirror DIR",
		Short: "Download every pinned release and source a recipe could use into a mirror, for offline builds",
		Example: `  pallet fetch -f examples/kind-base/pallet.yaml --mirror /srv/pallet-mirror
  pallet build -f examples/kind-base/pallet.yaml --offline --mirror /srv/pallet-mirror`,
		Args: fileArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mirror.dir == "" {
				return fmt.Errorf("--mirror DIR is required")
			}
			logf := func(format string, a ...any) {
				if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...)
				}
			}
			overrides, err := parseArgs(args)
			if err != nil {
				return err
			}
			flagLim, err := lim.limits(cmd.Flags())
			if err != nil {
				return err
			}
			dir := mirror.dir
			mirror.dir = "" // fetch from upstream (or --mirror-url)
			n, err := mirror.network()
			if err != nil {
				return err
			}
			arts, recipeLim, err := fetchable(cmd.Context(), build.Options{Network: n, Limits: flagLim}, file, overrides, platforms, images)
			if err != nil {
				return err
			}
			if err := build.Mirror(cmd.Context(), arts, recipeLim, dir, n, flagLim, logf); err != nil {
				return err
			}
			logf("mirrored what %d artifact request(s) need (downloads, repositories, Go modules and toolchains) into %s", len(arts), dir)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "file", "f", "pallet.yaml", "recipe file, or a Dockerfile (Dockerfile, NAME.Dockerfile, Dockerfile.NAME; Containerfile alike)")
	fl.StringSliceVar(&platforms, "platform", nil, "only these platforms (os/arch[/variant] or an OS; repeatable or comma-separated)")
	fl.StringSliceVar(&images, "image", nil, "only these images")
	fl.StringArrayVar(&args, "arg", nil, "override a recipe arg (K=V, repeatable)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	// Not build's mirror flags: here --mirror is what is filled, and
	// --offline, which would fetch nothing, is no flag at all (it was
	// taken, and ignored, and the network used).
	fl.StringVar(&mirror.dir, "mirror", "", "the mirror directory to fill (created if missing): downloads under sha256/, repositories under git/, Go modules and toolchains under gomod/")
	// A build's bounds, so that fetch refuses what the build would.
	lim.register(fl)
	fl.StringVar(&mirror.url, "mirror-url", "", "fetch downloads (BASE/sha256/DIGEST) and repositories (BASE/git/...) from this mirror instead of upstream")
	return cmd
}
