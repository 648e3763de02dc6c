package artifact

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/modhash"
	"github.com/pallet-dev/pallet/internal/tree"
)

// A gomod build is the go command's `go install <pkg>@<version>`, so that
// its binaries say which module version they are, as they do when a user
// installs them: the build info holds "mod <path> <version> <h1:sum>"
// (debug.ReadBuildInfo().Main), which vulnerability scanners read. A go
// build in the unpacked module would say "(devel)".
//
// The go command builds a module by version from its module cache, not
// from the zip pallet proved against the pin, so the pin is checked
// there too:
//
//   - the main module: go reads the tree it unpacked into the module
//     cache (<GOMODCACHE>/<path>@<version>). pallet hashes that tree with
//     dirhash.HashDir, the hash go.sum's h1: is of, before go runs and
//     again after, and each must equal the pin; the zip it came from was
//     copied and proved as before (modulePin.fetch). go unpacks module
//     trees read-only (unless -modcacherw), and the bytes the build read
//     are those hashed unless something wrote the module cache during the
//     build and put the files back before it ended: the trust every
//     dependency's tree in that cache already has in any go build.
//   - the dependencies: go install ignores the module's go.sum (it checks
//     them against the checksum database, or not at all with GOSUMDB=off
//     or GONOSUMDB), so pallet checks each module linked into each binary,
//     as its build info names it with the hash go recorded when it
//     verified its zip (the module cache's .ziphash, what a go build
//     compares with go.sum), against the go.sum inside the pinned module:
//     a module not in it, or with another hash, fails the build.
//
// go install refuses a module whose go.mod has replace or exclude
// directives (they would apply only when it is the main module), any
// -mod or -modfile flag, and packages of other modules, and ignores a
// go.mod's godebug directives (the same): those are built as before, in
// the unpacked module, and say (devel) (installable).
func (m *GoModule) install(ctx context.Context, f *Fetcher, r *Request, pkgs []string, src, dir, extracted, work string) (*Result, error) {
	modcache, err := m.moduleCache(extracted)
	if err != nil {
		return nil, err
	}
	if err := m.verifyTree(extracted); err != nil {
		return nil, err
	}
	if err := m.verifyGoMod(modcache, src); err != nil {
		return nil, err
	}
	work, err = filepath.Abs(work)
	if err != nil {
		return nil, err
	}
	gopath := filepath.Join(work, "gopath")
	g := m.Go
	args := append([]string{"install"}, g.buildFlags()...)
	for _, p := range pkgs {
		args = append(args, p+"@"+m.Version)
	}
	env := []string{"GOPATH=" + gopath, "GOBIN=", "GOMODCACHE=" + modcache}
	// The build's environment, before what this adds to it.
	base := f.goEnv(&g, r.Platform)
	if g.Version == "" {
		// Unpinned, go install by version picks a toolchain by the
		// module's go line alone (the newest patch the proxy lists when
		// that line is newer than the host's), where a build in the module
		// also reads its toolchain line: the one such a build would use is
		// asked in the unpacked module and named exactly, so the binary
		// does not depend on what the proxy lists today.
		v, err := toolchainVersion(ctx, dir, base)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(v, "go") && !strings.ContainsAny(v, " \t") {
			env = append(env, "GOTOOLCHAIN="+v)
		}
	}
	// Offline, the build's proxy is the mirror's, one file:// proxy, and
	// it stays alone: the go command verifies a toolchain it switches to
	// (a pinned one) against the checksum database even with GOSUMDB=off,
	// unless GOPROXY is a single file:// proxy (cmd/go's useSumDB), which
	// a list with the pinned proxy before it is not. The mirror's module
	// cache lists only the versions it holds, which is what the pinned
	// proxy is for.
	if !f.Offline {
		proxy, err := m.pinnedProxy(modcache, src, work)
		if err != nil {
			return nil, err
		}
		// Before the build's own proxies (the last GOPROXY its environment
		// sets is the one the go command reads): what it does not hold (404)
		// is asked of them.
		next := cmp.Or(EnvValue(base, "GOPROXY"), defaultGoProxy)
		env = append(env, "GOPROXY="+proxy+","+next)
	}
	p := r.Platform
	res, err := f.runGo(ctx, r, &g, goRun{
		args: args,
		// Any directory: go install by version reads no go.mod around it.
		dir:      work,
		licenses: dir,
		// GOBIN must be unset for a cross-compile: binaries go to
		// $GOPATH/bin, or $GOPATH/bin/$GOOS_$GOARCH for another platform
		// than the toolchain's. GOPATH is the build's own; the module
		// cache stays the shared one (its default is under GOPATH).
		env:               env,
		out:               filepath.Join(gopath, "bin"),
		sub:               p.OS + "_" + p.Arch,
		work:              work,
		versionFromBinary: true,
		// go list cannot name pkg@version: the packages are listed in
		// the unpacked module, whose go.mod go install read (it refuses
		// one with replace or exclude directives, so the build lists
		// are the same).
		list:    pkgs,
		listDir: dir,
		// As go install module@version builds it: never from vendor/,
		// which go list would take in a module of go 1.14 or later
		// that has one, and a module's zip keeps vendor/modules.txt but
		// none of the packages vendored (go-criu v7.2.0's).
		listFlags: []string{"-mod=readonly"},
	})
	if err != nil {
		return nil, err
	}
	if err := m.verifyTree(extracted); err != nil {
		return nil, fmt.Errorf("%w (changed in the module cache during the build)", err)
	}
	if err := m.verifyGoMod(modcache, src); err != nil {
		return nil, fmt.Errorf("%w (changed in the module cache during the build)", err)
	}
	sums, err := readGoSum(filepath.Join(src, "go.sum"))
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", m.ref(), err)
	}
	for _, e := range res.Tree.Entries() {
		if e.Kind != tree.File {
			continue
		}
		v, err := m.checkBuildInfo(e.Source, sums)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Path, err)
		}
		if res.Record.GoVersion == "" {
			res.Record.GoVersion = v
		}
	}
	return res, nil
}

