package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/once"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Go builds main packages of a module on disk with a Go toolchain: the
// host's, or a pinned release through GOTOOLCHAIN.
type Go struct {
	// Module is the module directory: absolute for a local module,
	// relative to the checkout inside a Git artifact.
	Module   string
	Packages []string
	Ldflags  []string
	Tags     []string
	Flags    []string
	Env      []string
	CGO      bool
	Trimpath bool
	// Version pins the toolchain through GOTOOLCHAIN ("1.23.4").
	Version string
	// CC is the C compiler for cgo, when set.
	CC string
	// vcs stamps the checkout's commit and tag into the binaries
	// (-buildvcs=true): set by a Git build whose checkout tagCheckout
	// made, never by a recipe.
	vcs bool
}

func (g *Go) Name() string { return "go" }

func (g *Go) Origin() Origin { return Origin{Path: g.Module} }

// Key covers everything go build reads: the settings, the toolchain, the
// module's files and those of every module it replaces with a local
// directory (go.work is off, see goEnv).
func (g *Go) Key(f *Fetcher, r *Request) ([]string, bool, error) {
	parts, err := g.settingsKeyIn(f, r, g.Module)
	if err != nil {
		return nil, false, err
	}
	env := g.cgoEnv()
	if r != nil {
		env = g.cgoEnvOn(r.Platform)
	}
	sums, err := f.localModulesDigest(g.Module, g.Packages, g.cgoOn(), env)
	if err != nil {
		return nil, false, err
	}
	return append(parts, sums...), true, nil
}

// cgoOn says whether g's build compiles cgo files: cgo, unless the
// recipe's env sets CGO_ENABLED. The go command runs with the last
// setting of a variable (exec.Cmd keeps the last of duplicates), and
// goEnv puts the recipe's env last, so env: [CGO_ENABLED=1] builds with
// cgo whatever cgo says: every step that depends on cgo (the key, the
// headers read, the cross C compiler check, the C libraries linked)
// asks this, not g.CGO, so that none of them sees a cgo build as pure Go
// and, say, ships its binaries without the C libraries' licences.
// Refusing the pair instead would break recipes that build today, and
// cgo: false cannot be told apart from no cgo: at all.
func (g *Go) cgoOn() bool {
	for i := len(g.Env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(g.Env[i], "CGO_ENABLED="); ok {
			return v == "1"
		}
	}
	return g.CGO
}

// cgoEnv is what the recipe's env adds to the flags of every C
// compile: the last setting of each variable, as goEnv puts the env last;
// and the environment pkg-config runs with in the build, as goEnv makes
// it (the user's, less what changes the output, then the recipe's).
func (g *Go) cgoEnv() cgoEnvFlags {
	out := cgoEnvFlags{environ: append(environWithout(buildKnobs, gitRepoEnv), g.Env...)}
	for _, kv := range g.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_CPPFLAGS":
			out.cppflags = splitEnvFlags(v)
		case "CGO_CFLAGS":
			out.cflags = splitEnvFlags(v)
		case "CGO_CXXFLAGS":
			out.cxxflags = splitEnvFlags(v)
		}
	}
	return out
}

// cgoEnvOn is cgoEnv for g's build for p: pkg-config runs there with
// the target go build gives it (GOOS, GOARCH, its level, CGO_ENABLED,
// CC), which a PKG_CONFIG made for cross builds answers by; run with
// the host's, it named another target's directories, and the key held
// none of the headers the build compiled with.
func (g *Go) cgoEnvOn(p platform.Platform) cgoEnvFlags {
	out := g.cgoEnv()
	env := append(environWithout(buildKnobs, gitRepoEnv), p.GoEnv()...)
	env = append(env, "CGO_ENABLED=1")
	if g.CC != "" {
		env = append(env, "CC="+g.CC)
	}
	out.environ = append(env, g.Env...)
	return out
}

// settingsKey lists what the recipe says of a build, and the toolchain,
// for a build in a directory not known yet (a checkout, a module
// unpacked): a go on PATH that must be asked (toolchainIdentity) is asked
// where pallet runs, with a build's environment for no platform.
func (g *Go) settingsKey() ([]string, error) { return g.settingsKeyIn(nil, nil, "") }

