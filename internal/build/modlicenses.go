package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/golicenses"
	"github.com/pallet-dev/pallet/internal/once"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tree"
)

// moduleLicenses collects the licence and notice files of every module
// linked into each Go binary of an artifact, proven against the sums the
// binary records, adds them to what is shipped under
// /LICENSES/<artifact>/<module path>/, and records them.
func (b *builder) moduleLicenses(ctx context.Context, pa *plan.Artifact, res *artifact.Result, a *record.Artifact) error {
	g := artifact.GoSettings(pa.Kind)
	if g == nil {
		g = &artifact.Go{} // a downloaded release: the build's own settings
	}
	env := b.fetcher.GoEnv(g, pa.Platform)
	// Asked once per environment in the build, not by golicenses once per
	// binary; by makeReady already, if it could. A module that requires
	// nothing links no module the cache holds: golicenses asks, should
	// one need it after all.
	var modCache string
	if !requiresNothing(pa.Kind) {
		var err error
		if modCache, err = b.moduleCache(ctx, env); err != nil {
			return err
		}
	}
	merged := tree.New()
	for _, e := range res.Licenses.Entries() {
		if err := merged.Add(e); err != nil {
			return err
		}
	}
	for i := range a.GoBinaries {
		gb := &a.GoBinaries[i]
		e, ok := res.Tree.Get(gb.Path)
		if !ok {
			continue
		}
		work, err := b.licenceWork("licences-*")
		if err != nil {
			return err
		}
		src, selected := goSource(pa, res)
		// Name: the binary's path in the artifact; e.Source is a cache
		// entry or a work directory, which says nothing to the reader.
		opt := golicenses.Options{Work: work, Env: env, ModCache: modCache, Offline: b.fetcher.Offline, SourceDir: src, SourceSelected: selected, Remember: b.rememberLicence, RememberHash: b.rememberHash, ShareZip: b.shareZip, Name: gb.Path}
		got, err := golicenses.Collect(ctx, e.Source, opt)
		// The go command names the proxies by the gate pallet put in
		// front of them; the error names them as the user set them.
		err = b.fetcher.ExplainGoError(err)
		if err != nil && !errors.Is(err, golicenses.ErrMissing) {
			// Collect's error names the binary (opt.Name).
			return fmt.Errorf("%w%s", err, howToProceed(b.fetcher.Offline, b.fetcher.Mirror != "", pa.Kind))
		}
		if got.OutsideModules() {
			b.opt.Progress.Warn("%s: %s was built outside module mode (package %s): the licences of what it links are not known", &pa.Request, gb.Path, got.Package)
		}
		var missing []string
		var mainPath string
		for _, m := range got.Modules {
			if m.Main {
				mainPath = m.Path
			}
			rm := record.Module{Path: m.Path, Version: m.Version, Sum: m.Sum, Licenses: m.Licenses, Missing: m.Missing}
			for _, f := range m.Files {
				// As shipped: not the main module's root files (below).
				if m.Main && !strings.Contains(f.Name, "/") && len(a.Licenses) > 0 {
					continue
				}
				rm.Files = append(rm.Files, m.Path+"/"+f.Name)
			}
			gb.Modules = append(gb.Modules, rm)
			// The main module's licence is the artifact's own, found
			// with it (a build from a checkout has no sum to fetch by),
			// or declared needless: licenses: none says the files are
			// the project's own, and so is the code built from them.
			// Without either, the artifact's own warning (policy) says
			// it once, with what to do, rather than once more per binary.
			if m.Missing && !m.Main {
				missing = append(missing, m.Path+"@"+m.Version)
			}
		}
		t, err := got.Tree()
		if err != nil {
			return err
		}
		for _, le := range t.Entries() {
			// Directories follow from the files kept: one holding only
			// a skipped file must not be placed empty.
			if le.Kind != tree.File {
				continue
			}
			// Two binaries linking one module ship its files once.
			if _, dup := merged.Get(le.Path); dup {
				continue
			}
			// The main module's own licence files are the artifact's,
			// already at the top of /LICENSES/<artifact>/.
			if mainPath != "" && path.Dir(le.Path) == mainPath && len(a.Licenses) > 0 {
				continue
			}
			if err := merged.Add(le); err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			msg := fmt.Sprintf("%s: %s links modules without a licence file: %s", &pa.Request, gb.Path, strings.Join(missing, ", "))
			if b.opt.RequireLicenses {
				return errors.New(msg + "; licences are required")
			}
			b.opt.Progress.Warn("%s", msg)
		}
	}
	if err := b.addGoLicense(ctx, pa, env, goToolchain{res.Record.GoVersion, res.GoRoot}, a, merged); err != nil {
		return err
	}
	res.Licenses = merged
	return nil
}

