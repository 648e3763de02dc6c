// Package build carries out a plan: it fetches each artifact once, writes
// the layers, assembles each platform's image on its base and gathers
// platforms into an index. Independent work runs in parallel.
package build

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/transfer"
	"github.com/pallet-dev/pallet/internal/tree"
)

// goReleaseRE matches the name of a Go release or pre-release, with or
// without its go: 1.22 (the language version, below all of 1.22's
// releases and pre-releases), 1.22.7, 1.23rc1, 1.23beta1.
var goReleaseRE = lazyre.New(`^(?:go)?[1-9][0-9]*\.(?:0|[1-9][0-9]*)(?:\.(?:0|[1-9][0-9]*)|(?:rc|beta)[1-9][0-9]*)?$`)

// MinGo reads a minimum Go version (Options.MinGo, --min-go) into the
// form go/version compares, go1.22.7. Only a Go release's or
// pre-release's name is taken, since go/version reads others without
// complaint: 1.2x as a pre-release of Go 1.2, older than every release,
// and 1.22.7-bigcorp as 1.22.7, so a slip would pass every binary.
func MinGo(s string) (string, error) {
	if !goReleaseRE().MatchString(s) {
		return "", fmt.Errorf("%q is not the name of a Go release: want 1.N, 1.N.P, 1.NrcK or 1.NbetaK (1.22, 1.22.7, 1.23rc1), with or without go before it", s)
	}
	return "go" + strings.TrimPrefix(s, "go"), nil
}

// Options are a build's policy and destinations. The zero value builds
// with one job per CPU, gzip layers, the default cache, no outputs.
type Options struct {
	// Jobs bounds parallel work; runtime.NumCPU() when zero.
	Jobs        int
	Compression layer.Compression
	// WindowsZstd allows zstd layers in Windows images, which not every
	// Windows runtime pulls.
	WindowsZstd bool
	// Outputs receive the images, in order; all are checked before any
	// work, and written only once every image is built.
	Outputs []output.Target
	// RecordPath is where the build record goes: beside the first
	// output's path by default (RecordFor).
	RecordPath string
	// MetadataFile, when set, receives what the build produced as JSON
	// (buildx's --metadata-file): per image its digest, tags and
	// manifests, per output what it holds.
	MetadataFile string
	// CacheDir holds the local cache (DefaultCacheDir when empty); NoCache
	// builds everything anew and keeps nothing.
	CacheDir string
	NoCache  bool
	// CacheFrom and CacheTo are registry references of a shared cache
	// read before and written after the build.
	CacheFrom, CacheTo string
	// Network says where downloads and repositories come from.
	Network Network
	// Limits bound what inputs may cost; zero fields take the defaults.
	Limits Limits
	// MinGo fails the build when a placed Go binary was built with an
	// older Go ("1.22.7"): how a release lacking a Go fix is caught.
	MinGo string
	// RequireLicenses turns a missing licence from a warning into an error.
	RequireLicenses bool
	// ModuleLicenses ships, for every Go binary placed, the licence and
	// notice files of every module it links, proven against its sums,
	// under /LICENSES/<artifact>/<module path>/.
	ModuleLicenses bool
	// Attest makes SPDX 2.3 and CycloneDX 1.6 SBOMs and an SLSA v1
	// provenance of every platform image, reproducibly, and attaches them.
	Attest Attest
	// Args are the build arguments given (recorded in the provenance).
	Args map[string]string
	// Progress receives the steps as they run, and warnings.
	Progress progress.Reporter
}

// Network is the build-wide policy for what comes from outside.
type Network struct {
	// Offline forbids the network: downloads and repositories come from
	// Mirror, and bases from layouts or the cache.
	Offline bool
	// Mirror is a directory written by pallet fetch; MirrorURL serves
	// one over http(s).
	Mirror, MirrorURL string
}

// fetcher is a Fetcher reading through n. A mirror named relative to
// where pallet runs is made absolute: the go command refuses a relative
// module cache or file:// proxy.
func (n Network) fetcher() (*artifact.Fetcher, error) {
	f, err := n.mirrorFetcher()
	if err != nil {
		return nil, err
	}
	return f, n.offlineModCache(f, record.NoMemo)
}