// settingsKeyIn is settingsKey for the build of r by f in dir, where the
// go on PATH is asked, with the build's environment, if it must be.
func (g *Go) settingsKeyIn(f *Fetcher, r *Request, dir string) ([]string, error) {
	tc, err := toolchainIdentity(g.Version, func() (string, string, error) {
		if f == nil {
			f = &Fetcher{}
		}
		var p platform.Platform
		if r != nil {
			p = r.Platform
		}
		v, err := AskToolchainEnv(context.Background(), dir, f.goEnv(g, p), "GOROOT", "GOVERSION")
		if err != nil {
			return "", "", err
		}
		return v[0], v[1], nil
	})
	if err != nil {
		return nil, err
	}
	parts := []string{tc, g.Module, strings.Join(g.Packages, "\x00"), strings.Join(g.Ldflags, "\x00"),
		strings.Join(g.Tags, "\x00"), strings.Join(g.Flags, "\x00"), strings.Join(g.Env, "\x00"),
		strconv.FormatBool(g.CGO), strconv.FormatBool(g.Trimpath), g.CC}
	if g.cgoOn() {
		// A cgo build's result holds the C libraries it links
		// (Record.CLinked, CLicenses): an entry stored before it did is
		// not taken for one. Builds without cgo keep their keys. v2: a
		// shared object is not static, and an archive in the module is
		// recorded by its path there. v3: a library's package names its
		// source package, and a dynamic binary's shared objects linked
		// against are kept by package.
		parts = append(parts, "clibs-v3")
	}
	return parts, nil
}

func (g *Go) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	return f.goBuild(ctx, r, g, g.Module, work)
}

// moduleIn is the directory of g's module inside the source tree src (a
// checkout, an unpacked module). The pin covers what is in src and
// nothing else, so the module, and every package named by a path, must
// be there once links are followed: a link in the tree to a directory of
// the build machine would build what no pin names.
func (g *Go) moduleIn(src string) (string, error) {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", err
	}
	inside := func(what, p string) error {
		r, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) {
			// The path is this build's work directory, which says
			// nothing to whoever wrote the recipe.
			rel, _ := filepath.Rel(src, p)
			return fmt.Errorf("%s: no directory %s in the pinned source", what, filepath.ToSlash(rel))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if rel, err := filepath.Rel(real, r); err != nil || !filepath.IsLocal(rel) {
			return fmt.Errorf("%s leads to %s, outside the pinned source", what, r)
		}
		return nil
	}
	mod := filepath.FromSlash(g.Module)
	if !filepath.IsLocal(mod) {
		return "", blame("module", fmt.Errorf("module %s is not a directory inside the pinned source", g.Module))
	}
	dir := filepath.Join(src, mod)
	if err := inside("module "+g.Module, dir); err != nil {
		return "", blame("module", err)
	}
	for _, pkg := range g.Packages {
		if !isPathPattern(pkg) {
			continue
		}
		// The directory a pattern starts from: before its first element
		// holding "..." (./cmd/kube... and ./cmd/.../x start at ./cmd).
		var dirs []string
		for el := range strings.SplitSeq(pkg, "/") {
			if strings.Contains(el, "...") {
				break
			}
			dirs = append(dirs, el)
		}
		p := filepath.FromSlash(strings.Join(dirs, "/"))
		if p == "" {
			p = "."
		}
		if !filepath.IsLocal(p) {
			return "", blame("packages", fmt.Errorf("package %s is outside the pinned source", pkg))
		}
		if err := inside("package "+pkg, filepath.Join(dir, p)); err != nil {
			return "", blame("packages", err)
		}
	}
	return dir, nil
}

// withoutDotHint asks, for each package g names without ./ that go build
// said is not in std (it reads cmd/x as an import path, and one without a
// dot as the standard library's) and that is a directory of the module in
// dir, whether ./ was meant. The recipe cannot refuse cmd/x itself: a
// local module's path may lack a dot, and then cmd/x may be its own.
func (g *Go) withoutDotHint(dir, msg string) string {
	var hints []string
	for _, pkg := range g.Packages {
		if isPathPattern(pkg) || strings.Contains(pkg, "...") || !filepath.IsLocal(filepath.FromSlash(pkg)) {
			continue
		}
		if !strings.Contains(msg, "package "+pkg+" is not in std") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(pkg))); err != nil || !fi.IsDir() {
			continue
		}
		hints = append(hints, fmt.Sprintf("packages: go reads %s, without ./, as the standard library's import path; the module has a directory %s: did you mean ./%s?", pkg, pkg, pkg))
	}
	return strings.Join(hints, "\n")
}

// isPathPattern says whether a go build argument names a directory or
// file by path (".", "./cmd/x", "./...", "../y"), not by import path.
func isPathPattern(pkg string) bool {
	return pkg == "." || pkg == ".." || strings.HasPrefix(pkg, "./") || strings.HasPrefix(pkg, "../") || filepath.IsAbs(pkg)
}

