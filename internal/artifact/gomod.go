package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/modhash"
	"github.com/pallet-dev/pallet/internal/platform"
)

// GoModule builds main packages of a module version fetched through the Go
// module proxy (GOPROXY), pinned by its go.sum hash: a source build that
// needs no git, only what `go install module@version` would download.
type GoModule struct {
	// Path and Version name the module ("sigs.k8s.io/cri-tools", "v1.32.0").
	Path    string
	Version string
	// Sum is the module's go.sum hash ("h1:..."): the zip is checked
	// against it before anything in it is used.
	Sum string
	// Commit, when set, is the upstream commit the recipe says the
	// version was made from; the proxy's word on it, when it has one, must
	// agree.
	Commit string
	// Go is the build; its Module and Packages are relative to the
	// module's root.
	Go Go
}

func (m *GoModule) Name() string { return "gomod" }

func (m *GoModule) Origin() Origin { return Origin{Module: m.ref(), SHA256: m.Sum, Commit: m.Commit} }

func (m *GoModule) ref() string { return m.pin().ref() }

// pin is the module version m builds, as its sum pins it.
func (m *GoModule) pin() modulePin {
	return modulePin{Path: m.Path, Version: m.Version, Sum: m.Sum, Commit: m.Commit}
}

// Key: the sum pins every file of the module, and the go.sum inside it
// every dependency, so nothing needs to be read to name the result.
func (m *GoModule) Key(*Fetcher, *Request) ([]string, bool, error) {
	parts, err := m.Go.settingsKey()
	if err != nil {
		return nil, false, err
	}
	// "install": binaries built by go install name their module version
	// (install); those built before said (devel) and are not reused.
	parts = append(parts, m.Path, m.Version, m.Sum, "install")
	if m.Commit != "" {
		// The record carries it; without one, keys stay as they were.
		parts = append(parts, "commit="+m.Commit)
	}
	return parts, true, nil
}

// Produce downloads the module, proves it against the pin, unpacks it
// and builds its packages as go install <pkg>@<version> does (install),
// or, when go install cannot, in the unpacked module; the licences are
// those at the module's root.
func (m *GoModule) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	src := filepath.Join(work, "src")
	extracted, err := m.fetch(ctx, f, f.goEnv(&m.Go, r.Platform), work, src)
	if err != nil {
		return nil, err
	}
	g := m.build()
	dir, err := g.moduleIn(src)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", m.Path, m.Version, err)
	}
	var res *Result
	if pkgs, why := m.installable(&m.Go, src, dir); why != "" {
		// Said once: it holds for every platform the module is built for.
		f.logOnce("%s: built in the unpacked module, so its binaries name their module version (devel), not %s: %s", m.ref(), m.Version, why)
		res, err = f.goBuild(ctx, r, &g, dir, work)
	} else {
		res, err = m.install(ctx, f, r, pkgs, src, dir, extracted, work)
	}
	if err != nil {
		return nil, err
	}
	if res.ModuleSource, err = moduleSnapshot(src, dir); err != nil {
		return nil, err
	}
	return res, nil
}