// addGoLicense ships, beside the modules' licences, the LICENSE of the Go
// toolchain pallet runs for the artifact (its pinned one), which its Go
// binaries' standard library is under, once per toolchain version, and
// records it on each binary. Only for binaries pallet built: a
// release's were built by another's toolchain, whose licence is not at
// hand, and the text of the toolchain that happens to run pallet would
// make the image depend on the build machine's Go; the SBOM declares
// their standard library's licence. ran is the toolchain a build of this
// run used, when it said its GOROOT (see goLicense).
func (b *builder) addGoLicense(ctx context.Context, pa *plan.Artifact, env []string, ran goToolchain, a *record.Artifact, merged *tree.Tree) error {
	if artifact.GoSettings(pa.Kind) == nil {
		return nil
	}
	for i := range a.GoBinaries {
		gb := &a.GoBinaries[i]
		if gb.GoVersion == "" {
			continue
		}
		gl, err := b.goLicense(ctx, env, gb.GoVersion, ran)
		if err != nil {
			// A build being stopped (another artifact failed, or the
			// user interrupted it) kills the go command it asks: that
			// is no word on the toolchain, and no licence to warn of.
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if b.opt.RequireLicenses {
				return fmt.Errorf("%s: the Go toolchain's licence, which its Go binaries' standard library is under: %w; licences are required", &pa.Request, err)
			}
			b.opt.Progress.Warn("%s: the Go toolchain's licence, which its Go binaries' standard library is under, is not shipped: %v", &pa.Request, err)
			return nil
		}
		p := goLicensePath(gl.version)
		if _, dup := merged.Get(p); !dup {
			if err := merged.Add(tree.Entry{Path: p, Kind: tree.File, Mode: 0o644, Source: gl.file, Size: gl.size}); err != nil {
				return err
			}
		}
		gb.GoLicense = p
	}
	return nil
}

// rememberLicence keeps the classification of a licence text in the
// cache, by the text's sha256: a rebuild whose licence texts were all
// seen never loads the classifier.
func (b *builder) rememberLicence(sum string, _ []byte, derive func() (string, error)) (string, error) {
	if b.cache == nil {
		return derive()
	}
	return b.cache.ContentFact("golicenses-classification-v1", sum, nil, derive)
}

// requiresNothing says whether k builds a local Go module whose go.mod
// requires no other module: its binaries link the main module and the
// standard library alone. Unreadable, or another kind: false.
func requiresNothing(k artifact.Kind) bool {
	g, ok := k.(*artifact.Go)
	return ok && golicenses.RequiresNone(g.Module)
}

// licenceCopies is the directory of the build's work directory that
// holds the licence files it copies to place them (a toolchain's, the
// modules' with golicenses' downloads): nothing else, so that it can go
// once the layers are written.
const licenceCopies = "licences"

// licenceWork makes a new directory for licence copies, named by
// pattern as os.MkdirTemp names it, under licenceCopies.
func (b *builder) licenceWork(pattern string) (string, error) {
	dir := filepath.Join(b.work, licenceCopies)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, pattern)
}

// moduleCache is the go command's module cache with env, asked once per
// environment in a build: the go command takes 20-30 ms to say, and a
// recipe of CNI plugins has 18 binaries for each platform.
func (b *builder) moduleCache(ctx context.Context, env []string) (string, error) {
	return once.Value(&b.modCaches, strings.Join(env, "\x00"), func() (string, error) {
		return b.keptModuleCache(ctx, env)
	})
}

// moduleCacheVars are the variables go env GOMODCACHE is made of, with
// no go env file (GOENV=off): the module cache named, else the first
// GOPATH's pkg/mod, GOPATH defaulting to go in the user's home, and the
// toolchain that says so.
var moduleCacheVars = []string{"GOMODCACHE", "GOPATH", "HOME", "USERPROFILE", "home", "GOTOOLCHAIN"}

// keptModuleCache is what go env GOMODCACHE says with env, kept in the
// memo of the go command on PATH, by its stamp, for the values of
// moduleCacheVars: a rebuild of a Go program that links modules ran it
// (25-50 ms) before its licences could be read. Where env names a go env
// file, it is asked. Nothing is taken for being in the module cache:
// every zip read there is proven against the binary's h1: sums, and a
// module not found there is downloaded where env says.
func (b *builder) keptModuleCache(ctx context.Context, env []string) (string, error) {
	ask := func() (string, error) { return golicenses.ModuleCache(ctx, env, b.work) }
	gobin, err := goOnPath()
	if err != nil || artifact.EnvValue(env, "GOENV") != "off" {
		return ask()
	}
	fact := "go-modcache-v1"
	for _, k := range moduleCacheVars {
		fact += " " + k + "=" + artifact.EnvValue(env, k)
	}
	dir, err := b.memo(gobin, tree.Stamp{}, fact, func(string) (string, error) { return ask() })
	if err == nil && !filepath.IsAbs(dir) {
		return ask()
	}
	return dir, err
}