// Mirror downloads the module's dependencies and pinned toolchain.
func (g *Go) Mirror(ctx context.Context, f *Fetcher, r *Request, dir string) error {
	return f.mirrorGoModules(ctx, dir, r.Platform, g, g.Module)
}

// goBuild cross-compiles the packages of the module in dir. GOCACHE is left
// alone so repeated builds reuse the user's build cache.
func (f *Fetcher) goBuild(ctx context.Context, r *Request, g *Go, dir string, work string) (*Result, error) {
	// Said here, rather than by go as "fork/exec .../go: no such file or
	// directory" for its working directory.
	if info, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("module directory: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("module directory %s is not a directory", dir)
	}
	out := filepath.Join(work, "bin") + string(filepath.Separator)
	args := append([]string{"build", "-o", out}, g.buildFlags()...)
	// The user's git configuration stays: the go command reads the
	// stamps with options of its own, and fetches private modules
	// through it (url.insteadOf, credential helpers). Attributes are
	// the checkout's alone, as when pallet checked it out: the system's
	// are turned off, and the user's attributes file by configuration
	// git reads after all other (lastGitConfig), wherever the user's
	// names one: in ~/.gitconfig, or in GIT_CONFIG_COUNT or
	// GIT_CONFIG_PARAMETERS, which git reads after the checkout's own
	// .git/config, so that setting it there stamped +dirty.
	var env []string
	if g.vcs {
		env = []string{gitAttrNoSystem, lastGitConfig(noUserAttributes)}
	}
	run := goRun{args: append(args, g.Packages...), dir: dir, out: out, licenses: dir, work: work, list: g.Packages, env: env}
	if g.cgoOn() {
		// A local module's key found them a moment ago; a checkout,
		// an unpacked module, has no key of its own to have.
		cenv := g.cgoEnvOn(r.Platform)
		reads := f.keyedReads(dir, g.Packages, cenv)
		var err error
		if reads == nil {
			reads, err = f.cgoHeadersRead(dir, g.Packages, cenv)
		}
		if err == nil {
			run.cgoHeaders, err = f.cgoHeadersDigest(reads, g, r.Platform)
		}
		if err != nil {
			return nil, fmt.Errorf("the C headers its cgo packages read: %w", err)
		}
	}
	return f.runGo(ctx, r, g, run)
}

