package main

import (
	"fmt"
	"io"
	"log"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/record"
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
		metadata    string
		winZstd     bool
		sbomFlag    []string
		provenance  bool
		attestIndex bool
		sbomDir     string
		provTimes   bool
		modLicenses bool
		lim         limitFlags
		byDigest    bool
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the images of a recipe or a Dockerfile",
		Example: `  pallet build -f examples/hello/pallet.yaml
  pallet build --platform linux/arm64 --output docker:hello.tar
  pallet build --arg VERSION=1.2.3 --output registry:localhost:5000/hello`,
		Args: fileArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if quiet {
				// -q wins over --progress, whose value is still checked:
				// a typo there is said, not passed over.
				if err := progress.Check(progressArg); err != nil {
					return err
				}
				progressArg = "quiet"
			}
			prog, err := progress.New(progressArg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer prog.Close()
			defer logThrough(prog)()
			reportExitThrough(cmd.Context(), prog, cmd.ErrOrStderr())
			// In json mode a failure ends the stream as an error event.
			defer func() { err = prog.Fail(err) }()
			// Flags and outputs are checked before any work so a typo
			// costs nothing.
			overrides, err := parseArgs(args)
			if err != nil {
				return err
			}
			opt := build.Options{Jobs: jobs, MinGo: minGo, RequireLicenses: requireLic, RecordPath: recordPath, MetadataFile: metadata, WindowsZstd: winZstd, ModuleLicenses: modLicenses,
				CacheDir: cacheDir, NoCache: noCache, Progress: prog}
			if opt.Compression, err = layer.ParseCompression(compression); err != nil {
				return fmt.Errorf("--compression: %w", err)
			}
			if jobs < 0 {
				return fmt.Errorf("--jobs %d: want 0 (one per CPU) or more", jobs)
			}
			if minGo != "" {
				if _, err := build.MinGo(minGo); err != nil {
					return fmt.Errorf("--min-go %w", err)
				}
			}
			if opt.CacheFrom, err = cacheRef("--cache-from", cacheFrom); err != nil {
				return err
			}
			if opt.CacheTo, err = cacheRef("--cache-to", cacheTo); err != nil {
				return err
			}
			if noCache && (cacheFrom != "" || cacheTo != "") {
				return fmt.Errorf("--cache-from and --cache-to need the local cache; drop --no-cache")
			}
			if opt.Attest, err = attestFlags(sbomFlag, provenance, provTimes, attestIndex, sbomDir); err != nil {
				return err
			}
			if opt.Network, err = mirror.network(); err != nil {
				return err
			}
			// The build bounds its registry calls by them too.
			if opt.Limits, err = lim.limits(cmd.Flags()); err != nil {
				return err
			}
			for _, o := range outputs {
				t, err := output.Parse(o, output.Options{Stdout: cmd.OutOrStdout()})
				if err != nil {
					return err
				}
				opt.Outputs = append(opt.Outputs, t)
			}
			opt.Args = overrides
			if err := pushByDigest(opt.Outputs, byDigest); err != nil {
				return err
			}
			p, err := makePlan(cmd.Context(), opt, file, overrides, platforms, images, modesFile, modes)
			if err != nil {
				return err
			}
			start := time.Now()
			res, err := build.Run(cmd.Context(), p, opt)
			if err != nil {
				return err
			}
			prog.Result(struct {
				Images  []record.Result `json:"images"`
				Written [][]string      `json:"written"`
			}{res.Record.Results, res.Written})
			prog.Close()
			if quiet {
				// The result alone on stdout, for scripts: what each
				// output holds (REPO:TAG@DIGEST for a push), as crane
				// and ko print it; nothing when stdout is the archive.
				if slices.Contains(outputs, "docker:-") {
					return nil
				}
				for _, lines := range res.Written {
					for _, l := range lines {
						fmt.Fprintln(cmd.OutOrStdout(), l)
					}
				}
				return nil
			}
			if progressArg != "json" {
				if res.UpToDate {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d image(s) up to date: no input or output changed since the last build (checked in %.2fs); record in %s\n", len(res.Record.Results), time.Since(start).Seconds(), res.RecordPath)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "built %d image(s) in %.2fs; record in %s\n", len(res.Record.Results), time.Since(start).Seconds(), res.RecordPath)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "pallet.yaml", "recipe file, or a Dockerfile (Dockerfile, NAME.Dockerfile, Dockerfile.NAME; Containerfile alike)")
	f.StringSliceVar(&platforms, "platform", nil, "build only these platforms (os/arch[/variant], or an OS: each of its platforms the recipe has; repeatable or comma-separated)")
	f.StringArrayVarP(&outputs, "output", "o", []string{"oci:out"}, "where images go: oci:DIR, docker:FILE.tar or registry:REF (repeatable)")
	f.StringArrayVar(&args, "arg", nil, "override a recipe arg (K=V, repeatable)")
	f.StringSliceVar(&images, "image", nil, "build only these images of the recipe")
	f.IntVarP(&jobs, "jobs", "j", 0, "parallel jobs (default: number of CPUs)")
	f.StringVar(&compression, "compression", string(layer.Gzip), "layer compression: gzip or zstd")
	f.BoolVar(&winZstd, "windows-zstd", false, "allow zstd layers in Windows images (Docker on Windows and containerd before 1.7 cannot pull them)")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the result on stdout (REPO:TAG@DIGEST per push, the digest per layout or archive) and errors")
	f.StringVar(&metadata, "metadata-file", "", "write what the build produced (digests, tags, manifests, outputs) as JSON to this file")
	f.StringVar(&cacheFrom, "cache-from", "", "also look for cached artifacts and layers in this registry cache (registry:REF)")
	f.StringVar(&cacheTo, "cache-to", "", "store the artifacts and layers this build used in a registry cache (registry:REF)")
	f.StringVar(&progressArg, "progress", "auto", "progress output: auto (tty on a terminal, else plain), tty, plain, json, or quiet (no steps and no warnings; errors and the closing line still print)")
	f.StringArrayVar(&modes, "mode", nil, "choose an artifact's mode: NAME=source|release|local[:PATH] (repeatable)")
	f.StringVar(&modesFile, "modes", "", "YAML file of artifact: mode choices (for CI); --mode wins")
	f.StringVar(&minGo, "min-go", "", "fail if a placed Go binary was built with a Go older than this Go release (1.22, 1.22.7, 1.23rc1; go1.22.7 too)")
	f.BoolVar(&requireLic, "require-licenses", false, "fail when an artifact has no licence file")
	f.BoolVar(&modLicenses, "module-licenses", true, "ship the licence and notice files of every module linked into each Go binary, proven against its go.sum hashes, under /LICENSES/<artifact>/<module>/ (--module-licenses=false: only each artifact's own)")
	f.StringSliceVar(&sbomFlag, "sbom", nil, "attach SBOMs to every image: spdx, cyclonedx (both when given alone), or none; a value follows = (--sbom=spdx), as --sbom spdx reads spdx as an argument")
	f.Lookup("sbom").NoOptDefVal = "spdx,cyclonedx"
	f.BoolVar(&provenance, "provenance", false, "attach an SLSA v1 provenance to every image")
	f.BoolVar(&provTimes, "provenance-timestamps", false, "put the build's start and end times in the provenance (it then differs from build to build)")
	f.BoolVar(&attestIndex, "attest-index", false, "attach SBOMs and provenance as BuildKit does, in the image's index (platform unknown/unknown), instead of as OCI 1.1 referrers")
	f.StringVar(&sbomDir, "sbom-dir", "", "also write the SBOMs and provenance into this directory")
	f.StringVar(&recordPath, "record", "", "where to write the build record (default: beside the first output, as OUT.record.json; pallet-record.json in the current directory when that output is a push or docker:-)")
	f.StringVar(&cacheDir, "cache-dir", "", "cache directory (default: $PALLET_CACHE_DIR or the user cache dir)")
	f.BoolVar(&noCache, "no-cache", false, "build everything anew, using and filling no cache")
	lim.register(f)
	f.BoolVar(&byDigest, "push-by-digest", false, "push to registry outputs by digest only, setting no tag (one runner's share; pallet index create merges them)")
	mirror.register(f)
	return cmd
}

// mirrorFlags are build's flags for air-gapped use (register). fetch
// sets dir and url with flags of its own, its --mirror being what it
// fills, and has no --offline; both check them with network.
type mirrorFlags struct {
	dir, url string
	offline  bool
}

func (m *mirrorFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.dir, "mirror", "", "mirror directory written by pallet fetch; used when it holds a download or repository")
	f.StringVar(&m.url, "mirror-url", "", "fetch downloads (BASE/sha256/DIGEST) and repositories (BASE/git/...) from this mirror instead of upstream")
	f.BoolVar(&m.offline, "offline", false, "use no network: everything must be in --mirror, or without it in the cache and the go command's module cache")
}

// network checks the flags and returns the build's network policy.
func (m *mirrorFlags) network() (build.Network, error) {
	if m.offline && m.url != "" {
		// Offline, the URL would be ignored, and a build meant to read
		// it would fail naming the cache instead.
		return build.Network{}, fmt.Errorf("--offline reaches no mirror URL: give --mirror-url alone, or --offline with --mirror DIR")
	}
	if m.url != "" {
		u, err := url.Parse(m.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return build.Network{}, fmt.Errorf("--mirror-url %q: want an http(s) URL such as https://mirror.internal/pallet", m.url)
		}
	}
	n := build.Network{Offline: m.offline, MirrorURL: m.url}
	if m.dir != "" {
		abs, err := filepath.Abs(m.dir)
		if err != nil {
			return build.Network{}, err
		}
		n.Mirror = abs
	}
	return n, nil
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

// parseModes merges a modes file (artifact: mode) with --mode flags,
// which win.
func parseModes(file string, flags []string) (map[string]recipe.Choice, error) {
	out := map[string]recipe.Choice{}
	if file != "" {
		var err error
		if out, err = recipe.ReadModes(file); err != nil {
			return nil, err
		}
	}
	for _, s := range flags {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--mode %s: want NAME=MODE (source, release, local or local:PATH)", recipe.Quote(s))
		}
		out[k] = recipe.ParseChoice(v)
	}
	return out, nil
}

func parseArgs(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--arg %s: want K=V", recipe.Quote(kv))
		}
		out[k] = v
	}
	return out, nil
}