// rememberHash keeps a module zip's hash with the cache's facts about
// files, as an input's digest is kept.
func (b *builder) rememberHash(path, fact string, hash func() (string, error)) (string, error) {
	return b.memo(path, tree.Stamp{}, fact, func(string) (string, error) { return hash() })
}

// shareZip reads a module zip's licence files once in a build, for every
// platform and binary that links the module (golicenses.Options.ShareZip).
func (b *builder) shareZip(key string, read func() (map[string][]byte, error)) (map[string][]byte, error) {
	return once.Value(&b.zipLicences, key, read)
}

// goSource is where the artifact's Go build read its source, for the
// files of its main, replaced and vendored modules: the local module, the
// checkout or unpacked module of this run, or the snapshot of it the
// cache kept (selected). Empty for a release: its modules are fetched.
func goSource(pa *plan.Artifact, res *artifact.Result) (dir string, selected bool) {
	if local, ok := pa.Kind.(*artifact.Go); ok {
		return local.Module, false
	}
	return res.GoSource, res.GoSourceSelected
}

// howToProceed says what to do when a module's licence files cannot be
// had.
func howToProceed(offline, mirror bool, k artifact.Kind) string {
	const off = "or build with --module-licenses=false"
	switch {
	case offline && !mirror:
		return "; offline without --mirror, modules come from the go command's module cache (go env GOMODCACHE), which holds what earlier builds fetched: build once online, or run pallet fetch --mirror DIR and build with --mirror DIR, " + off
	case offline && artifact.GoSettings(k) != nil:
		return "; pallet fetch puts a Go build's modules in the mirror, " + off
	case offline:
		return "; pallet fetch mirrors the modules a release's Go binaries link: fetch again into this mirror, or put the module in the mirror's module cache (GOMODCACHE=MIRROR/gomod go mod download MODULE@VERSION), " + off
	case artifact.GoSettings(k) != nil:
		return "; " + off
	default:
		return "; make the module reachable through GOPROXY (a proxy or mirror that has it), " + off
	}
}

// maxLicenseText bounds an artifact's licence file read to name its
// licence; the longest common licence texts are tens of kilobytes.
const maxLicenseText = 1 << 20

// declaredLicense names the licences of an artifact's own licence files
// for its SBOM package ("Apache-2.0"), "" when it ships none or none is
// recognised (NOASSERTION); not those of the modules its programs link,
// which are packages of their own in the SBOM. The texts' classifications are remembered by
// their sha256, as for module licences.
func (b *builder) declaredLicense(own *tree.Tree) (string, error) {
	if own == nil {
		return "", nil
	}
	var texts [][]byte
	for _, e := range own.Entries() {
		if e.Kind != tree.File {
			continue
		}
		text, err := bounded.ReadFile(e.Source, maxLicenseText)
		if err != nil {
			return "", fmt.Errorf("licence %s: %w", e.Path, err)
		}
		texts = append(texts, text)
	}
	if len(texts) == 0 {
		return "", nil
	}
	expr, err := golicenses.Identify(texts, b.rememberLicence)
	if err != nil || expr == golicenses.NoAssertion {
		return "", err
	}
	return expr, nil
}

// pinnedMainVersion names the main module of an artifact's Go binaries by
// the version its pin proves, where the binary says only (devel) (go build
// stamps no version for a build from a directory): the SBOM then has
// pkg:golang/<module>@<version>. For a gomod source that is the module's
// version, for the binaries of that module (those go install built say it
// themselves; those built in the unpacked module, when go install could
// not, say (devel)). For a git source, it is the tag
// the build checked the commit carries, when the tag is a version of the
// module as the go command reads tags (artifact.ModuleTagVersion): the
// build stamps it into the binaries itself, but a Go before 1.24 stamps
// only the commit and says (devel).
func pinnedMainVersion(a *plan.Artifact, d *sbom.Artifact) {
	var version func(modPath string) (string, bool)
	switch k := a.Kind.(type) {
	case *artifact.Git:
		if k.Tag == "" {
			return
		}
		version = func(modPath string) (string, bool) { return artifact.ModuleTagVersion(k.Go.Module, modPath, k.Tag) }
	case *artifact.GoModule:
		version = func(modPath string) (string, bool) { return k.Version, modPath == k.Path }
	default:
		return
	}
	for i := range d.Go {
		m := &d.Go[i].Main
		if m.Version != "(devel)" || m.Replace != nil {
			continue
		}
		if v, ok := version(m.Path); ok {
			m.Version = v
		}
	}
}