// cgoHeadersDigest is a digest of the headers of reads that go build's
// own cache does not see, "" for none: it hashes a package's files in
// its directory (a header there among them), and no other file the C
// compiler reads (golang.org/issue/24355), so that after an edit of
// ../inc/v.h, or of inc/v.h in the module, it gave the object compiled
// from the old header, and the image shipped the old code. Each header
// is named from the main module, or by its absolute path where the key
// names it so, so that the digest is the same on every machine and
// wherever the checkout is.
func (f *Fetcher) cgoHeadersDigest(reads *cgoReads, g *Go, p platform.Platform) (string, error) {
	bctx := build.Default
	bctx.GOOS, bctx.GOARCH, bctx.CgoEnabled, bctx.BuildTags = p.OS, p.Arch, true, g.Tags
	names := map[string]string{}
	for _, h := range reads.list {
		if _, ok := names[h.name]; ok || goHashes(bctx, h) {
			continue
		}
		sum, err := f.digest(h.resolved, h.st)
		if err != nil {
			return "", err
		}
		names[h.name] = sum
	}
	if len(names) == 0 && reads.pkgConfig == "" {
		return "", nil
	}
	hash := sha256.New()
	if reads.pkgConfig != "" {
		// Neither does it hash what pkg-config answers.
		fmt.Fprintf(hash, "pkg-config\x00%s\n", reads.pkgConfig)
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		fmt.Fprintf(hash, "%s\x00%s\n", name, names[name])
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}

// goHashes says whether go build's cache hashes the header h, as a file
// of its package: one of the package's directory, by a name it lists
// (with the extension of a C, C++ or assembly file, its build
// constraints met), that is the file the compiler opens; none that every
// package reads (the standard library's, whose files it is not).
func goHashes(bctx build.Context, h cgoRead) bool {
	name := filepath.Base(h.at)
	if h.pkgDir == "" || cgoFileLang(name) == "" {
		return false
	}
	if ok, err := bctx.MatchFile(h.pkgDir, name); err != nil || !ok {
		return false
	}
	listed, err := os.Stat(filepath.Join(h.pkgDir, name))
	if err != nil {
		return false
	}
	opened, err := os.Stat(h.at)
	return err == nil && os.SameFile(listed, opened)
}

// cgoHeadersMacro is the macro that carries cgoHeadersDigest to go
// build, in CC: go build hashes CC into the cache key of each cgo
// package, and the build info of the binary does not hold it (CGO_CPPFLAGS
// would show in go version -m, and change the binary). A macro no code
// names changes no object, and gcc leaves -D out of what it records.
const cgoHeadersMacro = "PALLET_CGO_HEADERS"

// goRun is one go command that builds g's packages into a directory.
type goRun struct {
	args []string
	// dir is where the go command runs; licenses is the module's root,
	// where its licences are looked for.
	dir, licenses string
	// env is added to the build's environment (goEnv).
	env []string
	// out is the directory the command writes the binaries to; made
	// empty first. When sub is set and out holds that directory, the
	// binaries are there (go install's $GOPATH/bin/$GOOS_$GOARCH).
	out, sub string
	// work is the build's work directory, where go's own goes (GOTMPDIR).
	work string
	// list are the packages built, for go list to say what a cgo build
	// links of C libraries, run in listDir (dir when empty) with
	// listFlags before the recipe's.
	list      []string
	listDir   string
	listFlags []string
	// cgoHeaders is cgoHeadersDigest of the build, "" for none.
	cgoHeaders string
	// versionFromBinary: the toolchain is read from the binaries it
	// built, not asked of go env in dir (go install picks its toolchain
	// from the module's go line, which go env in a directory does not).
	versionFromBinary bool
}

// runGo runs a go build or install of g's packages and takes the
// binaries it wrote.
func (f *Fetcher) runGo(ctx context.Context, r *Request, g *Go, run goRun) (*Result, error) {
	if err := needsCC(g, r.Platform); err != nil {
		return nil, err
	}
	out := run.out
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	args := run.args
	dir := run.dir
	env := append(f.goEnv(g, r.Platform), run.env...)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOTMPDIR=") }) {
		// The go command's own work directory (go-build*, every compiled
		// package and the link) goes inside the build's, not into TMPDIR:
		// a go build stopped because another step failed, or a pallet
		// killed, leaves it behind, and only the build's work directory
		// is removed (or swept) whatever happens. Where it lives changes
		// no binary: go names it $WORK in what it records.
		tmp := filepath.Join(run.work, "tmp")
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return nil, err
		}
		env = append(env, "GOTMPDIR="+tmp)
	}
	env, err := VerifyGoToolchain(ctx, dir, env)
	if err != nil {
		return nil, err
	}
	cmd := Command(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	if run.cgoHeaders != "" {
		// Added to the C compiler the build would run, which go env
		// says where neither the recipe nor pallet names one (the go
		// command's default, which a pinned toolchain may change).
		cc := EnvValue(env, "CC")
		if cc == "" {
			v, err := goEnvIn(ctx, dir, env, "CC")
			if err != nil {
				return nil, err
			}
			cc = v[0]
		}
		cmd.Env = append(slices.Clip(env), "CC="+cc+" -D"+cgoHeadersMacro+"="+run.cgoHeaders)
	}
	// What the build prints is quoted when it fails: its beginning and
	// its end (-gcflags=-m prints a line per compiler decision).
	stderr := &bounded.Output{Max: maxCommandComplaint}
	cmd.Stderr = stderr
	cmd.Stdout = stderr
	// Which toolchain the build uses, and its GOROOT (where its licence
	// is, Result.GoRoot), are asked while it runs, not after: go env
	// takes 4-6 ms on an idle machine and 10-30 ms on a busy one, which
	// would otherwise add to every build. Both see the same directory
	// and environment, so the same toolchain; it is waited for even when
	// the build fails, so that no go command outlives this one.
	version := make(chan versionOrErr, 1)
	if run.versionFromBinary {
		version <- versionOrErr{}
	} else {
		go func() {
			// env is VerifyGoToolchain's, above.
			v, err := goEnvIn(ctx, dir, env, "GOVERSION", "GOROOT")
			if err != nil {
				version <- versionOrErr{err: err}
				return
			}
			version <- versionOrErr{version: v[0], root: v[1]}
		}()
	}
	err = bounded.Answered(cmd, cmd.Run())
	tc := <-version
	if err != nil && ctx.Err() != nil {
		// Killed because the build stopped (another step failed, or an
		// interrupt): go's "signal: killed" would read as its own failure.
		// The cause's text only: its error is another step's, and its
		// position and kind must not be taken for this build's.
		return nil, fmt.Errorf("go %s stopped (%v): %w", args[0], context.Cause(ctx), ctx.Err())
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		err = fmt.Errorf("go %s (in %s, %s): %w\n%s", shellJoin(args), dir, r.Platform, err, f.explainGo(msg))
		if hint := g.withoutDotHint(dir, msg); hint != "" {
			return nil, blame("packages", fmt.Errorf("%w\n%s", err, hint))
		}
		return nil, err
	}
	if tc.err != nil {
		return nil, tc.err
	}
	if run.sub != "" {
		if info, err := os.Stat(filepath.Join(out, run.sub)); err == nil && info.IsDir() {
			out = filepath.Join(out, run.sub)
		}
	}
	t, err := tree.FromDir(out)
	if err != nil {
		return nil, err
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("go %s of %s produced no executable (are they main packages?)", args[0], strings.Join(g.Packages, " "))
	}
	lic, err := findLicenses(shallowTree(run.licenses), r.Licenses, r.NoLicense)
	if err != nil {
		return nil, err
	}
	linked, clic, err := f.cLibraries(ctx, g, run, env, t)
	if err != nil {
		return nil, err
	}
	return &Result{Tree: t, Licenses: lic, Record: Record{GoVersion: tc.version, CLinked: linked}, GoSource: run.licenses, CLicenses: clic, GoRoot: tc.root}, nil
}

