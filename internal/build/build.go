// Package build carries out a plan: it fetches each artifact once, writes
// the layers, assembles each platform's image on its base and gathers
// platforms into an index. Independent work runs in parallel.
package build

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/version"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	chmod "github.com/tonistiigi/dchapes-mode"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/exe"
	"github.com/pallet-dev/pallet/internal/golicenses"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/transfer"
	"github.com/pallet-dev/pallet/internal/tree"
)

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

// Run carries out p: it checks the outputs, opens the cache (and imports
// the shared one), fetches every artifact once, writes the layers,
// assembles each platform's image on its bases, gathers platforms into
// indexes, writes the outputs and the record, and exports the shared
// cache. Independent work runs in parallel.
func Run(ctx context.Context, p *plan.Plan, opt Options) (*Result, error) {
	if opt.Jobs <= 0 {
		opt.Jobs = runtime.NumCPU()
	}
	if opt.Progress == nil {
		opt.Progress, _ = progress.New("quiet", nil)
	}
	if opt.Compression == "" {
		opt.Compression = layer.Gzip
	}
	if opt.MinGo != "" && !version.IsValid("go"+strings.TrimPrefix(opt.MinGo, "go")) {
		return nil, fmt.Errorf("minimum Go %q: want a Go release such as 1.22.7", opt.MinGo)
	}
	if (opt.CacheFrom != "" || opt.CacheTo != "") && opt.NoCache {
		return nil, errors.New("a shared registry cache needs the local cache, which is turned off")
	}
	if opt.Network.Offline && opt.Network.Mirror == "" {
		return nil, errors.New("an offline build needs a mirror directory (written by pallet fetch)")
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
					return nil, plan.Errorf(im.Pos, "image %s (%s): zstd layers are not pulled by every Windows runtime (Docker on Windows, containerd before 1.7); use gzip, or allow zstd for Windows images with --windows-zstd", im.Name, pi.Platform)
				}
				opt.Progress.Warn("image %s (%s): zstd layers, which Docker on Windows and containerd before 1.7 cannot pull", im.Name, pi.Platform)
			}
		}
	}
	warnWindowsAccess(p, opt.Progress)
	lim := limits(opt.Limits, p.Limits)
	// What bounds each of the build's transfers: its downloads, git
	// fetches and module proxy responses, its shared-cache entries, and
	// every registry call (bases, outputs, the shared cache, the
	// up-to-date check's).
	xfer := transfer.Limits{MaxBytes: lim.MaxDownload, Stall: lim.Stall}
	ctx = regauth.WithBounds(ctx, regauth.Timeouts{Limits: xfer})
	if opt.RecordPath == "" && len(opt.Outputs) > 0 {
		opt.RecordPath = RecordFor(opt.Outputs[0])
	}
	if !opt.NoCache && opt.CacheDir == "" {
		var err error
		if opt.CacheDir, err = cache.DefaultDir(); err != nil {
			return nil, err
		}
	}

	extra := []string{opt.RecordPath}
	if opt.MetadataFile != "" {
		extra = append(extra, opt.MetadataFile)
	}
	if err := output.CheckDistinct(opt.Outputs, extra...); err != nil {
		return nil, err
	}
	if err := checkWrites(p, opt, extra); err != nil {
		return nil, err
	}
	planned := make([]output.Planned, len(p.Images))
	for i, im := range p.Images {
		planned[i] = output.Planned{Repository: im.Repository, Tags: im.Tags}
		for _, pi := range im.Platforms {
			planned[i].Manifests += max(1, len(pi.Bases))
		}
	}
	if err := output.CheckImages(opt.Outputs, planned); err != nil {
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

	fetcher, err := opt.Network.fetcher()
	if err != nil {
		return nil, err
	}
	defer fetcher.Close()
	fetcher.Log = direct.Warn
	if err := fetcher.ShareCheckouts(filepath.Join(work, "git")); err != nil {
		return nil, err
	}
	fetcher.Limits = artifact.Limits{Limits: xfer,
		Unpack: artifact.UnpackLimits{MaxBytes: lim.MaxExtract, MaxEntries: lim.MaxEntries, MaxWindow: lim.MaxWindow}}
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

	for _, t := range opt.Outputs {
		if p, ok := t.(output.Preparer); ok {
			defer p.Finish()
		}
	}
	b := &builder{plan: p, opt: opt, work: work, cache: c, fetcher: fetcher, bases: bases,
		placed: map[string]*record.Image{}, loaders: map[*plan.PlatformImage][]loaderNeed{}, writers: make(chan struct{}, opt.Jobs), memo: record.NoMemo,
		compressors: layer.NewCompressors(opt.Jobs), started: time.Now()}
	if c != nil {
		b.memo = c.RememberAt
	}
	res, err := b.build(ctx)
	if err != nil {
		return nil, err
	}
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
	for i, t := range opt.Outputs {
		done := opt.Progress.Start("output " + t.String())
		err := t.Write(ctx, res.Images)
		done("", err)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", t, err)
		}
		lines, err := output.Written(t, res.Images)
		if err != nil {
			return nil, err
		}
		res.Written = append(res.Written, lines)
		if ud != nil {
			ud.wrote(outputPath(t))
		}
		// The record is written as soon as the output it sits beside is:
		// an output or cache export that fails later leaves no new images
		// next to an old record.
		if i == 0 && opt.RecordPath != "" {
			if err := record.Write(opt.RecordPath, res.Record); err != nil {
				// The output is in place already: say so, or a failed
				// build reads as one that changed nothing.
				return nil, fmt.Errorf("%s is written, but the build record is not: %w", t, err)
			}
			if ud != nil {
				ud.wrote(opt.RecordPath)
			}
		}
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
func (b *builder) build(ctx context.Context) (*Result, error) {
	p := b.plan
	defer b.prefetchBases(ctx)()
	if b.opt.Attest.any() {
		var err error
		if b.recipeFile, err = sbom.RecipeFile(p.Source); err != nil {
			return nil, err
		}
		b.documents = map[string][]byte{}
	}
	b.unplaced = map[string]int{}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
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

// policy applies the build's rules on what may be shipped.
func (b *builder) policy(a record.Artifact, src *plan.Artifact) error {
	if len(a.Licenses) == 0 && !src.NoLicense && !mainModulesLicensed(a.GoBinaries) {
		msg := fmt.Sprintf("%s: no licence file found; name its licence files, or declare that it has none (licenses: none)", &src.Request)
		if b.opt.RequireLicenses {
			return errors.New(msg + "; licences are required")
		}
		// Once per artifact, not once more per platform.
		b.mu.Lock()
		warned := b.unlicensed[src.Name]
		if b.unlicensed == nil {
			b.unlicensed = map[string]bool{}
		}
		b.unlicensed[src.Name] = true
		b.mu.Unlock()
		if !warned {
			b.opt.Progress.Warn("%s", msg)
		}
	}
	if b.opt.MinGo != "" {
		min := "go" + strings.TrimPrefix(b.opt.MinGo, "go")
		for _, g := range a.GoBinaries {
			v := goRelease(g.GoVersion)
			if !version.IsValid(v) {
				return fmt.Errorf("%s: %s was built with Go %q, which cannot be ordered against the minimum Go", &src.Request, g.Path, g.GoVersion)
			}
			if version.Compare(v, min) < 0 {
				return fmt.Errorf("%s: %s was built with %s, older than the minimum Go %s", &src.Request, g.Path, g.GoVersion, strings.TrimPrefix(min, "go"))
			}
		}
	}
	return nil
}

// mainModulesLicensed says whether the artifact's placed files are Go
// binaries whose main modules' licence files were found (a release binary
// stamped with its module version, whose licence comes from the module
// proxy, proven by its sum): their licences are the artifact's, shipped
// under the module's path.
func mainModulesLicensed(bins []record.GoBinary) bool {
	if len(bins) == 0 {
		return false
	}
	for _, g := range bins {
		found := false
		for _, m := range g.Modules {
			if m.Path == g.MainModule && !m.Missing && len(m.Files) > 0 {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// goRelease is the release a binary's recorded Go version belongs to:
// "go1.22.0 X:boringcrypto" is go1.22.0 with an experiment, and a toolchain
// built from the development branch, "devel go1.27-abc123 ...", is counted
// as go1.27, ahead of every go1.26 point release and behind go1.27.0.
func goRelease(v string) string {
	v = strings.TrimPrefix(v, "devel ")
	if i := strings.IndexAny(v, " -"); i >= 0 {
		v = v[:i]
	}
	return v
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
	// unlicensed are the artifacts warned of for having no licence file.
	unlicensed map[string]bool
	// unplaced counts, per artifact, the placements of it that no layer
	// tree has taken yet: once none is left, its tree is let go (see
	// placedAll).
	unplaced map[string]int
	// singles are the archive entries placements of one file take
	// (entryOrigin).
	singles map[placed]string
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

// ready is an artifact being made ready for placing: fetched, scanned
// for the record, its module licences found, the build's rules applied
// and, with SBOMs, described. done closes once it is, or has failed.
type ready struct {
	done      chan struct{}
	err       error
	res       *artifact.Result
	record    record.Artifact
	described *sbom.Artifact
}

// errNotReady is what a layer waiting for a failed artifact gets; the
// artifact's own error is the build's.
var errNotReady = errors.New("an artifact it places failed or was stopped")

// await waits until the artifact under key is ready.
func (b *builder) await(ctx context.Context, key string) (*artifact.Result, error) {
	r := b.ready[key]
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, errNotReady
	}
	return r.res, nil
}

// fetchAll makes every artifact ready, Jobs at a time, and stops at the
// first failure: the artifacts not started then fail as not ready.
func (b *builder) fetchAll(ctx context.Context) error {
	defer close(b.allReady)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(b.opt.Jobs)
	for _, key := range slices.Sorted(maps.Keys(b.plan.Artifacts)) {
		a := b.plan.Artifacts[key]
		r := b.ready[key]
		g.Go(func() error {
			defer close(r.done)
			r.err = ctx.Err()
			if r.err == nil {
				r.err = b.makeReady(ctx, key, a, r)
			}
			return r.err
		})
	}
	return g.Wait()
}

func (b *builder) makeReady(ctx context.Context, key string, a *plan.Artifact, r *ready) error {
	work, err := os.MkdirTemp(b.work, "artifact-*")
	if err != nil {
		return err
	}
	if local, ok := a.Kind.(*artifact.Go); ok && b.opt.ModuleLicenses {
		// The licence classifier, if moduleLicenses will need it for
		// the module's own licence files, loads while go build runs
		// rather than after it: about a second. Finding out walks the
		// module, which need not hold up go build's start either; it is
		// over before this artifact is, so nothing touches the cache
		// after the build.
		prepared := make(chan struct{})
		go func() {
			defer close(prepared)
			golicenses.Prepare(golicenses.Options{SourceDir: local.Module, Remember: b.rememberLicence})
		}()
		defer func() { <-prepared }()
	}
	if g := artifact.GoSettings(a.Kind); g != nil && b.opt.ModuleLicenses && !requiresNothing(a.Kind) {
		// moduleLicenses asks the go command where its module cache is:
		// asked now, the answer (30 ms) comes while go build runs. A
		// module that requires no other links none: its licences never
		// need the cache, and a go command run beside go build would only
		// take a core from it.
		asked := make(chan struct{})
		go func() {
			defer close(asked)
			_, _ = b.moduleCache(ctx, b.fetcher.GoEnv(g, a.Platform))
		}()
		defer func() { <-asked }()
	}
	done := b.opt.Progress.Start(fmt.Sprintf("artifact %s (%s)", a.Name, a.Platform))
	res, err := b.fetcher.Fetch(ctx, &a.Request, work)
	if err != nil {
		done("", shown(ctx, err))
		return plan.Wrap(a.At(err), err)
	}
	how := a.How()
	if res.Cached {
		how += ", cached"
	}
	done(how, nil)
	rec, err := record.Scan(res, b.memo)
	if err != nil {
		return err
	}
	rec.GoBinaries = placedGoBinaries(b.plan, key, rec.GoBinaries)
	// The artifact's own licence files, before those of the modules its
	// programs link join them: what the artifact declares.
	own := res.Licenses
	if b.opt.ModuleLicenses && len(rec.GoBinaries) > 0 {
		// A step of its own: for a binary linking a hundred modules,
		// proving their sources can take longer than the build did.
		done := b.opt.Progress.Start(fmt.Sprintf("module licences %s (%s)", a.Name, a.Platform))
		err := b.moduleLicenses(ctx, a, res, &rec)
		n := linkedModules(rec.GoBinaries)
		done(fmt.Sprintf("%d module%s", n, map[bool]string{true: "s"}[n != 1]), shown(ctx, err))
		if err != nil {
			return plan.Wrap(a.Pos, err)
		}
	}
	if err := b.policy(rec, a); err != nil {
		return plan.Wrap(a.Pos, err)
	}
	if b.opt.Attest.any() {
		// Described from the tree, which goes once the layers placed it.
		d, err := sbom.Describe(rec, res, b.memo)
		if err != nil {
			return err
		}
		if d.License, err = b.declaredLicense(own); err != nil {
			return plan.Wrap(a.Pos, fmt.Errorf("artifact %s: %w", a.Name, err))
		}
		pinnedMainVersion(a, &d)
		r.described = &d
	}
	r.res, r.record = res, rec
	return nil
}

// shown is the error a step's progress says: a step stopped because
// another failed says so, not what its killed command said ("go mod
// download: signal: killed"), which would read as a failure of its own.
func shown(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// placedGoBinaries keeps the Go binaries of the artifact under key that
// the plan's images place: a placement with a path takes only that file
// or directory of it. What links a binary left out (win-bridge.exe in a
// CNI plugins archive of which only host-local.exe is placed) is not in
// the image, so its modules' licences are not shipped nor fetched, its
// Go is not held against --min-go, and the SBOM does not list them.
func placedGoBinaries(p *plan.Plan, key string, bins []record.GoBinary) []record.GoBinary {
	var from []string
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					if pm.Artifact != key {
						continue
					}
					f, err := tree.CleanPath(pm.Path)
					if err != nil || f == "." {
						return bins // the whole artifact, or a path placing refuses
					}
					from = append(from, f)
				}
			}
		}
	}
	if from == nil {
		return bins
	}
	var kept []record.GoBinary
	for _, gb := range bins {
		for _, f := range from {
			if gb.Path == f || strings.HasPrefix(gb.Path, f+"/") {
				kept = append(kept, gb)
				break
			}
		}
	}
	return kept
}

// linkedModules counts the distinct modules the binaries link.
func linkedModules(bins []record.GoBinary) int {
	seen := map[string]bool{}
	for _, gb := range bins {
		for _, m := range gb.Modules {
			seen[m.Path+"@"+m.Version] = true
		}
	}
	return len(seen)
}

// describedAll is the SBOMs' view of every artifact, in the plan's
// order, once all are ready.
func (b *builder) describedAll(ctx context.Context) ([]sbom.Artifact, error) {
	select {
	case <-b.allReady:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var all []sbom.Artifact
	for _, key := range b.plan.Keys() {
		r := b.ready[key]
		if r.err != nil {
			return nil, errNotReady
		}
		if r.described != nil {
			all = append(all, *r.described)
		}
	}
	return all, nil
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
	out := output.Image{Repository: im.Repository, Tags: im.Tags, Referrers: refs}
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

// base resolves a base image under the build's network policy: offline,
// only bases that need no registry.
func (b *builder) base(ctx context.Context, ref string, p platform.Platform) (v1.Image, error) {
	if f, ok := b.prefetched[baseKey{ref, p.String()}]; ok {
		<-f.done
		return f.img, f.err
	}
	return b.resolveBase(ctx, ref, p)
}

func (b *builder) resolveBase(ctx context.Context, ref string, p platform.Platform) (v1.Image, error) {
	if b.opt.Network.Offline && !image.IsBuiltin(ref) && !strings.HasPrefix(ref, "oci:") {
		return nil, fmt.Errorf("base %s is in a registry, and the build is offline; give it as an OCI layout (oci:DIR)", ref)
	}
	return b.bases.Base(ctx, ref, p)
}

// baseKey names a base for one platform.
type baseKey struct{ ref, platform string }

// baseFuture is a base being resolved.
type baseFuture struct {
	done chan struct{}
	img  v1.Image
	err  error
}

// prefetchBases starts resolving every base of the plan, once per
// platform, while the artifacts are fetched and built: a registry's
// manifest and config round trips, or a built-in base's layer, then
// overlap that work instead of following it. It returns a wait for the
// built-in bases, which write into the work directory and must be done
// before it is removed, even when the build fails; the others only read,
// into memory, and a failing build does not wait for them.
func (b *builder) prefetchBases(ctx context.Context) (wait func()) {
	b.prefetched = map[baseKey]*baseFuture{}
	var builtins []*baseFuture
	for _, im := range b.plan.Images {
		for _, pi := range im.Platforms {
			for _, ref := range pi.Bases {
				k := baseKey{ref, pi.Platform.String()}
				if b.prefetched[k] != nil {
					continue
				}
				f := &baseFuture{done: make(chan struct{})}
				b.prefetched[k] = f
				if image.IsBuiltin(ref) {
					builtins = append(builtins, f)
				}
				go func() {
					defer close(f.done)
					f.img, f.err = b.resolveBase(ctx, ref, pi.Platform)
				}()
			}
		}
	}
	return func() {
		for _, f := range builtins {
			<-f.done
		}
	}
}

// warnMixedHostProcess warns of an index that holds Linux entries and a
// Windows entry without os.version (a host-process image): containerd on
// Windows matches an entry without os.version only from 1.6.18 and 1.7.0
// on; older ones find no match in such an index.
func (b *builder) warnMixedHostProcess(name string, imgs []v1.Image) {
	var linux, hpc bool
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return
		}
		linux = linux || cf.OS == "linux"
		hpc = hpc || (cf.OS == "windows" && cf.OSVersion == "")
	}
	if linux && hpc {
		b.opt.Progress.Warn("image %s: its index holds Linux images and a Windows image without os.version (host-process); Windows nodes need containerd 1.6.18 or 1.7.0 and later to pull it", name)
	}
}

// platformImages writes pi's layers once and puts them on each base.
func (b *builder) platformImages(ctx context.Context, im *plan.Image, pi *plan.PlatformImage) (imgs, atts, referrers []v1.Image, err error) {
	name := im.Name
	layers, err := b.layers(ctx, im, pi)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, ref := range pi.Bases {
		base, err := b.base(ctx, ref, pi.Platform)
		if err != nil {
			return nil, nil, nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): %w", name, pi.Platform, err))
		}
		if ls, err := base.Layers(); err == nil {
			for _, l := range ls {
				b.prepare(ctx, im, l)
			}
			// The recipe's own layers are capped; a base can bring more.
			if n := len(ls) + len(layers); n > plan.MaxLayers {
				b.opt.Progress.Warn("%s: image %s (%s): %d layers, %d of them from base %s: Docker refuses to run an image of more than %d layers (max depth exceeded), and overlay mounts of that many may fail", pi.BasePos, name, pi.Platform, n, len(ls), ref, plan.MaxLayers)
			}
		}
		img, err := image.Assemble(base, layers, pi.Config, b.plan.Epoch)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("on base %s: %w", ref, err)
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
		ir := &record.Image{Name: name, Platform: pi.Platform.String(), Base: ref, Digest: d.String(), Placed: []record.Placement{}}
		for _, l := range pi.Layers {
			for _, pm := range l.Placements {
				dest, replaced, err := b.destination(ctx, name, pi, pm)
				if err != nil {
					return nil, nil, nil, err
				}
				if replaced {
					continue
				}
				ir.Placed = append(ir.Placed, record.Placement{Artifact: b.plan.Artifacts[pm.Artifact].Name, Dest: dest})
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

// layers writes pi's layers. Each layer's tree is made as soon as the
// artifacts it places are ready, and written at once unless it holds a
// Windows link, whose type comes from the whole image (its target may be
// in another layer, through other links): those wait for every tree.
// The checks across layers (a file placed twice, names equal under
// Windows' case folding) run once every tree is made, while the first
// layers may be written already (into the cache, where a whole layer
// does no harm); a failed check is the error reported, and stops the
// writing of the others.
func (b *builder) layers(ctx context.Context, im *plan.Image, pi *plan.PlatformImage) ([]image.Layer, error) {
	name := im.Name
	format := layer.Linux
	if pi.Platform.IsWindows() {
		format = layer.Windows
	}
	n := len(pi.Layers)
	// raw are the layer trees as placed; trees are where they land in
	// the image, through what the bases and the layers below hold (Linux).
	raw := make([]*tree.Tree, n)
	trees := make([]*tree.Tree, n)
	whats := make([][]string, n)
	made := make([]chan struct{}, n)
	for i := range made {
		made[i] = make(chan struct{})
	}
	// allTrees closes once every tree is made; links is then the image's
	// link typing (Windows).
	allTrees := make(chan struct{})
	var links func(string) (bool, bool)
	layers := make([]image.Layer, n)
	g, gctx := errgroup.WithContext(ctx)
	var checkErr error
	g.Go(func() error {
		for i := range made {
			select {
			case <-made[i]:
			case <-gctx.Done():
				return nil // another goroutine's error is the one
			}
		}
		if format == layer.Linux {
			// Each layer was written through its bases alone, as soon
			// as its tree was made; placed through the layers below it
			// too, a layer that goes through their links or directories
			// lands elsewhere, and is written again.
			if !pi.Overwrite {
				if checkErr = sameFileInTwoLayers(name, pi, raw); checkErr != nil {
					return checkErr
				}
			}
			views, err := b.baseViews(gctx, name, pi)
			if err != nil {
				checkErr = err
				return err
			}
			placed, err := placeOnBases(name, pi, views, raw)
			if err != nil {
				checkErr = err
				return err
			}
			copy(trees, placed)
		} else {
			copy(trees, raw)
		}
		if checkErr = b.checkLayers(gctx, name, pi, format, trees, &links); checkErr != nil {
			return checkErr
		}
		close(allTrees)
		b.saveNew()
		return nil
	})
	for i, l := range pi.Layers {
		g.Go(func() error {
			t, what, err := b.layerTree(gctx, name, pi, l)
			if err != nil {
				return err
			}
			raw[i], whats[i] = t, what
			if format == layer.Linux {
				views, err := b.baseViews(gctx, name, pi)
				if err != nil {
					return err
				}
				if t, err = t.Through(views[0]); err != nil {
					return throughError(name, pi, l, err)
				}
			}
			written := t
			close(made[i])
			opt := layer.Options{Format: format, Epoch: b.plan.Epoch, Compression: b.opt.Compression, Jobs: b.opt.Jobs, Compressors: b.compressors}
			if format == layer.Windows && hasLinks(t) {
				select {
				case <-allTrees:
				case <-gctx.Done():
					return gctx.Err()
				}
				opt.LinkTarget = links
			}
			if err := gctx.Err(); err != nil {
				return err
			}
			write := func(t *tree.Tree) (v1.Layer, error) {
				lay, err := b.layer(t, opt)
				var bad *layer.EntryError
				if errors.As(err, &bad) {
					pm, from := b.entryOrigin(gctx, name, pi, l, bad.Path)
					return nil, plan.Errorf(pm.Pos, "image %s (%s), layer %s: %v%s", name, pi.Platform, l.Name, err, from)
				}
				if err != nil {
					return nil, fmt.Errorf("layer %s: %w", l.Name, err)
				}
				return lay, nil
			}
			lay, err := write(written)
			if err != nil {
				return err
			}
			if format == layer.Linux {
				select {
				case <-allTrees:
				case <-gctx.Done():
					return gctx.Err()
				}
				if !tree.Same(trees[i], written) {
					if lay, err = write(trees[i]); err != nil {
						return err
					}
				}
			}
			layers[i] = image.Layer{Layer: lay, CreatedBy: "pallet: place " + strings.Join(whats[i], ", ")}
			b.prepare(ctx, im, lay)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if checkErr != nil {
			return nil, checkErr
		}
		return nil, err
	}
	return layers, nil
}

// saveNew saves, beside the layer writing, the memo shards this build
// made from nothing (cache.SaveNew): called once an image's layer trees
// are made, when its inputs are hashed and checked (the executables'
// facts), so that the end of the build writes only what changed since
// (the layer blobs', the outputs'). A cold build's inputs fill most of
// the memo's 256 shards, each a file created and renamed into place.
func (b *builder) saveNew() {
	if b.cache != nil {
		b.saving.Go(b.cache.SaveNew)
	}
}

// prepare hands layer l of im to the outputs that start on blobs early
// (a registry uploads it while the build goes on).
func (b *builder) prepare(ctx context.Context, im *plan.Image, l v1.Layer) {
	for _, t := range b.opt.Outputs {
		if p, ok := t.(output.Preparer); ok {
			p.Prepare(ctx, im.Repository, im.Tags, l)
		}
	}
}

// warnWindowsAccess says, once per placement, that the owner and mode it
// sets do nothing on the Windows platforms it is made on. A Windows layer
// still carries them in its tar headers, as BuildKit's does, but Windows
// reads only the security descriptor, which lets Users read and execute
// whatever the mode. The front ends refuse what can only mislead (a
// recipe's placement made only on Windows); this is the rest: a placement
// made on Linux too, and a Dockerfile's COPY --chown or --chmod, which
// BuildKit accepts on Windows and does not apply either.
func warnWindowsAccess(p *plan.Plan, rep progress.Reporter) {
	type use struct {
		image     string
		pm        plan.Placement
		platforms []string
	}
	var uses []*use
	// By line, not column: a COPY of several sources is several
	// placements, one instruction.
	byLine := map[plan.Pos]*use{}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			if !pi.Platform.IsWindows() {
				continue
			}
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					if pm.UID == 0 && pm.GID == 0 && pm.Mode == 0 {
						continue
					}
					line := plan.Pos{File: pm.Pos.File, Line: pm.Pos.Line}
					u := byLine[line]
					if u == nil {
						u = &use{image: im.Name, pm: pm}
						byLine[line] = u
						uses = append(uses, u)
					}
					if !slices.Contains(u.platforms, pi.Platform.String()) {
						u.platforms = append(u.platforms, pi.Platform.String())
					}
				}
			}
		}
	}
	for _, u := range uses {
		var set []string
		if u.pm.UID != 0 || u.pm.GID != 0 {
			set = append(set, fmt.Sprintf("owner %d:%d", u.pm.UID, u.pm.GID))
		}
		if u.pm.Mode != 0 {
			set = append(set, fmt.Sprintf("mode %04o", u.pm.Mode.Perm()))
		}
		rep.Warn("%s: image %s: ignored on %s: %s; Windows reads no owner or mode from a layer, access is the security descriptor pallet writes (Users may read and execute)", u.pm.Pos, u.image, strings.Join(u.platforms, ", "), strings.Join(set, " and "))
	}
}

// placementOf is the placement of l that put the file at p (slash
// separated, from the root): the one with the longest destination
// holding it, else the layer's first.
func placementOf(l *plan.Layer, p string) plan.Placement {
	best, n := l.Placements[0], -1
	for _, pm := range l.Placements {
		d := strings.Trim(path.Clean("/"+pm.Dest), "/")
		if (d == "" || p == d || strings.HasPrefix(p, d+"/")) && len(d) > n {
			best, n = pm, len(d)
		}
	}
	return best
}

// entryOrigin is the placement of l that put the file at p (slash
// separated, relative to the root), found where it lands through the
// bases (destination), and, when it unpacks an archive, the archive and
// the entry p came from, as a message says them: the archive is what a
// recipe's author must look into, and the image path alone does not
// name it. The artifact's tree is let go by then (placedAll): what
// layerTree kept of a placement of one file (singles) says its entry,
// and any other entry is the path below the destination, below the
// placement's path.
func (b *builder) entryOrigin(ctx context.Context, name string, pi *plan.PlatformImage, l *plan.Layer, p string) (plan.Placement, string) {
	best, at, dest := b.landedAt(ctx, name, pi, l, p)
	if at < 0 {
		return best, ""
	}
	a := b.plan.Artifacts[best.Artifact]
	shown, strip, ok := artifact.ArchiveOf(a.Kind)
	if !ok {
		return best, ""
	}
	b.mu.Lock()
	entry := b.singles[placed{l, at}]
	b.mu.Unlock()
	if entry == "" && p != dest {
		entry = strings.TrimPrefix(p, dest+"/")
		if from := strings.Trim(path.Clean("/"+best.Path), "/"); from != "" {
			entry = path.Join(from, entry)
		}
	}
	if entry == "" {
		return best, ""
	}
	if strip > 0 {
		return best, fmt.Sprintf(" (artifact %s: the archive %s, its entry named %s once extract.strip removed %d leading component(s))", a.Name, shown, layer.ShowPath(entry), strip)
	}
	return best, fmt.Sprintf(" (artifact %s: the archive %s, its entry %s)", a.Name, shown, layer.ShowPath(entry))
}

// landedAt is placementOf with each placement's destination where it
// lands through the bases (destination: into a directory, through a
// Windows base's links), and its index in l and that destination, clean
// (-1 and "" when none holds p: placementOf's answer).
func (b *builder) landedAt(ctx context.Context, name string, pi *plan.PlatformImage, l *plan.Layer, p string) (best plan.Placement, at int, dest string) {
	best, at, n := placementOf(l, p), -1, -1
	for i, pm := range l.Placements {
		d, replaced, err := b.destination(ctx, name, pi, pm)
		if err != nil || replaced {
			continue
		}
		d = strings.Trim(path.Clean("/"+d), "/")
		if (d == "" || p == d || strings.HasPrefix(p, d+"/")) && len(d) > n {
			best, at, n, dest = pm, i, len(d), d
		}
	}
	return best, at, dest
}

// placed names the placement at of layer l.
type placed struct {
	l  *plan.Layer
	at int
}

// singleFile is the file a placement from of an artifact's tree t puts
// at, or into, its destination alone (tree.Placement), or "" when it
// places a directory's content.
func singleFile(t *tree.Tree, from string) string {
	from = strings.Trim(path.Clean("/"+from), "/")
	if from != "" {
		if e, ok := t.Get(from); ok && e.Kind != tree.Dir {
			return from
		}
		return ""
	}
	if t.Len() != 1 {
		return ""
	}
	for e := range t.All() {
		if e.Kind != tree.Dir {
			return e.Path
		}
	}
	return ""
}

// checkLayers applies the checks across pi's layers, and sets links to
// the image's link typing (Windows).
func (b *builder) checkLayers(ctx context.Context, name string, pi *plan.PlatformImage, format layer.Format, trees []*tree.Tree, links *func(string) (bool, bool)) error {
	if !pi.Overwrite {
		if err := sameFileInTwoLayers(name, pi, trees); err != nil {
			return err
		}
	}
	if format != layer.Windows {
		b.warnMissingLoaders(ctx, name, pi, trees)
		return nil
	}
	if !pi.Overwrite {
		var c *layer.CaseCollision
		if err := layer.CheckWindowsImage(trees...); errors.As(err, &c) {
			l := pi.Layers[c.Layer]
			return plan.Errorf(l.Placements[0].Pos, "image %s (%s), layer %s: %v", name, pi.Platform, l.Name, err)
		}
	}
	// Links into a built-in base are typed by what it holds, and links
	// into another base by its view (what its layers pallet reads hold,
	// through its links); what none holds takes link: or a warning.
	resolve := trees
	var base func(string) (bool, bool)
	if bt := builtinBase(pi.Bases); bt != nil {
		resolve = append([]*tree.Tree{bt}, trees...)
	} else {
		var err error
		if base, err = b.windowsBasesKind(ctx, name, pi); err != nil {
			return err
		}
	}
	*links = layer.ImageLinksOn(base, resolve...)
	for i, t := range trees {
		for _, w := range layer.UntypedLinks(t, layer.Options{Format: format, LinkTarget: *links}) {
			b.opt.Progress.Warn("image %s (%s), layer %s: %s", name, pi.Platform, pi.Layers[i].Name, w)
		}
	}
	return b.windowsBaseClash(ctx, name, pi, trees)
}

// windowsBasesKind says, for the Windows bases of pi, whether they hold
// a directory at a path (clean, relative to C:\), following their
// links, and whether that is known: only when every base knows, and
// all agree (the layers are written once for all of them).
func (b *builder) windowsBasesKind(ctx context.Context, name string, pi *plan.PlatformImage) (func(string) (bool, bool), error) {
	views, err := b.windowsViews(ctx, name, pi)
	if err != nil {
		return nil, err
	}
	return func(p string) (isDir, known bool) {
		for i, v := range views {
			_, kind, _, err := v.resolve(p)
			if err != nil || kind == winNone || i > 0 && (kind == winDir) != isDir {
				return false, false
			}
			isDir = kind == winDir
		}
		return isDir, len(views) > 0
	}, nil
}

// builtinBase is the tree of the built-in base every one of bases is, or
// nil: the layers are written once for all of them.
func builtinBase(bases []string) *tree.Tree {
	var t *tree.Tree
	for _, b := range bases {
		if t = image.BuiltinBaseTree(b); t == nil {
			return nil
		}
	}
	return t
}

// hasLinks says whether t holds a symlink.
func hasLinks(t *tree.Tree) bool {
	for _, e := range t.Entries() {
		if e.Kind == tree.Symlink {
			return true
		}
	}
	return false
}

// modeChanges is the function that applies symbolic modes one after
// another, as BuildKit's copy (fsutil) applies a COPY --chmod=u+x to
// each entry's own mode: parsed with a umask of 0, so "+x" is "a+x",
// and "X" adds execute to a directory or to a file with an execute
// bit. Nil for none.
func modeChanges(syms []string) (func(fs.FileMode) fs.FileMode, error) {
	if len(syms) == 0 {
		return nil, nil
	}
	sets := make([]chmod.Set, len(syms))
	for i, s := range syms {
		set, err := chmod.ParseWithUmask(s, 0)
		if err != nil {
			return nil, fmt.Errorf("mode %s: %w", s, err)
		}
		sets[i] = set
	}
	return func(m fs.FileMode) fs.FileMode {
		for _, set := range sets {
			m = set.Apply(m)
		}
		return m
	}, nil
}

// layerTree places l's artifacts (and their licences) into one tree.
func (b *builder) layerTree(ctx context.Context, name string, pi *plan.PlatformImage, l *plan.Layer) (*tree.Tree, []string, error) {
	t := tree.New()
	var what []string
	for i, pm := range l.Placements {
		res, err := b.await(ctx, pm.Artifact)
		if err != nil {
			return nil, nil, err
		}
		// Of an archive, the entry a placement of one file takes, for
		// the errors that name it once the tree is let go (entryOrigin).
		if _, _, ok := artifact.ArchiveOf(b.plan.Artifacts[pm.Artifact].Kind); ok {
			if f := singleFile(res.Tree, pm.Path); f != "" {
				b.mu.Lock()
				if b.singles == nil {
					b.singles = map[placed]string{}
				}
				b.singles[placed{l, i}] = f
				b.mu.Unlock()
			}
		}
		dest, replaced, err := b.destination(ctx, name, pi, pm)
		if err != nil {
			return nil, nil, err
		}
		if replaced {
			continue
		}
		place := tree.Placement{Dest: dest, FileMode: pm.Mode, DirMode: pm.DirMode, UID: pm.UID, GID: pm.GID, From: pm.Path, LinkAs: pm.LinkAs, OwnNewDirs: pm.OwnNewDirs, ImpliedRootOwned: pm.ImpliedRootOwned, ReplaceLinks: pm.ReplaceLinks, CopiedDirs: pm.CopiedDirs, NoLinksBelow: pm.NoLinksBelow, StageDest: pm.StageDest, StageMade: pm.StageMade, StageDirs: pm.StageDirs}
		if place.Chmod, err = modeChanges(pm.ModeChanges); err != nil {
			return nil, nil, plan.Wrap(pm.Pos, err)
		}
		// A file put into a directory the base holds at Dest is at a
		// name below the destination, which Docker's COPY does not
		// resolve.
		place.FollowLink = pm.FollowLink && dest == pm.Dest
		if b.plan.Artifacts[pm.Artifact].Check {
			needs, err := b.checkExecutables(res, place, pi.Platform)
			if err != nil {
				return nil, nil, plan.Wrap(placedAt(pm, err), fmt.Errorf("image %s (%s): %w", name, pi.Platform, err))
			}
			if len(needs) > 0 {
				b.mu.Lock()
				b.loaders[pi] = append(b.loaders[pi], needs...)
				b.mu.Unlock()
			}
		}
		if err := t.Place(res.Tree, place); err != nil {
			return nil, nil, plan.Wrap(placedAt(pm, err), fmt.Errorf("image %s (%s), layer %s: place %s at %s: %w", name, pi.Platform, l.Name, res.Record.Name, dest, err))
		}
		what = append(what, res.Record.Name+" "+dest)
		if pm.Licenses && res.Licenses.Len() > 0 {
			dest := "/LICENSES/" + res.Record.Name + "/"
			if err := t.Place(res.Licenses, tree.Placement{Dest: dest}); err != nil {
				return nil, nil, fmt.Errorf("layer %s: licences of %s: %w", l.Name, res.Record.Name, err)
			}
		}
	}
	b.placedAll(l)
	return t, what, nil
}

// placedAll counts l's placements as taken, and lets go of the tree of
// an artifact no layer tree will place again. The layer trees hold what
// they placed; keeping the artifact's tree as well, while the layers'
// keys are made and the memo of every file's digest is in memory, was a
// fifth of the live heap of a 100,000-file no-op. The record, the SBOMs
// and module licences were made from the tree before it was ready.
func (b *builder) placedAll(l *plan.Layer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pm := range l.Placements {
		if b.unplaced[pm.Artifact]--; b.unplaced[pm.Artifact] == 0 {
			b.ready[pm.Artifact].res.Tree = nil
		}
	}
}

// sameFileInTwoLayers refuses a path that two layers both put something
// at, unless both put a directory there: the later one would silently
// hide the earlier one's file, link or directory, which in a recipe is a
// mistake (two artifacts shipping one file), not a wish.
func sameFileInTwoLayers(name string, pi *plan.PlatformImage, trees []*tree.Tree) error {
	if len(trees) < 2 {
		return nil
	}
	type placed struct {
		layer int
		kind  tree.Kind
	}
	first := map[string]placed{}
	for i, t := range trees {
		for _, e := range t.Entries() {
			f, ok := first[e.Path]
			if !ok {
				first[e.Path] = placed{i, e.Kind}
				continue
			}
			// Directories merge; anything else in a later layer
			// replaces what an earlier one put there, a directory
			// with all it holds.
			if f.kind == tree.Dir && e.Kind == tree.Dir {
				continue
			}
			a, b := pi.Layers[f.layer], pi.Layers[i]
			if f.kind != tree.Dir && e.Kind != tree.Dir {
				return plan.Errorf(b.Placements[0].Pos, "image %s (%s): /%s is placed by layer %s (%s, at %s) and again by layer %s (%s); the later one would hide the first: place it once, or put both placements in one layer to see which", name, pi.Platform, e.Path, a.Name, artifactsOf(a), a.Placements[0].Pos, b.Name, artifactsOf(b))
			}
			return plan.Errorf(b.Placements[0].Pos, "image %s (%s): /%s is a %s in layer %s (%s, at %s) and a %s in layer %s (%s); the later one would replace the first, and hide what it holds: place them at different paths", name, pi.Platform, e.Path, kindName(f.kind), a.Name, artifactsOf(a), a.Placements[0].Pos, kindName(e.Kind), b.Name, artifactsOf(b))
		}
	}
	return nil
}

// kindName names a tree entry's kind in a sentence.
func kindName(k tree.Kind) string {
	if k == tree.Dir {
		return "directory"
	}
	return k.String()
}

func artifactsOf(l *plan.Layer) string {
	var names []string
	for _, pm := range l.Placements {
		n, _, _ := strings.Cut(pm.Artifact, "@")
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// layer returns the layer for t: from the cache when the same tree was
// written before (no tar, no compression), else written now and kept.
func (b *builder) layer(t *tree.Tree, opt layer.Options) (v1.Layer, error) {
	if opt.Compression == "" {
		opt.Compression = layer.Gzip
	}
	b.writers <- struct{}{}
	defer func() { <-b.writers }()
	c := b.cache
	if c == nil {
		return layer.Build(t, b.work, opt)
	}
	// The digests the key is made of are the ones the written layer must
	// have: layer.Build checks each file against them as it writes it.
	keyed := map[string]string{}
	keyer := cache.NewKeyer()
	err := layer.KeyParts(t, opt, func(path string, st tree.Stamp) (string, error) {
		sum, err := c.FileDigest(path, st)
		keyed[path] = sum
		return sum, err
	}, keyer.Add)
	if err != nil {
		return nil, err
	}
	opt.Expect = func(path string) string { return keyed[path] }
	// A file this build hashed already (unpacked it, or read it for the
	// key once it had settled) is not hashed again as it is written.
	opt.Known = c.Checked
	key := keyer.Sum()
	// A layer pulled from a shared registry cache must be this tree's:
	// equal keys give identical tars, so its diff ID must be the digest of
	// the tar this build would write (read, not compressed).
	check := func(e cache.LayerEntry, _ string) error {
		if e.Compression != string(opt.Compression) {
			return fmt.Errorf("layer entry is %s, not %s", e.Compression, opt.Compression)
		}
		h := sha256.New()
		if err := layer.WriteTar(h, t.Entries(), opt); err != nil {
			return err
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != e.DiffID {
			return fmt.Errorf("layer entry claims diff ID %s, but this tree's tar is %s", e.DiffID, got)
		}
		return nil
	}
	return cache.Aside(c, "layer-"+key, func(bool) (v1.Layer, bool) { return cachedLayer(c, key, opt.Compression, check) }, func() (v1.Layer, error) {
		tmp, release, err := c.TempDir()
		if err != nil {
			return nil, err
		}
		defer release()
		defer os.RemoveAll(tmp)
		l, err := layer.Build(t, tmp, opt)
		if err != nil {
			// What the memo said of the file is not remembered for the
			// next build, which reads it again: were the memo wrong, every
			// build would fail here.
			if ce := (*layer.ChangedError)(nil); errors.As(err, &ce) {
				c.Forget(ce.Source)
			}
			return nil, err
		}
		digest, _ := l.Digest()
		diffID, _ := l.DiffID()
		size, _ := l.Size()
		blob, err := c.PutLayer(key, l.(*layer.File).Path, cache.LayerEntry{Digest: digest.String(), DiffID: diffID.String(), Size: size, Compression: string(opt.Compression)})
		if err != nil {
			return nil, err
		}
		// The blob was hashed as it was written: the outputs and the next
		// build take that digest instead of reading it again.
		if err := c.Learn(blob, digest.Hex); err != nil {
			return nil, err
		}
		out := layer.Open(blob, digest, diffID, size, opt.Compression)
		out.Verified = true
		return out, nil
	})
}

// cachedLayer is the cached layer for key, if its entry holds. The entry's
// diff ID and compression reach the image config as they are, so they are
// checked as the blob is: the diff ID against the blob decompressed, which
// the memo keeps while the blob is untouched (learned as it was put).
func cachedLayer(c *cache.Cache, key string, comp layer.Compression, check func(cache.LayerEntry, string) error) (v1.Layer, bool) {
	e, blob, ok := c.LayerChecked(key, check)
	if !ok || e.Compression != string(comp) {
		return nil, false
	}
	digest, err1 := v1.NewHash(e.Digest)
	diffID, err2 := v1.NewHash(e.DiffID)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	// The blob is checked against its digest here (from the cache's memory
	// of it while the file is untouched, else by reading it): a damaged
	// entry is a miss, rebuilt, rather than a failed output.
	sum, err := c.FileSHA256(blob)
	if err != nil || sum != digest.Hex {
		return nil, false
	}
	got, err := c.Remember(blob, cache.DiffIDFact(string(comp)), func(p string) (string, error) {
		h, err := layer.DiffIDOf(p, comp)
		return h.String(), err
	})
	if err != nil || got != e.DiffID {
		return nil, false
	}
	l := layer.Open(blob, digest, diffID, e.Size, comp)
	l.Verified = true
	return l, true
}

// loaderNeed is a dynamically linked executable placed in an image and
// what it needs there to start: its loader (PT_INTERP) and shared
// libraries.
type loaderNeed struct {
	path string
	exe.Dynamic
}

// checkExecutables refuses an executable built for another platform than
// the image's, before any layer is written, and returns the dynamically
// linked ones with what they need. A file that passed for this platform
// once is not read again while it is untouched.
func (b *builder) checkExecutables(res *artifact.Result, place tree.Placement, p platform.Platform) ([]loaderNeed, error) {
	placed := tree.New()
	if err := placed.Place(res.Tree, place); err != nil {
		return nil, err
	}
	fact := "exe-dynamic " + p.OS + "/" + p.Arch
	var needs []loaderNeed
	for _, e := range placed.Entries() {
		if e.Kind != tree.File {
			continue
		}
		got, err := b.memo(e.Source, e.Stamp, fact, func(path string) (string, error) {
			d, err := exe.CheckDynamic(path, "/"+e.Path, p.OS, p.Arch)
			if err != nil || d.Interp == "" {
				return "ok", err
			}
			j, err := json.Marshal(d)
			return "ok " + string(j), err
		})
		if err != nil {
			return nil, fmt.Errorf("artifact %s: %w (set check: false on the artifact to allow it)", res.Record.Name, err)
		}
		if j, ok := strings.CutPrefix(got, "ok "); ok {
			var d exe.Dynamic
			if json.Unmarshal([]byte(j), &d) == nil && d.Interp != "" {
				needs = append(needs, loaderNeed{path: "/" + e.Path, Dynamic: d})
			}
		}
	}
	return needs, nil
}

// warnMissingLoaders warns of dynamically linked executables whose
// loader neither the image's layers nor its base provide: the image
// builds, and fails at its first start with "no such file or directory"
// (a cgo binary on scratch, or on a base of another C library: musl's
// loader is not glibc's). An executable whose loader is there is checked
// for the shared libraries it needs (see missingLibraries): one the
// image lacks fails the start too (runc without libseccomp.so.2).
func (b *builder) warnMissingLoaders(ctx context.Context, name string, pi *plan.PlatformImage, trees []*tree.Tree) {
	b.mu.Lock()
	needs := b.loaders[pi]
	b.mu.Unlock()
	if len(needs) == 0 {
		return
	}
	// In the layers, loaders are looked for by name anywhere: the path
	// may run through links the layers make (lib64 -> usr/lib64), and a
	// warning that cries wolf on a merged-/usr root file system is worse
	// than one that misses a misplaced loader.
	names := map[string]bool{}
	for _, n := range needs {
		names[path.Base(n.Interp)] = false
	}
	placed := newLayerFiles(trees)
	for p := range placed.files {
		if _, ok := names[path.Base(p)]; ok {
			names[path.Base(p)] = true
		}
	}
	views, err := b.baseViews(ctx, name, pi)
	if err != nil {
		return // said where the layers are placed on the bases
	}
	for i, ref := range pi.Bases {
		if ref != image.Scratch && views[i] == nil {
			continue // a built-in base pallet does not read this way
		}
		var libs *libLookup
		for _, n := range needs {
			if names[path.Base(n.Interp)] || viewHasFile(views[i], n.Interp) {
				if libs == nil {
					libs = newLibLookup(views[i], placed)
					for _, kv := range pi.Config.Env {
						if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
							libs.libraryPath = v
						}
					}
				}
				if missing := libs.missing(n, pi.Platform); len(missing) > 0 {
					on := "the base " + ref
					if ref == image.Scratch {
						on = "scratch"
					}
					b.opt.Progress.Warn("%s: image %s (%s): %s needs the shared %s %s, which neither %s nor the image's layers hold where its loader %s looks: it will not start (error while loading shared libraries); install %s in the base, place %s in a directory the loader searches (or one the executable's run path names), or link it statically", pi.BasePos, name, pi.Platform, n.path, plural(len(missing), "library", "libraries"), strings.Join(missing, ", "), on, n.Interp, plural(len(missing), "it", "them"), plural(len(missing), "it", "them"))
				}
				continue
			}
			if ref == image.Scratch {
				b.opt.Progress.Warn("image %s (%s): %s is dynamically linked and needs %s, which nothing in the image provides on scratch: it will not start; link it statically (CGO_ENABLED=0, or -extldflags -static) or build on a base with its C library", name, pi.Platform, n.path, n.Interp)
			} else {
				b.opt.Progress.Warn("%s: image %s (%s): %s is dynamically linked and needs %s, which neither the base %s nor the image's layers hold: it will not start; build it for the base's C library (the base distro's compiler, cc:), link it statically, or use a base that has it", pi.BasePos, name, pi.Platform, n.path, n.Interp, ref)
			}
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// viewHasFile says whether the base whose view is v holds a file (or a
// link to one) at the absolute path p, through its links.
func viewHasFile(v *tree.View, p string) bool {
	if v == nil {
		return false
	}
	dir, err := v.Links.Resolve(strings.Trim(path.Dir(path.Clean("/"+p)), "/"))
	if err != nil {
		return false
	}
	at := path.Join(dir, path.Base(p))
	if dir == "." {
		at = path.Base(p)
	}
	_, link := v.FileLinks[at]
	return v.Files[at] || link
}

// Mirror copies into dir what building reqs offline needs: downloads,
// repositories, Go modules and toolchains (pallet fetch), and the modules
// whose licences the Go binaries of downloaded releases and local files
// ship (--module-licenses, the default).
func Mirror(ctx context.Context, reqs []*artifact.Request, dir string, n Network, log func(string, ...any)) error {
	// The go command refuses a relative GOMODCACHE, and the mirror's is
	// one.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Two fetches into one mirror would each prune the module trees the
	// other's go command is reading.
	lock := flock.New(filepath.Join(dir, ".pallet-fetch.lock"))
	if ok, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil || !ok {
		return fmt.Errorf("lock the mirror %s: %w", dir, cmp.Or(err, ctx.Err()))
	}
	defer lock.Unlock()
	f, err := n.fetcher()
	if err != nil {
		return err
	}
	defer f.Close()
	f.Log = log
	if err := f.MirrorTo(ctx, dir, reqs); err != nil {
		return err
	}
	if err := mirrorLinkedModules(ctx, f, reqs, dir); err != nil {
		return err
	}
	// What the licences of linked modules unpacked, as MirrorTo prunes
	// what the builds did.
	return artifact.PruneModuleCache(dir)
}

// mirrorLinkedModules puts in the mirror's module cache every module the
// Go binaries of reqs' releases and local files link: what a build's
// module licences read, and which no go.mod of the recipe's names. Each
// artifact is unpacked from the mirror just filled, offline, as the
// build will unpack it; the modules are proven against the sums the
// binaries record as they are fetched.
func mirrorLinkedModules(ctx context.Context, network *artifact.Fetcher, reqs []*artifact.Request, dir string) error {
	f := artifact.New()
	f.Log = network.Log
	f.Mirror, f.Offline = dir, true
	tmp, err := os.MkdirTemp("", "pallet-fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for i, r := range reqs {
		if artifact.GoSettings(r.Kind) != nil {
			continue // its go.mod's modules are mirrored with it
		}
		work := filepath.Join(tmp, strconv.Itoa(i))
		res, err := f.Fetch(ctx, r, work)
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		rec, err := record.Scan(res, record.NoMemo)
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		if len(rec.GoBinaries) == 0 {
			continue
		}
		env, err := network.MirrorGoEnv(&artifact.Go{}, r.Platform, dir)
		if err != nil {
			return err
		}
		for j, gb := range rec.GoBinaries {
			e, ok := res.Tree.Get(gb.Path)
			if !ok {
				continue
			}
			opt := golicenses.Options{Work: filepath.Join(work, "licences-"+strconv.Itoa(j)), Env: env}
			if _, err := golicenses.Collect(ctx, e.Source, opt); err != nil {
				return fmt.Errorf("%s: modules of %s: %w", r, gb.Path, err)
			}
		}
		network.Log("mirrored the modules the %d Go binaries of %s link", len(rec.GoBinaries), r)
	}
	return nil
}

// Metadata is what --metadata-file holds.
type Metadata struct {
	Images  []MetadataImage  `json:"images"`
	Outputs []MetadataOutput `json:"outputs"`
}

// MetadataImage is one image: its index (or one manifest) and manifests.
type MetadataImage struct {
	record.Result
	Manifests []MetadataManifest `json:"manifests"`
}

// MetadataManifest is one platform's manifest on one base.
type MetadataManifest struct {
	Platform string `json:"platform"`
	Base     string `json:"base"`
	Digest   string `json:"digest"`
}

// MetadataOutput is what one output holds.
type MetadataOutput struct {
	Output  string   `json:"output"`
	Written []string `json:"written"`
}

func writeMetadata(path string, outputs []output.Target, res *Result) error {
	var m Metadata
	for _, r := range res.Record.Results {
		mi := MetadataImage{Result: r, Manifests: []MetadataManifest{}}
		for _, im := range res.Record.Images {
			if im.Name == r.Name {
				mi.Manifests = append(mi.Manifests, MetadataManifest{Platform: im.Platform, Base: im.Base, Digest: im.Digest})
			}
		}
		m.Images = append(m.Images, mi)
	}
	for i, t := range outputs {
		m.Outputs = append(m.Outputs, MetadataOutput{Output: t.String(), Written: res.Written[i]})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tempfile.SweepBeside(path)
	return tempfile.WriteFile(path, append(data, '\n'))
}

// placedAt is where the recipe wrote what err, from placing pm, blames:
// its path, when that names nothing in the artifact.
func placedAt(pm plan.Placement, err error) plan.Pos {
	if errors.Is(err, tree.ErrNoPath) && pm.PathPos.Line != 0 {
		return pm.PathPos
	}
	return pm.Pos
}
