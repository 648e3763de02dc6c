package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/record"
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
		modes       []string
		modesFile   string
		minGo       string
		requireLic  bool
		recordPath  string
		mirror      mirrorFlags
		cacheDir    string
		noCache     bool
		progressArg string
		cacheFrom   string
		cacheTo     string
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
			if quiet {
				progressArg = "quiet"
			}
			prog, err := progress.New(progressArg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer prog.Close()
			logf := prog.Warn
			overrides, err := parseArgs(args)
			if err != nil {
				return err
			}
			// Flags and outputs are checked before any work so a typo
			// costs nothing.
			comp, err := layer.ParseCompression(compression)
			if err != nil {
				return fmt.Errorf("--compression: %w", err)
			}
			if jobs < 0 {
				return fmt.Errorf("--jobs %d: want 0 (one per CPU) or more", jobs)
			}
			if cacheFrom, err = cacheRef("--cache-from", cacheFrom); err != nil {
				return err
			}
			if cacheTo, err = cacheRef("--cache-to", cacheTo); err != nil {
				return err
			}
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
			choices, err := parseModes(modesFile, modes)
			if err != nil {
				return err
			}
			p, err := plan.New(r, plan.Options{Args: overrides, Platforms: platforms, Images: images, Modes: choices})
			if err != nil {
				return err
			}
			work, err := os.MkdirTemp("", "pallet-build-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			fetcher, err := mirror.fetcher(logf)
			if err != nil {
				return err
			}
			var c *cache.Cache
			if !noCache {
				if cacheDir == "" {
					if cacheDir, err = cache.DefaultDir(); err != nil {
						return err
					}
				}
				if c, err = cache.Open(cacheDir); err != nil {
					return err
				}
				defer c.Close()
				c.Log = logf
				fetcher.Cache = c
				if cacheFrom != "" {
					// A cache only saves work: one that cannot be read
					// (not created yet, on a registry that answers 401
					// for a missing repository; unreachable) costs that
					// saving, not the build.
					if err := c.ImportFrom(ctx, cacheFrom); err != nil {
						logf("%v; building without it", err)
					}
				}
			} else if cacheFrom != "" || cacheTo != "" {
				return fmt.Errorf("--cache-from and --cache-to need the local cache; drop --no-cache")
			}
			bases := &image.Resolver{Dir: r.Dir, WorkDir: work, Epoch: p.Epoch}
			if c != nil {
				bases.Blobs = c
			}
			start := time.Now()
			res, err := build.Run(ctx, p, build.Options{
				Jobs:            jobs,
				WorkDir:         work,
				Compression:     comp,
				Fetcher:         fetcher,
				Cache:           c,
				Bases:           bases,
				MinGo:           minGo,
				RequireLicenses: requireLic,
				Progress:        prog,
			})
			if err != nil {
				return err
			}
			if recordPath == "" {
				recordPath = record.PathFor(outputs[0])
			}
			for i, t := range targets {
				done := prog.Start("output " + t.String())
				err := t.Write(ctx, res.Images)
				done("", err)
				if err != nil {
					return fmt.Errorf("output %s: %w", t, err)
				}
				// The record is written as soon as the output it sits
				// beside is: an output or cache export that fails later
				// leaves no new images next to an old record.
				if i == 0 {
					if err := record.Write(recordPath, res.Record); err != nil {
						return fmt.Errorf("build record: %w", err)
					}
				}
			}
			if cacheTo != "" {
				done := prog.Start("export cache to registry:" + cacheTo)
				err := c.ExportTo(ctx, cacheTo)
				done("", err)
				if err != nil {
					return fmt.Errorf("--cache-to: the images are built and written, but the cache export failed: %w", err)
				}
			}
			prog.Close()
			if !quiet && progressArg != "json" {
				fmt.Fprintf(cmd.ErrOrStderr(), "built %d image(s) in %.2fs; record in %s\n", len(res.Images), time.Since(start).Seconds(), recordPath)
			}
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
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing but errors (--progress quiet)")
	f.StringVar(&cacheFrom, "cache-from", "", "also look for cached artifacts and layers in this registry cache (registry:REF)")
	f.StringVar(&cacheTo, "cache-to", "", "store the artifacts and layers this build used in a registry cache (registry:REF)")
	f.StringVar(&progressArg, "progress", "auto", "progress output: auto, tty, plain, json or quiet")
	f.StringArrayVar(&modes, "mode", nil, "choose an artifact's mode: NAME=source|release|local[:PATH] (repeatable)")
	f.StringVar(&modesFile, "modes", "", "YAML file of artifact: mode choices (for CI); --mode wins")
	f.StringVar(&minGo, "min-go", "", "fail if a placed Go binary was built with a Go older than this (e.g. 1.22.7)")
	f.BoolVar(&requireLic, "require-licenses", false, "fail when an artifact has no licence file")
	f.StringVar(&recordPath, "record", "", "where to write the build record (default: beside the first output)")
	f.StringVar(&cacheDir, "cache-dir", "", "cache directory (default: $PALLET_CACHE_DIR or the user cache dir)")
	f.BoolVar(&noCache, "no-cache", false, "build everything anew, using and filling no cache")
	mirror.register(f)
	return cmd
}

// mirrorFlags are the flags shared by build and fetch for air-gapped use.
type mirrorFlags struct {
	dir, url string
	offline  bool
}

func (m *mirrorFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.dir, "mirror", "", "mirror directory written by pallet fetch; used when it holds a download or repository")
	f.StringVar(&m.url, "mirror-url", "", "fetch downloads (BASE/sha256/DIGEST) and repositories (BASE/git/...) from this mirror instead of upstream")
	f.BoolVar(&m.offline, "offline", false, "use no network: everything must be in --mirror")
}

func (m *mirrorFlags) fetcher(logf func(string, ...any)) (*source.Fetcher, error) {
	if m.offline && m.dir == "" {
		return nil, fmt.Errorf("--offline needs --mirror DIR (written by pallet fetch)")
	}
	if m.url != "" {
		u, err := url.Parse(m.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--mirror-url %q: want an http(s) URL such as https://mirror.internal/pallet", m.url)
		}
	}
	f := source.New()
	f.Log = logf
	f.Mirror, f.MirrorURL, f.Offline = m.dir, m.url, m.offline
	if m.dir != "" {
		abs, err := filepath.Abs(m.dir)
		if err != nil {
			return nil, err
		}
		f.Mirror = abs
	}
	return f, nil
}

// cacheRef checks a registry cache flag, "registry:REF", and returns REF.
// The prefix is required: a cache in a layout or on disk is not supported,
// and a bare name would silently go to Docker Hub.
func cacheRef(flag, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	ref, ok := strings.CutPrefix(s, "registry:")
	if !ok {
		return "", fmt.Errorf("%s %q: want registry:REF (a repository and tag in any registry)", flag, s)
	}
	if _, err := name.ParseReference(ref); err != nil {
		return "", fmt.Errorf("%s %q: %w", flag, s, err)
	}
	return ref, nil
}

// parseModes merges a modes file (artifact: mode) with --mode flags.
func parseModes(file string, flags []string) (map[string]plan.Choice, error) {
	out := map[string]plan.Choice{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var m map[string]string
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for k, v := range m {
			out[k] = plan.ParseChoice(v)
		}
	}
	for _, s := range flags {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--mode %q: want NAME=MODE (source, release, local or local:PATH)", s)
		}
		out[k] = plan.ParseChoice(v)
	}
	return out, nil
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