// buildFlags are the go build flags of g, but for -o: what decides which
// packages, files and modules the build reads, for the steps that must
// read the same (the mirror's).
func (g *Go) buildFlags() []string {
	// -buildvcs=false by default: otherwise the commit of whatever
	// repository encloses the module (and whether it is dirty) ends up in
	// the binary and two checkouts of the same code give different images.
	// A pinned checkout that pallet tagged itself stamps only its pins.
	args := []string{"-buildvcs=false"}
	if g.vcs {
		args[0] = "-buildvcs=true"
	}
	if g.Trimpath {
		args = append(args, "-trimpath")
	}
	if len(g.Ldflags) > 0 {
		args = append(args, "-ldflags="+strings.Join(g.Ldflags, " "))
	}
	if len(g.Tags) > 0 {
		args = append(args, "-tags="+strings.Join(g.Tags, ","))
	}
	return append(args, g.Flags...)
}

type versionOrErr struct {
	version, root string
	err           error
}

// buildKnobs are the variables that change what the go command produces.
// None is taken from the user's environment: a build is described by its
// recipe (go.env, go.flags, cc), so that it gives the same binary on every
// machine and so that the cache key, made from the recipe, covers it.
var buildKnobs = slices.Concat([]string{"GOFLAGS", "GOEXPERIMENT", "GOFIPS140"}, targetKnobs, []string{
	"AR", "PKG_CONFIG",
	// Read by pkg-config, the C compiler and the linker that cgo runs:
	// where headers and libraries are found, and what a .pc file adds
	// (an rpath, a static library) decide what is linked in.
	"PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR", "PKG_CONFIG_TOP_BUILD_DIR",
	"PKG_CONFIG_ALLOW_SYSTEM_CFLAGS", "PKG_CONFIG_ALLOW_SYSTEM_LIBS",
	"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH",
	"GOENV", "GOWORK",
})

// hostSettings are the user's go command settings that say where modules
// come from and where caches live, as set with go env -w. Builds run with
// GOENV=off, so that nothing else in that file reaches them, and get these
// explicitly; the same settings in the environment are inherited as they
// are, and win, as they do for the go command.
func hostSettings() []string {
	file := goEnvFile()
	var env []string
	for _, k := range []string{"GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOAUTH", "GOVCS", "GOCACHE", "GOCACHEPROG", "GOMODCACHE", "GOTMPDIR", "GOTOOLCHAIN"} {
		if os.Getenv(k) == "" && file[k] != "" {
			env = append(env, k+"="+file[k])
		}
	}
	return env
}