// mirrorFetcher is fetcher without the module cache offlineModCache
// sets, for a build to set once its memo is open.
func (n Network) mirrorFetcher() (*artifact.Fetcher, error) {
	f := artifact.New()
	f.MirrorURL, f.Offline = n.MirrorURL, n.Offline
	if n.Mirror != "" {
		var err error
		if f.Mirror, err = filepath.Abs(n.Mirror); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// offlineModCache sets f.ModCache offline without a mirror: Go builds
// take their modules and toolchains from the go command's own module
// cache, where earlier builds fetched them, as from a mirror's. The go
// command that answers is the one on PATH (GOTOOLCHAIN=local: switching
// to another would need the network). Without one there are no Go builds
// to serve, and a recipe of downloads builds as before.
//
// The answer is kept in memo by the go command's stamp and everything
// else it is made of (offlineModCacheFact): every build, a no-op
// rebuild too, ran go env GOMODCACHE (20-50 ms) before anything else.
func (n Network) offlineModCache(f *artifact.Fetcher, memo record.Memo) error {
	if !n.Offline || n.Mirror != "" {
		return nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil
	}
	ask := func(string) (string, error) {
		env := append(os.Environ(), "GOTOOLCHAIN=local")
		v, err := artifact.AskGoEnv(context.Background(), "", env, "GOMODCACHE")
		if err != nil {
			return "", fmt.Errorf("offline without --mirror, Go modules come from the go command's module cache: %w", err)
		}
		if !filepath.IsAbs(v[0]) {
			return "", fmt.Errorf("offline without --mirror: go env GOMODCACHE said %q, not an absolute path", v[0])
		}
		return v[0], nil
	}
	gobin, err := goOnPath()
	if err != nil {
		// Not resolved to a file whose stamp can key the answer: asked.
		f.ModCache, err = ask("")
		return err
	}
	f.ModCache, err = memo(gobin, tree.Stamp{}, offlineModCacheFact(gobin), ask)
	return err
}

// offlineModCacheVars are the variables go env GOMODCACHE is made of,
// with the go env file read: the module cache named, else the first
// GOPATH's pkg/mod, GOPATH defaulting to go in the user's home; where the
// go env file is (GOENV, else in the user's config directory); GOROOT,
// whose go.env is read too. GOTOOLCHAIN is local.
var offlineModCacheVars = []string{"GOMODCACHE", "GOPATH", "GOENV", "GOROOT", "HOME", "USERPROFILE", "home", "XDG_CONFIG_HOME", "AppData"}

// offlineModCacheFact names what go env GOMODCACHE says, besides the go
// command gobin (a resolved path, whose stamp the memo keeps it by): the
// values of offlineModCacheVars, and the stamps of the files the go
// command takes its defaults from (the go env file, its GOROOT's go.env),
// either of which may set GOMODCACHE or GOPATH.
func offlineModCacheFact(gobin string) string {
	fact := "go-offline-modcache-v2"
	for _, k := range offlineModCacheVars {
		fact += " " + k + "=" + os.Getenv(k)
	}
	return fact + " " + artifact.GoDefaultsStamp(gobin, nil)
}

// Limits bound the inputs of a build: a non-zero field wins over the
// plan's, which wins over the default (docs/integrity.md lists them).
type Limits = plan.Limits

// limits merges the build's limits over the plan's.
func limits(opt, p Limits) Limits {
	if opt.MaxDownload == 0 {
		opt.MaxDownload = p.MaxDownload
	}
	if opt.Stall == 0 {
		opt.Stall = p.Stall
	}
	if opt.DownloadTimeout == 0 {
		opt.DownloadTimeout = p.DownloadTimeout
	}
	if opt.MaxExtract == 0 {
		opt.MaxExtract = p.MaxExtract
	}
	if opt.MaxEntries == 0 {
		opt.MaxEntries = p.MaxEntries
	}
	if opt.MaxWindow == 0 {
		opt.MaxWindow = p.MaxWindow
	}
	return opt
}

// fetcherLimits are what a Fetcher of a build, or of pallet fetch,
// downloads and unpacks within, lim merged already.
// withTransferBounds is ctx with what bounds every registry call of a
// build: the stall and size bounds of fetchLim, and its whole-request
// time.
func withTransferBounds(ctx context.Context, fetchLim artifact.Limits) context.Context {
	return regauth.WithBounds(ctx, regauth.Timeouts{Limits: fetchLim.Limits, Total: fetchLim.DownloadTimeout})
}

func fetcherLimits(lim Limits) artifact.Limits {
	return artifact.Limits{Limits: transfer.Limits{MaxBytes: lim.MaxDownload, Stall: lim.Stall}, DownloadTimeout: lim.DownloadTimeout,
		Unpack: artifact.UnpackLimits{MaxBytes: lim.MaxExtract, MaxEntries: lim.MaxEntries, MaxWindow: lim.MaxWindow}}
}

// Result is a finished build.
type Result struct {
	Images     []output.Image
	Record     *record.Build
	RecordPath string
	// Written is, per output (in order), what it holds: REPO:TAG@DIGEST
	// for a push, the digest of each image for a layout or archive.
	Written [][]string
	// UpToDate says the outputs already held what the build would write,
	// as the note of the last build and every stamp showed: nothing was
	// read or written, Images is empty and Record holds only the results
	// (the whole record is at RecordPath).
	UpToDate bool
}

// settle fills opt's defaults and refuses what cannot be built as asked,
// before any work.
func settle(p *plan.Plan, opt *Options) error {
	if opt.Jobs <= 0 {
		opt.Jobs = runtime.NumCPU()
	}
	if opt.Progress == nil {
		opt.Progress, _ = progress.New("quiet", nil)
	}
	if opt.Compression == "" {
		opt.Compression = layer.Gzip
	}
	if opt.MinGo != "" {
		if _, err := MinGo(opt.MinGo); err != nil {
			return fmt.Errorf("minimum Go %w", err)
		}
	}
	if (opt.CacheFrom != "" || opt.CacheTo != "") && opt.NoCache {
		return errors.New("a shared registry cache needs the local cache, which is turned off")
	}
	if opt.Compression == layer.Zstd {
		for _, im := range p.Images {
			for _, pi := range im.Platforms {
				if !pi.Platform.IsWindows() {
					continue
				}
				// containerd on Windows pulls zstd layers only from 1.7 on,
				// and Docker's Windows daemon not at all: an image that
				// some nodes cannot pull must be asked for by name.
				if !opt.WindowsZstd {
					return plan.Errorf(im.Pos, "image %s (%s): zstd layers are not pulled by every Windows runtime (Docker on Windows, containerd before 1.7); use gzip, or allow zstd for Windows images with --windows-zstd", im.Name, pi.Platform)
				}
				opt.Progress.Warn("image %s (%s): zstd layers, which Docker on Windows and containerd before 1.7 cannot pull", im.Name, pi.Platform)
			}
		}
	}
	return nil
}

// checkOutputs refuses, before any work, outputs that would overwrite
// one another or a file pallet did not write, or that cannot take the
// plan's images.
func checkOutputs(p *plan.Plan, opt Options) error {
	extra := []string{opt.RecordPath}
	if opt.MetadataFile != "" {
		extra = append(extra, opt.MetadataFile)
	}
	if err := output.CheckDistinct(opt.Outputs, extra...); err != nil {
		return err
	}
	if err := checkWrites(p, opt, extra); err != nil {
		return err
	}
	planned := make([]output.Planned, len(p.Images))
	for i, im := range p.Images {
		planned[i] = output.Planned{Repository: im.Repository, Tags: im.Tags}
		for _, pi := range im.Platforms {
			planned[i].Manifests += max(1, len(pi.Bases))
		}
	}
	if err := output.CheckImages(opt.Outputs, planned); err != nil {
		return err
	}
	return nil
}

// writeOutputs writes the images to every output, in order, and the
// record beside the first.
func writeOutputs(ctx context.Context, opt Options, res *Result, ud *upToDate) error {
	for i, t := range opt.Outputs {
		var staged func() (*record.Staged, error)
		if i == 0 && opt.RecordPath != "" {
			// Encoded and written while the output is (a push waits on
			// the registry most of that time), put in place once it is:
			// after a push the record took a few milliseconds between
			// its last request and the build's end.
			staged = sync.OnceValues(func() (*record.Staged, error) { return record.Stage(opt.RecordPath, res.Record) })
			go staged()
		}
		// Where the output fails, the record written for it goes.
		discard := func() {
			if staged != nil {
				if s, err := staged(); err == nil {
					s.Discard()
				}
			}
		}
		done := opt.Progress.Start("output " + t.String())
		err := t.Write(ctx, res.Images)
		done("", err)
		if err != nil {
			discard()
			return fmt.Errorf("output %s: %w", t, err)
		}
		lines, err := output.Written(t, res.Images)
		if err != nil {
			discard()
			return err
		}
		res.Written = append(res.Written, lines)
		if ud != nil {
			ud.wrote(outputPath(t))
		}
		// The record is written as soon as the output it sits beside is:
		// an output or cache export that fails later leaves no new images
		// next to an old record.
		if staged != nil {
			s, err := staged()
			if err == nil {
				err = s.Commit()
			}
			if err != nil {
				// The output is in place already: say so, or a failed
				// build reads as one that changed nothing.
				return fmt.Errorf("%s is written, but the build record is not: %w", t, err)
			}
			if ud != nil {
				ud.wrote(opt.RecordPath)
			}
		}
	}
	return nil
}

// Run carries out p: it checks the outputs, opens the cache (and imports
// the shared one), fetches every artifact once, writes the layers,
// assembles each platform's image on its bases, gathers platforms into
// indexes, writes the outputs and the record, and exports the shared
// cache. Independent work runs in parallel.
func Run(ctx context.Context, p *plan.Plan, opt Options) (*Result, error) {
	if err := settle(p, &opt); err != nil {
		return nil, err
	}
	warnWindowsAccess(p, opt.Progress)
	lim := limits(opt.Limits, p.Limits)
	// What bounds each of the build's transfers: its downloads, git
	// fetches and module proxy responses, its shared-cache entries, and
	// every registry call (bases, outputs, the shared cache, the
	// up-to-date check's).
	fetchLim := fetcherLimits(lim)
	xfer := fetchLim.Limits
	ctx = withTransferBounds(ctx, fetchLim)
	if opt.RecordPath == "" && len(opt.Outputs) > 0 {
		opt.RecordPath = RecordFor(opt.Outputs[0])
	}
	if !opt.NoCache && opt.CacheDir == "" {
		var err error
		if opt.CacheDir, err = cache.DefaultDir(); err != nil {
			return nil, err
		}
	}

	if err := checkOutputs(p, opt); err != nil {
		return nil, err
	}
	ud, err := checkUpToDate(p, opt)
	if err != nil {
		return nil, err
	}
	if ud != nil {
		done := opt.Progress.Start("up-to-date check")
		res, why := ud.answer(opt.Progress)
		done(why, nil)
		if res != nil {
			return res, nil
		}
	}
	// Checked only for a build that writes: one answered from its note
	// writes nothing, not even a probe.
	if err := checkWritable(opt); err != nil {
		return nil, err
	}

	// A push opens its session (ping, token) while the build checks its
	// inputs and reads its cache: its first blob need not wait for it.
	// Not before the outputs are checked and the build found to have work:
	// a refused or up-to-date build asks a registry nothing (a read-only
	// CI credential would be asked for a push token).
	for _, t := range opt.Outputs {
		if o, ok := t.(output.Preparer); ok {
			for _, im := range p.Images {
				o.Open(ctx, im.Repository, im.Tags)
			}
			// On a return before the build starts; see below.
			defer o.Finish()
		}
	}

	// Work directories of builds that were killed are swept first; a
	// running build's is locked and left alone.
	if swept, err := tempfile.SweepWorkDirs(""); err != nil {
		opt.Progress.Warn("sweeping work directories of earlier builds: %v", err)
	} else if len(swept) > 0 {
		opt.Progress.Warn("removed %d work director(y/ies) left by killed builds", len(swept))
	}
	// The build's own warnings (licences, links, its images) are kept
	// for the note, to be said again when it answers; the cache's and the
	// downloads' (a damaged entry rebuilt, a retry) go to the reporter
	// only: they are about this run.
	direct := opt.Progress
	said := &warnings{Reporter: opt.Progress}
	opt.Progress = said
	wd, err := tempfile.NewWorkDir("")
	if err != nil {
		return nil, err
	}
	defer wd.Remove()
	work := wd.Path
	// Deferred after the removal, so run before it: the go env answers
	// asked in the work directory go with it.
	defer artifact.ForgetToolchainEnv(work)

	fetcher, err := opt.Network.mirrorFetcher()
	if err != nil {
		return nil, err
	}
	defer fetcher.Close()
	fetcher.Log = direct.Warn
	if err := fetcher.ShareCheckouts(filepath.Join(work, "git")); err != nil {
		return nil, err
	}
	fetcher.Limits = fetchLim
	bases := &image.Resolver{Dir: p.Dir, WorkDir: work, Epoch: p.Epoch}

	var c *cache.Cache
	if !opt.NoCache {
		if c, err = cache.Open(opt.CacheDir); err != nil {
			return nil, err
		}
		defer c.Close()
		c.Log = direct.Warn
		// The shared cache's entries are downloads like any other.
		c.Limits = cache.Limits{Limits: xfer,
			MaxExtract: lim.MaxExtract, MaxEntries: lim.MaxEntries, MaxWindow: lim.MaxWindow}
		fetcher.Cache = c
		bases.Blobs = c
		for _, t := range opt.Outputs {
			switch o := t.(type) {
			case *output.Layout:
				o.Digests, o.Learn = c.FileSHA256, c.Learn
			case *output.Registry:
				o.Sources = c.Sources()
			}
		}
		if opt.CacheFrom != "" {
			// A shared cache only saves work: one that cannot be read
			// (not created yet, on a registry that answers 401 for a
			// missing repository; unreachable) costs that saving, not
			// the build.
			if err := c.ImportFrom(ctx, opt.CacheFrom); err != nil {
				opt.Progress.Warn("%v; building without it", err)
			}
		}
	}

	memo := record.Memo(record.NoMemo)
	if c != nil {
		memo = c.RememberAt
	}
	if err := opt.Network.offlineModCache(fetcher, memo); err != nil {
		return nil, err
	}

	// Stopped again before the work directory and the cache go, which
	// the early uploads read (deferred above: this runs first).
	for _, t := range opt.Outputs {
		if p, ok := t.(output.Preparer); ok {
			defer p.Finish()
		}
	}
	b := &builder{plan: p, opt: opt, work: work, cache: c, fetcher: fetcher, bases: bases,
		placed: map[string]*record.Image{}, loaders: map[*plan.PlatformImage][]loaderNeed{}, writers: make(chan struct{}, opt.Jobs), memo: memo,
		compressors: layer.NewCompressors(opt.Jobs), started: time.Now()}
	if c != nil {
		bases.Layer = b.baseLayer
	}
	// Before the work directory is removed (deferred above: this runs
	// first), on any return.
	defer b.cleanup.Wait()
	res, err := b.build(ctx)
	if err != nil {
		return nil, err
	}
	// The licence copies are in the layers now: removed beside the
	// outputs rather than with the work directory once the build is
	// over, when it waits for them (see cachedBuild). What cannot be
	// removed so (a read-only module download) is left to the end.
	b.cleanup.Go(func() { os.RemoveAll(filepath.Join(work, licenceCopies)) })
	// The images are made: what remains (outputs, the record, the shared
	// cache) needs neither the artifacts' trees nor the memory of every
	// input's digest, which for 100,000 files is about 60 MB that would
	// otherwise stay live while the record is encoded.
	b.ready = nil
	// The memo is saved while the outputs are written: a cold build
	// saves a shard file for most of its 256 shards, one after another
	// (30-100 ms on the bench's Windows workload), and an output copies
	// its blobs meanwhile. What an output asks of the cache (a blob's
	// digest, a blob learned) waits on the cache's lock while the memo
	// is saved, then reads its shard again, as after a Flush before.
	flushed := make(chan struct{})
	if c != nil {
		go func() {
			defer close(flushed)
			// The memo only saves the next build its hashing: one that
			// cannot be written (a full disk) costs that, not this build.
			if err := c.Flush(); err != nil {
				opt.Progress.Warn("%v; the next build hashes its inputs again", err)
			}
		}()
	} else {
		close(flushed)
	}
	// Saved before what follows the outputs, and before the cache is
	// closed (deferred above: this runs first) on any return.
	waitFlush := sync.OnceFunc(func() { <-flushed })
	defer waitFlush()
	res.RecordPath = opt.RecordPath
	if err := writeOutputs(ctx, opt, res, ud); err != nil {
		return nil, err
	}
	waitFlush()
	if opt.Attest.Dir != "" {
		if err := writeDocuments(opt.Attest.Dir, b.documents); err != nil {
			return nil, fmt.Errorf("the images are built and written, but the SBOM files are not: %w", err)
		}
	}
	if opt.MetadataFile != "" {
		if err := writeMetadata(opt.MetadataFile, opt.Outputs, res); err != nil {
			return nil, fmt.Errorf("the images are built and written, but the metadata file is not: %w", err)
		}
	}
	if ud != nil {
		ud.note(res, said.sorted(), direct)
	}
	if opt.CacheTo != "" {
		done := opt.Progress.Start("export cache to registry:" + opt.CacheTo)
		err := c.ExportTo(ctx, opt.CacheTo)
		done("", err)
		if err != nil {
			return nil, fmt.Errorf("the images are built and written, but the cache export failed: %w", err)
		}
	}
	return res, nil
}

// checkWritable refuses, before any work, outputs, a record, a metadata
// file or a --sbom-dir on a file system pallet cannot write to
// (output.CheckWritable): the build did all its work, then failed at the
// first of them, with the outputs before it written.
func checkWritable(opt Options) error {
	if err := output.CheckWritableTargets(opt.Outputs); err != nil {
		return err
	}
	files := []struct{ what, path, probe string }{
		{"build record", opt.RecordPath, opt.RecordPath},
		{"metadata file", opt.MetadataFile, opt.MetadataFile},
	}
	if opt.Attest.Dir != "" {
		// The directory, or the nearest one that exists, must take the
		// documents.
		files = append(files, struct{ what, path, probe string }{"--sbom-dir", opt.Attest.Dir, filepath.Join(opt.Attest.Dir, "document")})
	}
	for _, f := range files {
		if f.path == "" {
			continue
		}
		if err := output.CheckWritable(f.probe); err != nil {
			return fmt.Errorf("%s %s: %w", f.what, f.path, err)
		}
	}
	return nil
}

// checkWrites refuses, before any work, a build whose record or
// metadata file would replace a file pallet did not write, or whose
// outputs, written files or cache would overwrite, sit inside, or (an
// oci:DIR replaced whole) hold what the build reads.
func checkWrites(p *plan.Plan, opt Options, extra []string) error {
	if opt.RecordPath != "" {
		if err := output.CheckOwnJSON(opt.RecordPath, "build record", []string{"recipe", "epoch"}); err != nil {
			return err
		}
	}
	if opt.MetadataFile != "" {
		if err := output.CheckOwnJSON(opt.MetadataFile, "metadata file", []string{"images", "outputs"}); err != nil {
			return err
		}
	}
	var inputs []output.Input
	if p.Source != "" {
		inputs = append(inputs, output.Input{Name: "the recipe", Path: p.Source})
	}
	for _, key := range p.Keys() {
		a := p.Artifacts[key]
		// Files taken as they are: a local file or directory, a
		// Dockerfile's context (filtered or not). Not a Go module: go
		// build reads its packages only, and an output in the module's
		// tree (pallet build at the root of the repository) is common
		// and harmless.
		if _, isGo := a.Kind.(*artifact.Go); !isGo && a.Kind.Origin().Path != "" {
			inputs = append(inputs, output.Input{Name: fmt.Sprintf("the local path of artifact %s (%s)", a.Name, a.Pos), Path: a.Kind.Origin().Path, Ignores: p.Ignored})
		}
	}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			for _, ref := range pi.Bases {
				if dir, _, ok := image.LayoutRef(ref, p.Dir); ok {
					inputs = append(inputs, output.Input{Name: fmt.Sprintf("the base %s of image %s (%s)", ref, im.Name, im.Pos), Path: dir})
				}
			}
		}
	}
	if opt.Attest.Dir != "" {
		extra = append(extra, opt.Attest.Dir)
		if err := checkDocuments(opt.Attest.Dir, p); err != nil {
			return err
		}
	}
	if err := output.CheckInputs(opt.Outputs, extra, inputs); err != nil {
		return err
	}
	if opt.NoCache {
		return nil
	}
	if err := output.CheckInputs(nil, []string{opt.CacheDir}, inputs); err != nil {
		return fmt.Errorf("the cache directory: %w", err)
	}
	return nil
}