// installable returns the go install arguments (without @version) for
// the packages of g, the build of the module unpacked in src, whose
// module directory is dir; or, when go install cannot build them as the
// recipe says, why not.
func (m *GoModule) installable(g *Go, src, dir string) (pkgs []string, why string) {
	data, err := m.goMod(src)
	if err != nil {
		return nil, fmt.Sprintf("reading its go.mod: %v", err)
	}
	mf, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return nil, fmt.Sprintf("reading its go.mod: %v", err)
	}
	if len(mf.Replace) > 0 || len(mf.Exclude) > 0 {
		return nil, "its go.mod has replace or exclude directives, which go install refuses"
	}
	if len(mf.Godebug) > 0 {
		// go install takes the default GODEBUG of the module's go line
		// only: the directives would be lost, and the binaries would run
		// with other defaults than the module declares.
		return nil, "its go.mod has godebug directives, which go install ignores"
	}
	flags := slices.Clone(g.Flags)
	for _, kv := range g.Env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			flags = append(flags, strings.Fields(v)...)
		}
	}
	for _, fl := range flags {
		name, _, _ := strings.Cut(strings.TrimLeft(fl, "-"), "=")
		if name == "mod" || name == "modfile" {
			return nil, fmt.Sprintf("go install refuses the flag %s", fl)
		}
	}
	rel, err := filepath.Rel(src, dir)
	if err != nil {
		return nil, err.Error()
	}
	base := path.Join(m.Path, filepath.ToSlash(rel))
	for _, p := range g.Packages {
		var ip string
		switch {
		case filepath.IsAbs(p):
			return nil, fmt.Sprintf("package %s is an absolute path", p)
		case isPathPattern(p):
			ip = path.Join(base, p)
		default:
			ip = p
		}
		sub, ok := strings.CutPrefix(ip, m.Path)
		if !ok || sub != "" && sub[0] != '/' {
			return nil, fmt.Sprintf("package %s is not in module %s", p, m.Path)
		}
		// A package path under the module's may be another module's (a
		// nested one, never in the zip): its directory must be here.
		var elems []string
		for el := range strings.SplitSeq(strings.TrimPrefix(sub, "/"), "/") {
			if strings.Contains(el, "...") {
				break
			}
			elems = append(elems, el)
		}
		if info, err := os.Stat(filepath.Join(src, filepath.FromSlash(path.Join(elems...)))); err != nil || !info.IsDir() {
			return nil, fmt.Sprintf("package %s is not in module %s", p, m.Path)
		}
		pkgs = append(pkgs, ip)
	}
	return pkgs, ""
}

// moduleCache is the module cache the go command unpacked m into, at
// extracted.
func (m *GoModule) moduleCache(extracted string) (string, error) {
	_, unpacked, err := ModuleCachePaths("", module.Version{Path: m.Path, Version: m.Version})
	cache, ok := strings.CutSuffix(filepath.Clean(extracted), string(filepath.Separator)+unpacked)
	if err != nil || !ok || extracted == "" {
		return "", fmt.Errorf("module %s: go mod download unpacked it in %q, not a module cache's directory for it", m.ref(), extracted)
	}
	return cache, nil
}