// goEnvFile reads the file go env -w writes: $GOENV, else go/env in the
// user's config directory; GOENV=off means none. Its lines are KEY=VALUE.
func goEnvFile() map[string]string {
	path := goEnvFilePath(os.Getenv)
	if path == "" {
		return nil
	}
	data, err := bounded.ReadFile(path, maxConfigFile)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// goEnv is the environment of a build: the user's, less the variables that
// change its output and the go env file, then the target platform, cgo, the
// pinned toolchain and compiler, and the recipe's additions.
func (f *Fetcher) goEnv(g *Go, p platform.Platform) []string {
	env := environWithout(buildKnobs, gitRepoEnv)
	// GOWORK=off: a go.work above the module is not part of the recipe.
	env = append(append(env, hostSettings()...), "GOENV=off", "GOWORK=off")
	// Of GOFLAGS, only -modcacherw passes: it changes the permissions of
	// the module cache, not what is built.
	if slices.Contains(strings.Fields(os.Getenv("GOFLAGS")), "-modcacherw") {
		env = append(env, "GOFLAGS=-modcacherw")
	}
	env = append(env, p.GoEnv()...)
	cgo := "0"
	if g.cgoOn() {
		cgo = "1"
	}
	env = append(env, "CGO_ENABLED="+cgo)
	if g.Version != "" {
		// GOTOOLCHAIN=goX.Y.Z makes the go command use exactly that
		// release, fetched from the module proxy on first use.
		env = append(env, "GOTOOLCHAIN=go"+g.Version)
	}
	if g.CC != "" {
		env = append(env, "CC="+g.CC)
	}
	// The go command runs git itself for a module it fetches directly
	// (GOPROXY=direct, GOPRIVATE), past the proxy gate: git's own
	// low-speed limit holds those clones over http(s) to the floor and
	// the stall pallet's git calls get, unless the user set one.
	if os.Getenv("GIT_HTTP_LOW_SPEED_LIMIT") == "" && os.Getenv("GIT_HTTP_LOW_SPEED_TIME") == "" {
		lim := f.Limits.WithDefaults()
		env = append(env, "GIT_HTTP_LOW_SPEED_LIMIT="+strconv.FormatInt(lim.MinRate, 10),
			"GIT_HTTP_LOW_SPEED_TIME="+strconv.Itoa(max(1, int(lim.Stall.Seconds()))))
	}
	if f.Offline {
		// Modules and the pinned toolchain come from the mirror's module
		// cache, served as a file proxy; they were checked against the
		// checksum database when pallet fetch downloaded them.
		proxy := "off"
		if f.Mirror != "" {
			proxy = "file://" + filepath.ToSlash(proxyDir(ModuleCache(f.Mirror)))
		} else if f.ModCache != "" {
			proxy = "file://" + filepath.ToSlash(proxyDir(f.ModCache))
		}
		env = append(env, "GOPROXY="+proxy, "GOSUMDB=off")
	}
	return f.gated(append(env, g.Env...))
}

// toolchainVersion asks the go command which toolchain it used, which may
// differ from the one on PATH when GOTOOLCHAIN or go.mod selects another.
func toolchainVersion(ctx context.Context, dir string, env []string) (string, error) {
	v, err := AskGoEnv(ctx, dir, env, "GOVERSION")
	if err != nil {
		return "", err
	}
	return v[0], nil
}

// targetKnobs are the variables of a build's environment that say what it
// builds for (the target, its instruction set, cgo and its C compiler).
// The go command finds its toolchain and its module cache by the host
// alone: the answers AskToolchainEnv gives do not depend on them.
var targetKnobs = []string{
	"GOOS", "GOARCH", "GOAMD64", "GOARM", "GOARM64", "GO386", "GOMIPS", "GOMIPS64", "GOPPC64", "GORISCV64", "GOWASM",
	"CGO_ENABLED", "CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_CXXFLAGS", "CGO_FFLAGS", "CGO_LDFLAGS", "CC", "CXX",
}

// toolchainNames are the go env names AskToolchainEnv answers: those
// that the toolchain and the host decide, whatever the target.
var toolchainNames = []string{"GOROOT", "GOVERSION", "GOMODCACHE"}

// toolchainAnswers are AskToolchainEnv's answers, by question, until
// ForgetToolchainEnv forgets those asked in their directory: each build
// asks in a work directory of its own, and a process running build
// after build (a test binary, a server) kept every one of them.
var toolchainAnswers sync.Map // toolchainQuestion -> answer (once.Success)

// toolchainQuestion is what an answer of AskToolchainEnv depends on: the
// directory it was asked in, apart from the rest (names, go command,
// environment), for ForgetToolchainEnv to find.
type toolchainQuestion struct{ dir, rest string }

// AskToolchainEnv is AskGoEnv for names of toolchainNames alone, asked
// once per process for each directory, go command on PATH (its path and
// stamp), files it takes defaults from (GoDefaultsStamp) and environment
// but for what changes none of the answers (answerFree): a recipe's go artifact for two platforms asked go env
// GOROOT GOVERSION once for each, 20-40 ms apiece on a busy machine, for
// one answer. Concurrent callers wait for the first's answer. An error is
// not kept: a caller that finds another's asks again itself, or waits for
// a caller that does (that one may have been stopped), and the next
// caller asks afresh.
func AskToolchainEnv(ctx context.Context, dir string, env []string, names ...string) ([]string, error) {
	for _, n := range names {
		if !slices.Contains(toolchainNames, n) {
			return nil, fmt.Errorf("go env %s: depends on the target, asked with AskGoEnv", n)
		}
	}
	return askOnce(ctx, dir, env, names, AskGoEnv)
}

// askOnce answers go env names, asked with ask in dir with env, once per
// process as AskToolchainEnv says, in its memo: names must be ones the
// toolchain and the host decide, whatever the target.
func askOnce(ctx context.Context, dir string, env, names []string, ask func(context.Context, string, []string, ...string) ([]string, error)) ([]string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return ask(ctx, dir, env, names...) // which says why
	}
	info, err := os.Stat(gobin)
	if err != nil {
		return ask(ctx, dir, env, names...)
	}
	st := tree.StampOf(info)
	rest := fmt.Sprintf("%s\x00%s\x00%+v\x00%s", strings.Join(names, " "), gobin, st, GoDefaultsStamp(gobin, env))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !answerFree(k, env) {
			rest += "\x00" + kv
		}
	}
	values, err := once.Success(&toolchainAnswers, toolchainQuestion{dir: dir, rest: rest}, func() ([]string, error) {
		return ask(ctx, dir, env, names...)
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(values), nil
}

// GoDefaultsStamp is the stamps of the files the go command at gobin,
// run with env (nil: pallet's own), takes its defaults from, where a variable of env does
// not set them: $GOROOT/go.env (GOTOOLCHAIN=auto, or local in some
// distributions' packages) and, unless GOENV=off, the file go env -w
// writes. Either may change between builds with no change to the go
// command or the environment, and the answers kept must then be asked
// again, as each build asked them before they were kept.
func GoDefaultsStamp(gobin string, env []string) string {
	value := func(k string) string {
		if env == nil {
			return os.Getenv(k) // the go command inherits pallet's
		}
		return EnvValue(env, k)
	}
	var files []string
	if root := value("GOROOT"); root != "" {
		files = append(files, filepath.Join(root, "go.env"))
	} else {
		// The go command finds its GOROOT above its executable, through
		// the links to it (/usr/local/bin/go) when not there.
		files = append(files, filepath.Join(gobin, "..", "..", "go.env"))
		if real, err := filepath.EvalSymlinks(gobin); err == nil {
			files = append(files, filepath.Join(real, "..", "..", "go.env"))
		}
	}
	if f := goEnvFilePath(value); f != "" {
		files = append(files, f)
	}
	var b strings.Builder
	for _, f := range files {
		var st tree.Stamp
		if info, err := os.Stat(f); err == nil {
			st = tree.StampOf(info)
		}
		fmt.Fprintf(&b, "%s=%+v;", f, st)
	}
	return b.String()
}

// goEnvFilePath is where the go command run with the variables value
// gives reads the file go env -w writes: $GOENV, else go/env in the
// user's config directory, found as os.UserConfigDir finds it; "" for
// none (GOENV=off, or no config directory).
func goEnvFilePath(value func(string) string) string {
	switch f := value("GOENV"); f {
	case "off":
		return ""
	case "":
	default:
		return f
	}
	var dir string
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		dir, _ = os.UserConfigDir() // from variables of their own
	default:
		switch dir = value("XDG_CONFIG_HOME"); {
		case dir == "":
			if home := value("HOME"); home != "" {
				dir = filepath.Join(home, ".config")
			}
		case !filepath.IsAbs(dir):
			dir = "" // os.UserConfigDir refuses it, and so the go command
		}
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "go", "env")
}