// Mirror puts the module, its dependencies and the pinned toolchain in the
// mirror's module cache, which offline builds use as their GOPROXY.
func (m *GoModule) Mirror(ctx context.Context, f *Fetcher, r *Request, dir string) error {
	tmp, err := os.MkdirTemp("", "pallet-fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// Said once for the module: the download and its proof are the same
	// for every platform, which differ only in the modules go list names.
	f.logOnce("mirror %s", m.ref())
	env, err := f.MirrorGoEnv(&m.Go, r.Platform, dir)
	if err != nil {
		return err
	}
	src := filepath.Join(tmp, "src")
	if _, err := m.fetch(ctx, f, env, tmp, src); err != nil {
		return err
	}
	// A module version without a go.mod (made before modules) is built
	// with the one the go command makes up for it; go list needs it too,
	// here in a copy nothing else reads.
	if _, err := os.Stat(filepath.Join(src, "go.mod")); errors.Is(err, fs.ErrNotExist) {
		data, err := m.goMod(src)
		if err == nil {
			err = os.WriteFile(filepath.Join(src, "go.mod"), data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("module %s: %w", m.ref(), err)
		}
	}
	g := m.build()
	if err := f.mirrorGoModules(ctx, dir, r.Platform, &g, filepath.Join(src, filepath.FromSlash(g.Module))); err != nil {
		return fmt.Errorf("module %s: %w", m.ref(), err)
	}
	return nil
}

// build is the go build of the unpacked module. -mod=readonly: a module
// zip has no vendored packages, yet may carry vendor/modules.txt (those
// made before Go 1.24), which would switch go build to vendor mode; the
// recipe's flags come after it and may still choose.
func (m *GoModule) build() Go {
	g := m.Go
	if g.Module == "" {
		g.Module = "."
	}
	g.Flags = append([]string{"-mod=readonly"}, g.Flags...)
	return g
}

// fetch downloads the module, proves it against the pin and unpacks it
// into dir (modulePin.fetch); as the main module of the build, its
// go.mod may not replace modules with directories.
func (m *GoModule) fetch(ctx context.Context, f *Fetcher, env []string, work, dir string) (string, error) {
	extracted, err := m.pin().fetch(ctx, f, env, work, dir)
	if err != nil {
		return "", err
	}
	return extracted, m.checkReplaces(dir)
}

// checkReplaces refuses a module whose go.mod replaces a module with a
// directory: as the main module of the build its replaces apply, and a
// directory would bring in files the go.sum hash does not cover (a nested
// module is never in the zip; a path outside it is the build machine's).
func (m *GoModule) checkReplaces(dir string) error {
	dirs, err := localModules(dir)
	var outside []string
	for _, d := range dirs {
		if d != filepath.Clean(dir) {
			outside = append(outside, d)
		}
	}
	if err == nil && len(outside) > 0 {
		err = fmt.Errorf("go.mod replaces modules with directories (%s)", strings.Join(outside, ", "))
	}
	if err != nil {
		return fmt.Errorf("module %s: %w; a module built by version may only use modules go.sum pins", m.ref(), err)
	}
	return nil
}

// modulePin is a module version pinned by its go.sum hash, fetched through
// the module proxy: what a gomod build and files taken from a module
// (GoModuleFiles) share.
type modulePin struct {
	Path, Version string
	// Sum is the module's go.sum hash ("h1:...").
	Sum string
	// Commit, when set, must agree with the proxy's word on the version.
	Commit string
}

func (m modulePin) ref() string { return m.Path + "@" + m.Version }

// fetch downloads the module zip with the go command (with env, so the
// build's GOPROXY, GONOSUMDB, GOPRIVATE and the mirror apply), copies it
// into work, proves the copy against the pin and unpacks it into dir.
// The copy is what is hashed and unpacked: the module cache is shared,
// and writable with -modcacherw.
//
// It returns the directory the go command unpacked the module into in the
// module cache, which it reads when it builds the module by version.
func (m modulePin) fetch(ctx context.Context, f *Fetcher, env []string, work, dir string) (string, error) {
	cached, extracted, _, err := m.download(ctx, f, env, work)
	if err != nil {
		return "", err
	}
	zipFile := filepath.Join(work, "module.zip")
	if _, _, err := linkOrCopy(cached, zipFile, 0o644, false); err != nil {
		return "", fmt.Errorf("module %s: copying %s: %w", m.ref(), cached, err)
	}
	if err := m.verify(zipFile); err != nil {
		return "", err
	}
	if err := modzip.Unzip(dir, module.Version{Path: m.Path, Version: m.Version}, zipFile); err != nil {
		return "", fmt.Errorf("module %s: %w", m.ref(), err)
	}
	return extracted, nil
}

// download runs go mod download -json for the module in dir, an empty
// directory (no go.mod around to change what is resolved), and returns
// the zip in the module cache, the directory it was unpacked into there,
// and the commit the module proxy says the version was made from ("" if
// it names none).
func (m modulePin) download(ctx context.Context, f *Fetcher, env []string, dir string) (zip, extracted, origin string, err error) {
	env, err = VerifyGoToolchain(ctx, dir, env)
	if err != nil {
		return "", "", "", err
	}
	cmd := Command(ctx, "go", "mod", "download", "-json", m.ref())
	cmd.Dir = dir
	cmd.Env = env
	stdout, stderr := &bounded.Output{Max: maxCommandOutput}, &bounded.Output{Max: maxCommandComplaint}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runErr := bounded.Answered(cmd, cmd.Run())
	var info struct {
		Zip, Dir, Error string
		// Origin is where the proxy says the version came from; only
		// some proxies say.
		Origin *struct{ VCS, Hash string }
	}
	jsonErr := json.Unmarshal(stdout.Bytes(), &info)
	if runErr == nil && jsonErr == nil && info.Error == "" && info.Zip != "" {
		if o := info.Origin; m.Commit != "" && o != nil && o.Hash != "" && o.Hash != m.Commit {
			// Blamed on the commit: line, as a wrong sum is on its own:
			// the section's line names the module, not the pin that is
			// wrong.
			return "", "", "", blame("commit", fmt.Errorf("module %s: the recipe names commit %s (gomod.commit), the module proxy says the version was made from %s %s; once you know why they differ, pallet lock --update re-pins it", m.ref(), m.Commit, o.VCS, o.Hash))
		}
		if m.Commit != "" && (info.Origin == nil || info.Origin.Hash == "") && !module.IsPseudoVersion(m.Version) {
			// The sum does not cover the commit, and nothing else could
			// check it: a typo ships as the binary's revision.
			f.logOnce("module %s: the recipe's gomod.commit %s is not checked: the module proxy names no commit for this version (check it against upstream's tag by hand)", m.ref(), m.Commit)
		}
		if info.Origin != nil {
			origin = info.Origin.Hash
		}
		return info.Zip, info.Dir, origin, nil
	}
	msg := info.Error
	if msg == "" {
		msg = strings.TrimSpace(stderr.String())
	}
	if f.Offline {
		return "", "", "", fmt.Errorf("offline: module %s is not %s: %s", m.ref(), f.offlineWhere(), msg)
	}
	if runErr == nil {
		runErr = fmt.Errorf("no zip in its output (%v)", jsonErr)
	}
	return "", "", "", fmt.Errorf("go mod download %s: %w: %s", m.ref(), runErr, f.explainGo(msg))
}

// verify proves a module zip against the recipe's go.sum hash. The zip's
// layout and declared sizes are checked first, so that hashing reads no
// more than a module may hold (500 MiB unpacked).
func (m modulePin) verify(zipFile string) error {
	got, err := m.hash(zipFile)
	if err != nil {
		return err
	}
	if got != m.Sum {
		// Blamed on the sum: line, as a download's sha256 is: the
		// section's line names the module, not the pin that is wrong.
		return blame("sha256", fmt.Errorf("module %s: go.sum hash mismatch: the recipe pins %s, the module downloaded has %s; once you know why they differ, pallet lock --update re-pins it", m.ref(), m.Sum, got))
	}
	return nil
}

// hash is the go.sum hash of a module zip, once its layout and declared
// sizes are checked, so that hashing reads no more than a module may hold
// (500 MiB unpacked).
func (m modulePin) hash(zipFile string) (string, error) {
	if err := modhash.CheckZip(module.Version{Path: m.Path, Version: m.Version}, zipFile); err != nil {
		return "", fmt.Errorf("module %s: %w", m.ref(), err)
	}
	got, err := modhash.Zip(zipFile)
	if err != nil {
		return "", fmt.Errorf("module %s: hashing %s: %w", m.ref(), zipFile, err)
	}
	return got, nil
}

// ModuleSum fetches module path@version as a gomod build for p with env
// (the section's) does: the go command, with the build's GOPROXY,
// checksum database and module cache, behind the proxy gate that holds
// each response to f.Limits. It returns, for pallet lock, the go.sum
// hash of the zip, its layout and sizes checked before it is hashed,
// and the commit the module proxy says the version was made from ("" if
// it names none), which lock compares with a section's commit itself:
// one that differs is a stale pin to report at its line, not a failure.
func (f *Fetcher) ModuleSum(ctx context.Context, path, version string, env []string, p platform.Platform) (sum, commit string, err error) {
	work, err := os.MkdirTemp("", "pallet-lock-gomod-*")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(work)
	m := modulePin{Path: path, Version: version}
	cached, _, commit, err := m.download(ctx, f, f.goEnv(&Go{Env: env}, p), work)
	if err != nil {
		return "", "", err
	}
	zipFile := filepath.Join(work, "module.zip")
	if _, _, err := linkOrCopy(cached, zipFile, 0o644, false); err != nil {
		return "", "", fmt.Errorf("module %s: copying %s: %w", m.ref(), cached, err)
	}
	sum, err = m.hash(zipFile)
	return sum, commit, err
}
