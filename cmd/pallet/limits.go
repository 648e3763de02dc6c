package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// limitFlags are the bounds on inputs a command that downloads takes
// from its flags (build, fetch), each winning over the recipe's limits
// section, so that both read them alike.
type limitFlags struct {
	maxDownload, maxExtract string
	stall, downloadTimeout  time.Duration
}

func (l *limitFlags) register(f *pflag.FlagSet) {
	f.StringVar(&l.maxDownload, "max-download", "", "refuse a download larger than this (bytes, or with KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers of ten; default 16GiB)")
	f.StringVar(&l.maxExtract, "max-extract", "", "refuse an archive that decompresses to more than this (default 16GiB)")
	f.DurationVar(&l.stall, "stall-timeout", 0, "give up a download or registry transfer that moves no byte for this long (default 60s)")
	registerDownloadTimeout(f, &l.downloadTimeout, "a download (its retries included), a pinned commit's git work, a module proxy response or a registry request")
}

// registerDownloadTimeout is the flag of every command that downloads
// (lock's too), or reaches a registry (registryTimeout): one name, one
// parsing, and a help that says what of the command's it bounds.
func registerDownloadTimeout(f *pflag.FlagSet, to *time.Duration, what string) {
	f.DurationVar(to, "download-timeout", 0, "give up "+what+" that has taken this long, however it keeps moving (default 1h)")
}

// registryTimeout gives cmd, a command that reaches registries outside
// a build (inspect, sbom, index create), --download-timeout, and returns
// its context with each registry request held to it, as build.Run holds
// a build's: else a registry trickling a manifest above the stall floor
// held the command for the 1h default.
func registryTimeout(cmd *cobra.Command) func() (context.Context, error) {
	var d time.Duration
	registerDownloadTimeout(cmd.Flags(), &d, "a registry request")
	return func() (context.Context, error) {
		total, err := downloadTimeout(cmd.Flags(), d)
		if err != nil {
			return nil, err
		}
		ctx := cmd.Context()
		t := regauth.BoundsOf(ctx)
		t.Total = total
		return regauth.WithBounds(ctx, t), nil
	}
}

// downloadTimeout checks the --download-timeout of f: 0, unset, leaves
// the recipe's.
func downloadTimeout(f *pflag.FlagSet, d time.Duration) (time.Duration, error) {
	if d < 0 || d == 0 && f.Changed("download-timeout") {
		return 0, fmt.Errorf("--download-timeout %s: want a positive duration", d)
	}
	return d, nil
}

// limits are the bounds the flags of f set; a zero field leaves the
// recipe's.
func (l *limitFlags) limits(f *pflag.FlagSet) (build.Limits, error) {
	var lim build.Limits
	for _, s := range []struct {
		flag, value string
		to          *int64
	}{{"--max-download", l.maxDownload, &lim.MaxDownload}, {"--max-extract", l.maxExtract, &lim.MaxExtract}} {
		if s.value == "" {
			continue
		}
		var err error
		if *s.to, err = recipe.ParseSize(s.value); err != nil {
			return lim, fmt.Errorf("%s: %w", s.flag, err)
		}
	}
	// 0 is the flag's unset value, which leaves the recipe's
	// limits.stall (or 60s); given, it would be passed over as
	// unset, where the flag wins over the recipe.
	if l.stall < 0 || l.stall == 0 && f.Changed("stall-timeout") {
		return lim, fmt.Errorf("--stall-timeout %s: want a positive duration", l.stall)
	}
	lim.Stall = l.stall
	var err error
	lim.DownloadTimeout, err = downloadTimeout(f, l.downloadTimeout)
	return lim, err
}