// answerFree says whether the variable k of env changes no answer of the
// go command to the go env names askOnce is asked: the target
// (targetKnobs); GOTMPDIR, the go command's scratch; GOPATH where
// GOMODCACHE is set, as GOPATH is otherwise the default of GOMODCACHE,
// and of GOROOT too where the go command switches to a release it
// unpacks there. Each build gives the last two directories of its own:
// kept by them, the toolchain check's answers, asked in no build's
// directory and so never forgotten, were kept once per build.
func answerFree(k string, env []string) bool {
	switch k {
	case "GOTMPDIR":
		return true
	case "GOPATH":
		return EnvValue(env, "GOMODCACHE") != ""
	}
	return slices.Contains(targetKnobs, k)
}

// ForgetToolchainEnv forgets the answers AskToolchainEnv gave in dir and
// in the directories below it, for a caller removing dir: none asks
// there again. A question being asked there meanwhile is answered, and
// its answer forgotten only by a later call.
func ForgetToolchainEnv(dir string) {
	below := dir + string(filepath.Separator)
	toolchainAnswers.Range(func(k, v any) bool {
		if d := k.(toolchainQuestion).dir; d == dir || strings.HasPrefix(d, below) {
			toolchainAnswers.CompareAndDelete(k, v)
		}
		return true
	})
}