// attestFlags reads --sbom, --provenance, --provenance-timestamps,
// --attest-index and --sbom-dir. The last three only qualify documents
// the first two ask for: given alone they would do nothing, silently.
func attestFlags(sboms []string, provenance, times, index bool, dir string) (build.Attest, error) {
	a := build.Attest{Provenance: provenance, Timestamps: times, Index: index, Dir: dir}
	if times && !provenance {
		return a, fmt.Errorf("--provenance-timestamps needs --provenance")
	}
	for _, s := range sboms {
		switch s {
		case "spdx":
			a.SPDX = true
		case "cyclonedx":
			a.CycloneDX = true
		case "none":
		default:
			return a, fmt.Errorf("--sbom %q: want spdx, cyclonedx or none", s)
		}
	}
	if !a.SPDX && !a.CycloneDX && !a.Provenance {
		switch {
		case index:
			return a, fmt.Errorf("--attest-index needs --sbom or --provenance")
		case dir != "":
			return a, fmt.Errorf("--sbom-dir needs --sbom or --provenance")
		}
	}
	return a, nil
}

// logThrough sends what is written to the standard logger to rep as
// warnings until the returned func is called. net/http's client writes
// there (a server sending a response nobody asked for): a line of its
// own on stderr would break a --progress json stream. Builds run in one
// process (tests, a program calling run) share the logger: the latest
// build still running hears it, and the last to end gives it back.
func logThrough(rep progress.Reporter) func() {
	logSinks.mu.Lock()
	defer logSinks.mu.Unlock()
	if len(logSinks.reps) == 0 {
		logSinks.w, logSinks.flags = log.Writer(), log.Flags()
		log.SetFlags(0)
		log.SetOutput(warner{})
	}
	logSinks.reps = append(logSinks.reps, rep)
	return func() {
		logSinks.mu.Lock()
		defer logSinks.mu.Unlock()
		if i := slices.Index(logSinks.reps, rep); i >= 0 {
			logSinks.reps = slices.Delete(logSinks.reps, i, i+1)
		}
		if len(logSinks.reps) == 0 {
			log.SetOutput(logSinks.w)
			log.SetFlags(logSinks.flags)
		}
	}
}

var logSinks struct {
	mu    sync.Mutex
	reps  []progress.Reporter
	w     io.Writer
	flags int
}

type warner struct{}

func (warner) Write(p []byte) (int, error) {
	logSinks.mu.Lock()
	defer logSinks.mu.Unlock()
	if n := len(logSinks.reps); n > 0 {
		logSinks.reps[n-1].Warn("%s", strings.TrimRight(string(p), "\n"))
		return len(p), nil
	}
	return logSinks.w.Write(p)
}
