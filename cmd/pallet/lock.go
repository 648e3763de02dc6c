package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/dockerfile"
	"github.com/pallet-dev/pallet/internal/lock"
)

func lockCmd() *cobra.Command {
	var (
		opt      lock.Options
		quiet    bool
		timeout  time.Duration
		cacheDir string
		noCache  bool
	)
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Pin a recipe's downloads by sha256, its git tags by commit and its Go modules by go.sum hash, writing the pins into the recipe",
		Long: `lock resolves every pin the recipe leaves open: it downloads each URL for
every platform an image places it on (checking it against the checksums
file the recipe names), resolves each git tag to its commit, and fetches
each gomod module version through the module proxy as a build does (the
go command, GOPROXY and the checksum database) for its go.sum hash, then
writes the pins into the recipe, changing no other byte of it. Each
download is kept in the build's cache (--cache-dir), so the build after
lock downloads it no more.

A pin that no longer matches (a moved tag, a re-published download) is
reported and left alone, and nothing is written, unless --update is
given. --check resolves everything, writes nothing, and fails when a pin
is missing or stale: for CI.`,
		Example: `  pallet lock -f pallet.yaml
  pallet lock --artifact cni --platform linux/arm64
  pallet lock --check            # in CI
  pallet lock --update           # after checking why a tag moved`,
		Args: fileArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dockerfile.IsDockerfile(opt.File) {
				return fmt.Errorf("%s is a Dockerfile; pallet lock pins a recipe (pallet.yaml)", opt.File)
			}
			if opt.Check && opt.Update {
				return fmt.Errorf("--check writes nothing; drop --update, or --check")
			}
			logf := func(format string, a ...any) {
				if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...)
				}
			}
			d, err := downloadTimeout(cmd.Flags(), timeout)
			if err != nil {
				return err
			}
			if !noCache {
				// The build's cache: what lock downloads is there for
				// the build after it, which then downloads none of it.
				if cacheDir == "" {
					if cacheDir, err = cache.DefaultDir(); err != nil {
						return err
					}
				}
				if opt.Cache, err = cache.Open(cacheDir); err != nil {
					return err
				}
				defer opt.Cache.Close()
			}
			opt.Fetcher = artifact.New()
			defer opt.Fetcher.Close()
			// The recipe's limits.download-timeout, unless given.
			opt.Fetcher.Limits.DownloadTimeout = d
			opt.Fetcher.Log = logf
			opt.Log = logf
			rep, err := lock.Run(cmd.Context(), opt)
			if err != nil {
				// Pins written, others left to the author (a gomod
				// section's commit): both are said.
				if rep != nil && rep.Written {
					logf("wrote %d pin(s) into %s", len(rep.Findings), opt.File)
				}
				return err
			}
			switch {
			case rep.Written:
				logf("wrote %d pin(s) into %s", len(rep.Findings), opt.File)
			default:
				logf("%d pin(s) checked, all current", rep.Current)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opt.File, "file", "f", "pallet.yaml", "recipe file")
	f.StringSliceVar(&opt.Artifacts, "artifact", nil, "only these artifacts (repeatable or comma-separated)")
	f.StringSliceVar(&opt.Platforms, "platform", nil, "only these platforms (os/arch[/variant] or an OS; repeatable or comma-separated)")
	f.BoolVar(&opt.Check, "check", false, "write nothing; fail if a pin is missing or stale")
	f.BoolVar(&opt.Update, "update", false, "re-pin pins that no longer match (moved tags, re-published downloads)")
	f.StringVar(&cacheDir, "cache-dir", "", "cache directory to keep the downloads in for the build (default: $PALLET_CACHE_DIR or the user cache dir)")
	f.BoolVar(&noCache, "no-cache", false, "keep no download: the build downloads each again")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors")
	registerDownloadTimeout(f, &timeout, "a download (its retries included), a tag lookup or a module proxy response")
	return cmd
}