// ToolchainAnswersHeld is how many answers AskToolchainEnv holds: for a
// long-lived process (and its tests) to check that builds, done, leave
// none behind.
func ToolchainAnswersHeld() int {
	n := 0
	toolchainAnswers.Range(func(any, any) bool { n++; return true })
	return n
}

// AskGoEnv asks the go command, run in dir with env, for the values of
// names (go env NAME...), one each, in their order: what the go command
// would use there, a toolchain GOTOOLCHAIN or go.mod selects included.
func AskGoEnv(ctx context.Context, dir string, env []string, names ...string) ([]string, error) {
	// go env runs the toolchain it switches to.
	env, err := VerifyGoToolchain(ctx, dir, env)
	if err != nil {
		return nil, err
	}
	return goEnvIn(ctx, dir, env, names...)
}

// goEnvIn is AskGoEnv for an env VerifyGoToolchain gave, or in which the
// go command switches to no other toolchain (GOTOOLCHAIN=local, or go env
// GOTOOLCHAIN alone, which never switches).
func goEnvIn(ctx context.Context, dir string, env []string, names ...string) ([]string, error) {
	cmd := Command(ctx, "go", append([]string{"env"}, names...)...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.Output()
	err = bounded.Answered(cmd, err)
	what := "go env " + strings.Join(names, " ")
	if err != nil {
		// Output keeps the go command's stderr (its last 32 KiB) in the
		// exit error: that is what says why ("exit status 1" does not).
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if msg := strings.TrimSpace(string(exit.Stderr)); msg != "" {
				return nil, fmt.Errorf("%s: %w: %s", what, err, msg)
			}
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	values := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(values) != len(names) {
		return nil, fmt.Errorf("%s said %q", what, out)
	}
	for i := range values {
		values[i] = strings.TrimSpace(values[i])
	}
	return values, nil
}

// shallowTree lists the files at the top of dir and one directory down,
// where licence files live, without walking a whole source tree.
func shallowTree(dir string) *tree.Tree {
	t := tree.New()
	top, _ := os.ReadDir(dir)
	for _, e := range top {
		p := filepath.Join(dir, e.Name())
		if e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				t.Add(tree.Entry{Path: e.Name(), Kind: tree.File, Mode: 0o644, Source: p, Size: info.Size()})
			}
			continue
		}
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub, _ := os.ReadDir(p)
		for _, s := range sub {
			if info, err := s.Info(); err == nil && s.Type().IsRegular() {
				t.Add(tree.Entry{Path: e.Name() + "/" + s.Name(), Kind: tree.File, Mode: 0o644, Source: filepath.Join(p, s.Name()), Size: info.Size()})
			}
		}
	}
	return t
}

// GoEnv is the environment the go command runs with for g on p: the one a
// build of g uses, for steps that must see the same modules (licences).
func (f *Fetcher) GoEnv(g *Go, p platform.Platform) []string { return f.goEnv(g, p) }

// GoSettings is the go build of k, when k builds Go (go, git, gomod), or
// nil: its environment is the one to read its modules with.
func GoSettings(k Kind) *Go {
	switch k := k.(type) {
	case *Go:
		return k
	case *Git:
		return &k.Go
	case *GoModule:
		return &k.Go
	}
	return nil
}

// needsCC refuses a cgo build for a platform the build machine's C
// compiler cannot target when the recipe names none (cc, or CC in env):
// go would run the host's gcc on the target's assembly and fail with
// hundreds of lines about instructions it does not know. Asked when the
// build runs, not when the recipe is read: a fetch, a lock or a build
// answered from the cache compiles nothing.
func needsCC(g *Go, p platform.Platform) error {
	if !g.cgoOn() || g.CC != "" || slices.ContainsFunc(g.Env, func(kv string) bool { return strings.HasPrefix(kv, "CC=") }) {
		return nil
	}
	// The host's gcc builds for its own platform, and on amd64 for 386
	// too (-m32, which go passes).
	if p.OS == runtime.GOOS && (p.Arch == runtime.GOARCH || runtime.GOARCH == "amd64" && p.Arch == "386") {
		return nil
	}
	return blame("cgo", fmt.Errorf("cgo for %s needs a C compiler for that platform: name it in cc (cc: {%s: %s})", p, p, crossCC(p)))
}

// crossCC is the usual name of Debian's cross C compiler for p.
func crossCC(p platform.Platform) string {
	if t := p.GNUTriple(); t != "" {
		return t + "-gcc"
	}
	return "CC" // no usual name: the user's compiler
}