// displayPath is path relative to dir when it is inside dir, else its base
// name: what a record or message may show of a path of this machine.
func displayPath(dir, path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return path
	}
	if rel, err := filepath.Rel(dir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(path)
}

// RecordFor is where the record of a build writing to t goes by default:
// beside the layout directory or archive file, or in the current
// directory for a push.
func RecordFor(t output.Target) string {
	if t.String() == "docker:-" {
		return record.PathFor("registry:")
	}
	return record.PathFor(t.String())
}

// build fetches, layers and assembles every image of the plan. A layer
// is written as soon as the artifacts it places are ready (fetched,
// scanned, their licences found and the build's rules applied), while
// the others are still fetched: the compressors do not wait for the
// slowest download.
func (b *builder) build(ctx context.Context) (_ *Result, err error) {
	p := b.plan
	wait := b.prefetchBases(ctx)
	defer func() { wait(err != nil) }()
	if b.opt.Attest.any() {
		if b.recipeFile, err = sbom.RecipeFile(p.Source); err != nil {
			return nil, err
		}
		b.documents = map[string][]byte{}
	}
	b.unplaced = map[string]int{}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			b.unkeyed += len(pi.Layers)
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					b.unplaced[pm.Artifact]++
				}
			}
		}
	}
	b.ready = map[string]*ready{}
	for key := range p.Artifacts {
		b.ready[key] = &ready{done: make(chan struct{})}
	}
	b.allReady = make(chan struct{})
	// The fetches stop when the images fail for a reason of their own
	// (a base, a check across layers): the build is over.
	fctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	fetched := make(chan error, 1)
	go func() { fetched <- b.fetchAll(fctx) }()
	// The memo shards saved while layers are written (see saveNew) are
	// saved before build returns.
	defer b.saving.Wait()

	// Images are assembled in parallel with each other, as their
	// platforms are within each; Jobs bounds the layer writing below.
	res := &Result{Images: make([]output.Image, len(p.Images))}
	var g errgroup.Group
	for i, im := range p.Images {
		g.Go(func() error {
			out, err := b.image(ctx, im)
			res.Images[i] = out
			return err
		})
	}
	imagesErr := g.Wait()
	if imagesErr != nil && !errors.Is(imagesErr, errNotReady) {
		stop(imagesErr)
	}
	// A failed artifact is the error to report, not the images that
	// waited for it in vain; fetches the images stopped are not.
	if err := <-fetched; err != nil && (imagesErr == nil || context.Cause(fctx) != imagesErr) {
		return nil, err
	}
	if imagesErr != nil {
		return nil, imagesErr
	}
	rec := &record.Build{Recipe: filepath.Base(p.Source), Epoch: p.Epoch.Unix()}
	for _, key := range p.Keys() {
		a := b.ready[key].record
		// The record names the build's inputs as the recipe does, not by
		// paths of this machine.
		a.Path = displayPath(p.Dir, a.Path)
		rec.Artifacts = append(rec.Artifacts, a)
	}
	b.record = rec
	res.Record = rec
	for _, k := range slices.Sorted(maps.Keys(b.placed)) {
		rec.Images = append(rec.Images, *b.placed[k])
	}
	for i, im := range res.Images {
		d, err := im.Digest()
		if err != nil {
			return nil, err
		}
		var mt types.MediaType
		if im.Index != nil {
			mt, err = im.Index.MediaType()
		} else {
			mt, err = im.Image.MediaType()
		}
		if err != nil {
			return nil, err
		}
		rec.Results = append(rec.Results, record.Result{Name: p.Images[i].Name, Repository: im.Repository, Tags: im.Tags, Digest: d.String(), MediaType: string(mt)})
	}
	return res, nil
}