// verifyGoMod proves the go.mod go install reads against the pin: the
// module's requirements (and its go, toolchain and godebug lines) come
// from the .mod file the proxy served, kept in the module cache's
// cache/download, which neither the zip's hash covers nor anything checks
// with GOSUMDB=off (offline) or GONOSUMDB. It must be the go.mod of the
// proved zip, unpacked in src.
func (m *GoModule) verifyGoMod(modcache, src string) error {
	base, _, err := ModuleCachePaths(modcache, module.Version{Path: m.Path, Version: m.Version})
	if err != nil {
		return err
	}
	file := base + ".mod"
	got, err := bounded.ReadFile(file, MaxGoMod)
	if err != nil {
		return fmt.Errorf("module %s: reading the go.mod go install reads: %w", m.ref(), err)
	}
	want, err := m.goMod(src)
	if err != nil {
		return fmt.Errorf("module %s: %w", m.ref(), err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("module %s: the go.mod go install reads (%s, as the module proxy served it) is not the one in the pinned zip", m.ref(), file)
	}
	return nil
}

// goMod is the go.mod of the module unpacked in src. A module version
// without one (made before modules, or a +incompatible one) has the go.mod
// the go command makes up for it, a module line alone, which is what the
// module proxy serves and what go install then reads.
func (m *GoModule) goMod(src string) ([]byte, error) {
	data, err := bounded.ReadFile(filepath.Join(src, "go.mod"), MaxGoMod)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Appendf(nil, "module %s\n", modfile.AutoQuote(m.Path)), nil
	}
	return data, err
}

// pinnedProxy writes, under work, a file module proxy that lists m's
// version alone, with its .info and the go.mod proved with the zip, and
// returns it as a GOPROXY entry. go install by version asks the proxy for
// the module's latest version, for its deprecation notice, and fails when
// the proxy cannot say (a version it lists but does not serve): a pinned
// build needs no other version, and asks nothing of the network for one.
func (m *GoModule) pinnedProxy(modcache, src, work string) (string, error) {
	mv := module.Version{Path: m.Path, Version: m.Version}
	dir := filepath.Join(work, "pinned-proxy")
	download, err := proxyPath(dir, mv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(download), 0o755); err != nil {
		return "", err
	}
	gomod, err := m.goMod(src)
	if err != nil {
		return "", fmt.Errorf("module %s: %w", m.ref(), err)
	}
	files := map[string][]byte{filepath.Join(filepath.Dir(download), "list"): []byte(m.Version + "\n"), download + ".mod": gomod}
	cached, _, err := ModuleCachePaths(modcache, mv)
	if err != nil {
		return "", err
	}
	if info, err := bounded.ReadFile(cached+".info", 1<<20); err == nil {
		files[download+".info"] = info
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return "", err
		}
	}
	return "file://" + filepath.ToSlash(dir), nil
}

// verifyTree proves the module's tree unpacked in the module cache against
// the pin, as go mod verify does.
func (m *GoModule) verifyTree(dir string) error {
	got, err := modhash.Dir(dir, m.ref())
	if err != nil {
		return fmt.Errorf("module %s: hashing %s: %w", m.ref(), dir, err)
	}
	if got != m.Sum {
		return fmt.Errorf("module %s: go.sum hash mismatch: the recipe pins %s, the module cache's %s has %s", m.ref(), m.Sum, dir, got)
	}
	return nil
}

// checkBuildInfo reads the build info of the binary bin: its main module
// must be m at its pin, and every module linked in must be pinned, with
// the hash go recorded, by the module's go.sum (sums). It returns the
// toolchain that built it.
func (m *GoModule) checkBuildInfo(bin string, sums map[module.Version]string) (string, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("reading its build info: %w", err)
	}
	if mm := info.Main; mm.Path != m.Path || mm.Version != m.Version || mm.Sum != m.Sum {
		return "", fmt.Errorf("its build info names module %s %s %s, not the pin %s %s", mm.Path, mm.Version, mm.Sum, m.ref(), m.Sum)
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			return "", fmt.Errorf("module %s@%s is replaced by %s@%s, which the module's go.mod does not say", d.Path, d.Version, d.Replace.Path, d.Replace.Version)
		}
		want, ok := sums[module.Version{Path: d.Path, Version: d.Version}]
		if !ok {
			return "", fmt.Errorf("module %s@%s is linked in, but the go.sum of %s does not pin it", d.Path, d.Version, m.ref())
		}
		if d.Sum != want {
			return "", fmt.Errorf("module %s@%s: go.sum hash mismatch: the go.sum of %s pins %s, the module built has %q", d.Path, d.Version, m.ref(), want, d.Sum)
		}
	}
	v, _, _ := strings.Cut(info.GoVersion, " ")
	return v, nil
}

// maxGoSum bounds the go.sum read from a module: one line per module
// version, a few hundred kilobytes for the largest projects.
const maxGoSum = 64 << 20

// readGoSum reads the zip hashes of a go.sum file (not the /go.mod ones);
// a missing file pins nothing.
func readGoSum(file string) (map[module.Version]string, error) {
	sums := map[module.Version]string{}
	data, err := bounded.ReadFile(file, maxGoSum)
	if os.IsNotExist(err) {
		return sums, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || strings.HasSuffix(f[1], "/go.mod") {
			continue
		}
		sums[module.Version{Path: f[0], Version: f[1]}] = f[2]
	}
	return sums, sc.Err()
}