type builder struct {
	// modCaches are the go command's module caches, by environment.
	modCaches sync.Map
	plan      *plan.Plan
	opt       Options
	work      string
	cache     *cache.Cache
	fetcher   *artifact.Fetcher
	bases     *image.Resolver
	mu        sync.Mutex
	// placed records, per image manifest, which artifact went where.
	placed map[string]*record.Image
	// loaders are, per platform image, the dynamically linked
	// executables placed in it and the loader each needs.
	loaders map[*plan.PlatformImage][]loaderNeed
	// notes are, per artifact name, what the policy found on its
	// platforms checked so far (checked).
	notes map[string]*artifactNotes
	// unplaced counts, per artifact, the placements of it that no layer
	// tree has taken yet: once none is left, its tree is let go (see
	// placedAll).
	unplaced map[string]int
	// unkeyed counts the layers, of every image, whose key is not made
	// yet: once none is left, the memo lets go of what it saved (see
	// keyed).
	unkeyed int
	// singles are the archive entries placements of one file take
	// (entryOrigin).
	singles map[placed]string
	// goLicenses are the Go toolchains' licences, by GOROOT and version
	// (goLicense).
	goLicenses sync.Map
	// goToolchains are the Go toolchains goLicense found, by release
	// asked for and environment.
	goToolchains sync.Map
	// keptToolchains are the toolchains this run's builds used that
	// goLicense kept in the memo, by release, GOROOT and environment.
	keptToolchains sync.Map
	// zipLicences are the licence files of module zips, by zip and proof
	// (shareZip).
	zipLicences sync.Map
	// writers bounds the layers being filled at once across all images
	// and platforms to --jobs; compressors bounds (and reuses) the
	// compressors they share, so memory does not grow with layer count.
	writers     chan struct{}
	compressors *layer.Compressors
	// prefetched holds the bases being resolved since the build began;
	// views what they hold, read once each.
	prefetched map[baseKey]*baseFuture
	views      map[baseKey]*viewFuture
	// ready holds, per artifact key, the artifact being made ready;
	// allReady closes once every one is, or the first has failed.
	ready    map[string]*ready
	allReady chan struct{}
	// saving are the memo saves started while layers are written.
	saving sync.WaitGroup
	// cleanup are the removals of artifacts' work directories started
	// once their results were in the cache (makeReady), and of the
	// layers' temporary directories once their blobs were (cachedBuild).
	cleanup sync.WaitGroup
	// started is when the build began (for provenance timestamps).
	started time.Time
	// memo derives facts about input files (digests, executable kinds),
	// remembered by the cache across builds while files are untouched.
	memo record.Memo
	// record is the build record, made once the images are; recipeFile
	// and documents are the SBOMs' input and outputs (with Options.SBOM).
	record     *record.Build
	recipeFile sbom.File
	documents  map[string][]byte
}

// step runs fn and logs its duration, kind-style, naming the step on error.
func (b *builder) step(name string, fn func() error) error {
	done := b.opt.Progress.Start(name)
	err := fn()
	done("", err)
	return err
}

func (b *builder) image(ctx context.Context, im *plan.Image) (output.Image, error) {
	perPlatform := make([][]v1.Image, len(im.Platforms))
	attPerPlatform := make([][]v1.Image, len(im.Platforms))
	refPerPlatform := make([][]v1.Image, len(im.Platforms))
	g := new(errgroup.Group)
	g.SetLimit(b.opt.Jobs)
	for i, pi := range im.Platforms {
		g.Go(func() error {
			name := fmt.Sprintf("image %s (%s)", im.Name, pi.Platform)
			return b.step(name, func() error {
				// Not an errgroup context: base images read their blobs
				// lazily, long after this group is done.
				imgs, atts, refs, err := b.platformImages(ctx, im, pi)
				if err != nil {
					var located *plan.Error
					if errors.As(err, &located) {
						return err // named where it was located
					}
					return fmt.Errorf("%s: %w", name, err)
				}
				perPlatform[i], attPerPlatform[i], refPerPlatform[i] = imgs, atts, refs
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return output.Image{}, err
	}
	var imgs, atts, refs []v1.Image
	for i, l := range perPlatform {
		imgs = append(imgs, l...)
		atts = append(atts, attPerPlatform[i]...)
		refs = append(refs, refPerPlatform[i]...)
	}
	out := output.Image{Repository: im.Repository, Tags: im.Tags, Referrers: refs, About: b.about(im, perPlatform, attPerPlatform)}
	if im.Pos.Line > 0 {
		out.Pos = plan.Pos{File: im.Pos.File, Line: im.Pos.Line}.String()
	}
	if len(imgs) == 1 && len(atts) == 0 {
		out.Image = imgs[0]
		return out, nil
	}
	idx, err := image.Index(imgs)
	if err != nil {
		return output.Image{}, err
	}
	if idx, err = withAttestations(idx, imgs, atts); err != nil {
		return output.Image{}, err
	}
	b.warnMixedHostProcess(im.Name, imgs)
	out.Index = idx
	return out, nil
}

// platformImages writes pi's layers once, or once per base where they
// differ (windowsDirVariants), and puts them on each base.
func (b *builder) platformImages(ctx context.Context, im *plan.Image, pi *plan.PlatformImage) (imgs, atts, referrers []v1.Image, err error) {
	name := im.Name
	layers, err := b.layers(ctx, im, pi)
	if err != nil {
		return nil, nil, nil, err
	}
	for j, ref := range pi.Bases {
		if ref == image.Scratch && pi.Platform.IsWindows() {
			// A Windows node imports an image's first layer as a base
			// layer, with the hives such a layer carries: one of pallet's
			// is not that, and no Windows host takes the image whole.
			b.opt.Progress.Warn("%s: image %s (%s): on scratch, a Windows image has no base layer, and a Windows node cannot run it as a container; give %s for one (scratch serves an image only copied from)", pi.BasePos, name, pi.Platform, image.HostProcessScratch)
		}
		base, err := b.base(ctx, ref, pi.Platform)
		if err != nil {
			return nil, nil, nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): %w", name, pi.Platform, err))
		}
		if ls, err := base.Layers(); err == nil {
			for _, l := range ls {
				b.prepare(ctx, im, l)
			}
			// The recipe's own layers are capped; a base can bring more.
			if n := len(ls) + len(layers[j]); n > image.MaxLayers {
				return nil, nil, nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): %d layers, %d of them from base %s: an image has at most %d (Linux's overlayfs mounts no more, Docker no more than %d)", name, pi.Platform, n, len(ls), ref, image.MaxLayers, image.DockerMaxLayers))
			} else if n > image.DockerMaxLayers {
				b.opt.Progress.Warn("%s: image %s (%s): %d layers, %d of them from base %s: Docker refuses to run an image of more than %d layers (max depth exceeded), and overlay mounts of that many may fail", pi.BasePos, name, pi.Platform, n, len(ls), ref, image.DockerMaxLayers)
			}
		}
		cfg := pi.Config
		if pi.Platform.Arch == "amd64" {
			// An amd64/v3 build's binaries need v3, whatever level the
			// base was built for (platform.Rank lets it be lower).
			cfg.Variant = pi.Platform.Variant
		}
		img, err := image.Assemble(base, layers[j], cfg, b.plan.Epoch)
		if err != nil {
			return nil, nil, nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): on base %s: %w", name, pi.Platform, ref, err))
		}
		// The config goes up with the last layers rather than after
		// them: the push then ends with the manifest alone.
		if cl, err := partial.ConfigLayer(img); err == nil {
			b.prepare(ctx, im, cl)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, nil, nil, err
		}
		id, err := img.ConfigName()
		if err != nil {
			return nil, nil, nil, err
		}
		ir := &record.Image{Name: name, Platform: pi.Platform.String(), Base: ref, Digest: d.String(), Config: id.String(), Placed: []record.Placement{}}
		for _, l := range pi.Layers {
			for _, pm := range l.Placements {
				dest, replaced, err := b.destination(ctx, name, pi, pm)
				if err != nil {
					return nil, nil, nil, err
				}
				if replaced {
					continue
				}
				ir.Placed = append(ir.Placed, record.Placement{Artifact: b.plan.Artifacts[pm.Artifact].Name, Dest: dest, Path: b.takenPath(&pm)})
			}
		}
		b.mu.Lock()
		b.placed[name+" "+pi.Platform.String()+" "+ref] = ir
		b.mu.Unlock()
		imgs = append(imgs, img)
		if b.opt.Attest.any() {
			att, refs, err := b.attest(ctx, im, pi, ref, base, img, ir)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("image %s (%s): SBOM and provenance: %w", name, pi.Platform, err)
			}
			if att != nil {
				atts = append(atts, att)
			}
			referrers = append(referrers, refs...)
		}
	}
	return imgs, atts, referrers, nil
}
