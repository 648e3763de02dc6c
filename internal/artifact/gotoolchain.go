package artifact

import (
	"context"
	"errors"
	"fmt"
	"go/version"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/modhash"
	"github.com/pallet-dev/pallet/internal/once"
)

// A Go toolchain the go command switches to (GOTOOLCHAIN=goX.Y.Z) is
// itself a module, golang.org/toolchain, and the go command checks it
// against the checksum database even with GOSUMDB=off, except when
// GOPROXY is a single file:// proxy (cmd/go's useSumDB): exactly how an
// offline build runs it, with the mirror's module cache (or the host's)
// as its proxy and GOSUMDB=off. Nothing would then check the compiler of
// every binary the build ships. VerifyGoToolchain checks it instead, from
// the checksum database's record and tiles the go command cached in that
// proxy when it downloaded the toolchain online (pallet fetch's, or an
// earlier build's), before any go command of the build runs.

// knownSumDBKey is the verifier key of sum.golang.org, which the go command
// knows by name (cmd/go/internal/modfetch/key.go).
const knownSumDBKey = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"

// maxToolchainZip bounds the toolchain zip copied and hashed (Go 1.25.5
// for linux/amd64: 64 MB).
const maxToolchainZip = 1 << 30

// maxSumDBFile bounds a cached lookup or tile: a tile is 256 hashes of 32
// bytes, a lookup a record and a signed tree head.
const maxSumDBFile = 64 << 10

// toolchainModule is the module the go command downloads to switch to
// release goVersion ("go1.25.5") on this host.
func toolchainModule(goVersion string) module.Version {
	return module.Version{Path: "golang.org/toolchain", Version: "v0.0.1-" + goVersion + "." + runtime.GOOS + "-" + runtime.GOARCH}
}

// toolchainVerified memoizes VerifyGoToolchain by what it checked: a
// toolchain, once unpacked in a module cache from proven bytes (or found
// there and proven), is what every later go command of the process runs.
var toolchainVerified sync.Map // toolchainCheck -> struct{} (once.Success)

type toolchainCheck struct{ version, proxy, modcache, sumdb string }

// VerifyGoToolchain proves, before a go command runs in dir with env, the
// toolchain it would switch to where the go command itself would not
// check it: GOPROXY is a single file:// proxy and GOSUMDB is off (an
// offline build), and GOTOOLCHAIN names a release other than the go
// command's own, or lets the go command switch by itself (auto, the
// default, or goX.Y.Z+auto) to one the go.work or go.mod it finds from dir
// asks for. The record of that toolchain in the checksum database the
// user's GOSUMDB names (sum.golang.org by default) is read from the
// proxy's cached lookup and tiles and verified with the database's key;
// the toolchain already unpacked in the build's module cache must hash as
// the record says, or else the proxy's zip and go.mod, copied, must (and
// the module cache's own zip, if it holds one), and the go command
// unpacks them into the module cache before the build runs, so that it
// never reads the proxy's own; the tree unpacked is hashed again.
//
// The environment to run the go command with is returned: offline, one
// whose GOTOOLCHAIN names exactly the toolchain proven (or local, where
// no switch is due), so that the go command switches to no other, by a
// rule of its own not worked out here (go install m@v's go.mod, a later
// go's) or a go.mod changed meanwhile: it fails instead. Anything else
// passes unchanged: the go command checks the toolchain itself, or takes
// it from PATH (path, +path), or refuses the GOTOOLCHAIN.
func VerifyGoToolchain(ctx context.Context, dir string, env []string) ([]string, error) {
	proxy := EnvValue(env, "GOPROXY")
	if EnvValue(env, "GOSUMDB") != "off" || !strings.HasPrefix(proxy, "file://") || strings.ContainsAny(proxy, ",|") {
		return env, nil
	}
	gotc := EnvValue(env, "GOTOOLCHAIN")
	if gotc == "local" {
		return env, nil
	}
	// The go command on PATH is asked where pallet runs, once for every
	// build: it runs the same Go wherever it runs. A version manager's
	// shim does not (HostGo), and is asked in dir, or a release it runs
	// elsewhere would be taken for the one the build runs, and the
	// release the build switches to from it go unchecked.
	at := ""
	if _, own, err := HostGo(); err == nil && !own {
		at = dir
	}
	if gotc == "" {
		// The go command's own default ($GOROOT/go.env, go env -w),
		// which go env GOTOOLCHAIN alone reports without switching:
		// asked once, not before every go command of every build.
		v, err := askOnce(ctx, at, env, []string{"GOTOOLCHAIN"}, goEnvIn)
		if err != nil {
			return nil, err
		}
		gotc = v[0]
	}
	min, mode, plus := strings.Cut(gotc, "+")
	if !plus && (min == "auto" || min == "path") {
		min, mode = "local", min
	}
	if mode == "path" || plus && mode != "auto" || min != "local" && goFromToolchain(min) == "" {
		return env, nil
	}
	local := append(slices.Clip(env), "GOTOOLCHAIN=local")
	v, err := AskToolchainEnv(ctx, at, local, "GOVERSION", "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	want, minVers := min, goFromToolchain(min)
	if min == "local" {
		want, minVers = "", localGoVersion(v[0])
	}
	if mode == "auto" {
		up, err := autoToolchain(ctx, dir, local, minVers)
		if err != nil {
			return nil, err
		}
		if up != "" {
			want = up
		}
	}
	if want == "" {
		return local, nil
	}
	pinned := append(slices.Clip(env), "GOTOOLCHAIN="+want)
	if f := strings.Fields(v[0]); len(f) > 0 && f[0] == want {
		return pinned, nil // no switch: the go command on PATH runs
	}
	db := userSumDB()
	key := toolchainCheck{version: want, proxy: filepath.FromSlash(strings.TrimPrefix(proxy, "file://")), modcache: v[1], sumdb: db}
	if _, err := once.Success(&toolchainVerified, key, func() (struct{}, error) {
		return struct{}{}, verifyToolchain(ctx, local, key)
	}); err != nil {
		return nil, err
	}
	return pinned, nil
}

// autoToolchain is the toolchain the go command in dir switches to by
// itself, from the go and toolchain lines of the go.work or go.mod it
// finds there, when it runs go minVers or later (cmd/go/internal/toolchain
// Select, Go 1.21 to 1.26): "" for none. env has GOTOOLCHAIN=local; the
// go command says which file it reads.
func autoToolchain(ctx context.Context, dir string, env []string, minVers string) (string, error) {
	v, err := goEnvIn(ctx, dir, env, "GOWORK", "GOMOD")
	if err != nil {
		return "", fmt.Errorf("in %s: %w", dir, err)
	}
	file := ""
	if w := v[0]; w != "" && w != "off" {
		if _, err := os.Stat(w); err == nil {
			file = w
		}
	}
	if file == "" && v[1] != "" && v[1] != os.DevNull {
		file = v[1]
	}
	if file == "" {
		return "", nil
	}
	data, err := bounded.ReadFile(file, MaxGoMod)
	if err != nil {
		return "", err
	}
	goVers, tc := goModLine(data, "go"), goModLine(data, "toolchain")
	if tc == "default" {
		return "", nil
	}
	want := ""
	if tc != "" {
		tv := goFromToolchain(tc)
		if tv == "" || !strings.HasPrefix(tc, "go") && !strings.Contains(tc, "-go") {
			return "", fmt.Errorf("%s: invalid toolchain %q", file, tc)
		}
		if version.Compare("go"+tv, "go"+minVers) > 0 {
			want, minVers = tc, tv
		}
	}
	if version.Compare("go"+goVers, "go"+minVers) > 0 {
		want = "go" + goVers
		// Go 1.21 and later are released as 1.N.0: the go command asks
		// for that, not the language version.
		if version.Lang("go"+goVers) == "go"+goVers && version.Compare("go"+goVers, "go1.21") >= 0 {
			want += ".0"
		}
	}
	return want, nil
}

// goModLine is the value of the first key line of a go.mod or go.work, as
// the go command reads it before it parses the file (gover.GoModLookup).
func goModLine(data []byte, key string) string {
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), key)
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		return strings.TrimSpace(rest)
	}
	return ""
}

// goFromToolchain is the Go version of a toolchain name ("go1.25.5",
// "go1.25rc1-custom"), "" when it names none (gover.FromToolchain).
func goFromToolchain(name string) string {
	v, ok := strings.CutPrefix(name, "go")
	if !ok || strings.ContainsAny(name, `\/`) {
		return ""
	}
	if i := strings.IndexAny(v, " \t-"); i >= 0 {
		v = v[:i]
	}
	if !version.IsValid("go" + v) {
		return ""
	}
	return v
}

// localGoVersion is the Go version of the go command whose GOVERSION is
// goversion: a development one ("devel go1.27-abc ...") as its 1.N.
func localGoVersion(goversion string) string {
	if v := goFromToolchain(goversion); v != "" {
		return v
	}
	if f := strings.Fields(goversion); len(f) > 1 && f[0] == "devel" {
		v, _, _ := strings.Cut(strings.TrimPrefix(f[1], "go"), "-")
		return v
	}
	return ""
}

// HostGo is the go command exec finds on PATH, its links resolved, and
// whether it is a Go toolchain's own executable, which runs itself
// whatever the directory: the bin/go (bin/go.exe) of a GOROOT, a
// directory with src/cmd/go, the go command's source, which every
// release and every toolchain built from source has (Debian's
// /usr/bin/go is a link to one). Anything else is taken for a version
// manager's shim (asdf's and goenv's shell scripts, mise's link to its
// own binary, a wrapper): it runs the Go that a file in the directory it
// runs in or above (.tool-versions, .go-version), or a variable
// (ASDF_GOLANG_VERSION, GOENV_VERSION), selects, and keeps its own
// stamp when the user switches, so that neither its stamp nor what it
// said elsewhere names the toolchain: it must be asked, where and with
// the environment the build runs it. A VERSION file is not required:
// a toolchain built from source has none; a "#!" at the start is not
// looked for: a shim need not be a script, and the path decides alone.
func HostGo() (gobin string, own bool, err error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", false, err
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", false, err
	}
	return p, ownGo(p), nil
}

// ownGo says whether gobin, a resolved path, is the go command of a
// GOROOT (HostGo).
func ownGo(gobin string) bool {
	if name := filepath.Base(gobin); name != "go" && name != "go.exe" {
		return false
	}
	bin := filepath.Dir(gobin)
	if filepath.Base(bin) != "bin" {
		return false
	}
	info, err := os.Stat(filepath.Join(filepath.Dir(bin), "src", "cmd", "go"))
	return err == nil && info.IsDir()
}

// EnvValue is the value of the variable k in env as a process started
// with env sees it: its last setting ("" if none).
func EnvValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// userSumDB is the checksum database the user's go command uses: GOSUMDB
// from the environment or go env -w, not the build's (offline, off).
func userSumDB() string {
	if v := os.Getenv("GOSUMDB"); v != "" {
		return v
	}
	if v := goEnvFile()["GOSUMDB"]; v != "" {
		return v
	}
	return "sum.golang.org"
}

// sumDBVerifier reads GOSUMDB as the go command does ("name", "key",
// "key url"): the verifier of its signed tree heads.
func sumDBVerifier(gosumdb string) (note.Verifier, string, error) {
	if gosumdb == "off" {
		return nil, "", errors.New("GOSUMDB=off: nothing can verify the pinned toolchain, which the go command takes unchecked from a single file:// GOPROXY; set GOSUMDB (sum.golang.org by default) to the checksum database that vouches for it")
	}
	if gosumdb == "sum.golang.google.cn" {
		gosumdb = "sum.golang.org"
	}
	f := strings.Fields(gosumdb)
	if len(f) == 0 || len(f) > 2 {
		return nil, "", fmt.Errorf("invalid GOSUMDB %q", gosumdb)
	}
	k := f[0]
	if k == "sum.golang.org" {
		k = knownSumDBKey
	}
	v, err := note.NewVerifier(k)
	if err != nil {
		return nil, "", fmt.Errorf("invalid GOSUMDB %q: %w", gosumdb, err)
	}
	return v, k, nil
}

// verifyToolchain does VerifyGoToolchain's check of c; env is the build's,
// with GOTOOLCHAIN=local.
func verifyToolchain(ctx context.Context, env []string, c toolchainCheck) error {
	m := toolchainModule(c.version)
	zipSum, modSum, err := toolchainRecord(c.proxy, c.sumdb, m)
	if err != nil {
		return err
	}
	download, unpacked, err := ModuleCachePaths(c.modcache, m)
	if err != nil {
		return err
	}
	checkTree := func() error {
		got, err := modhash.Dir(unpacked, m.String())
		if err != nil {
			return fmt.Errorf("toolchain %s: hashing %s: %w", m, unpacked, err)
		}
		if got != zipSum {
			return fmt.Errorf("toolchain %s: %s has %s, the checksum database says %s: remove it from the module cache", m, unpacked, got, zipSum)
		}
		return nil
	}
	// The directory before its .partial, as the go command looks: it
	// writes .partial, unpacks, then removes it, so a directory seen with
	// no .partial after it is one it finished, where .partial looked at
	// first could be gone before another process's unpacking began.
	if info, err := os.Stat(unpacked); err == nil && info.IsDir() {
		if _, err := os.Stat(download + ".partial"); errors.Is(err, fs.ErrNotExist) {
			return checkTree()
		}
	}
	// The go command unpacks the zip its module cache holds, if any,
	// rather than the proxy's: proven first, so that a wrong one is not
	// unpacked.
	if info, err := os.Stat(download + ".zip"); err == nil {
		if !info.Mode().IsRegular() {
			return fmt.Errorf("toolchain %s: %s is not a regular file: remove it from the module cache", m, download+".zip")
		}
		// Bounded as the proxy's copy is: hashing reads the whole zip.
		if info.Size() > maxToolchainZip {
			return fmt.Errorf("toolchain %s: %s is %d bytes, over the %d a toolchain's may be: remove it from the module cache", m, download+".zip", info.Size(), int64(maxToolchainZip))
		}
		got, err := modhash.Zip(download + ".zip")
		if err != nil {
			return fmt.Errorf("toolchain %s: hashing %s: %w", m, download+".zip", err)
		}
		if got != zipSum {
			return fmt.Errorf("toolchain %s: %s has %s, the checksum database says %s: remove it from the module cache", m, download+".zip", got, zipSum)
		}
	}
	// Scratch goes in the build's work directory (GOTMPDIR) when it has
	// one, which is removed whatever happens.
	tmp, err := os.MkdirTemp(EnvValue(env, "GOTMPDIR"), "pallet-toolchain-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	served, err := proxyPath(c.proxy, m)
	if err != nil {
		return err
	}
	copied, err := proxyPath(filepath.Join(tmp, "proxy"), m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(copied), 0o755); err != nil {
		return err
	}
	// The copies are hashed, not the proxy's files: they are what the go
	// command then reads.
	if err := copyBounded(served+".zip", copied+".zip", maxToolchainZip); err != nil {
		return fmt.Errorf("toolchain %s: %w", m, err)
	}
	got, err := modhash.Zip(copied + ".zip")
	if err != nil {
		return fmt.Errorf("toolchain %s: hashing %s: %w", m, served+".zip", err)
	}
	if got != zipSum {
		return fmt.Errorf("toolchain %s: %s has %s, the checksum database says %s", m, served+".zip", got, zipSum)
	}
	// The go command switching toolchains reads the zip alone, and a
	// mirror holds no .mod for it: go mod download below reads one, the
	// module line the record's go.mod hash is of.
	modFile := served + ".mod"
	if err := copyBounded(modFile, copied+".mod", MaxGoMod); errors.Is(err, fs.ErrNotExist) {
		modFile = "the go.mod a module proxy serves for it"
		if err := os.WriteFile(copied+".mod", fmt.Appendf(nil, "module %s\n", m.Path), 0o644); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("toolchain %s: %w", m, err)
	}
	got, err = modhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) { return os.Open(copied + ".mod") })
	if err != nil {
		return err
	}
	if got != modSum {
		return fmt.Errorf("toolchain %s: %s has %s, the checksum database says %s", m, modFile, got, modSum)
	}
	if err := os.WriteFile(copied+".info", fmt.Appendf(nil, "{\"Version\":%q}\n", m.Version), 0o644); err != nil {
		return err
	}
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	// GOTOOLCHAIN=local: go mod download of a toolchain unpacks it, runs
	// nothing of it.
	cmd := Command(ctx, "go", "mod", "download", m.String())
	cmd.Dir = work
	// Of GOFLAGS, only -modcacherw: the recipe's build flags (-mod) mean
	// nothing, or an error, to go mod download outside a module.
	flags := ""
	if slices.Contains(strings.Fields(EnvValue(env, "GOFLAGS")), "-modcacherw") {
		flags = "-modcacherw"
	}
	cmd.Env = append(env, "GOTOOLCHAIN=local", "GOPROXY=file://"+filepath.ToSlash(filepath.Join(tmp, "proxy")), "GOSUMDB=off", "GOMODCACHE="+c.modcache, "GOWORK=off", "GOFLAGS="+flags)
	out := &bounded.Output{Max: maxCommandComplaint}
	cmd.Stdout, cmd.Stderr = out, out
	if err := bounded.Answered(cmd, cmd.Run()); err != nil {
		return fmt.Errorf("toolchain %s: unpacking it into %s: go mod download: %w\n%s", m, c.modcache, err, strings.TrimSpace(out.String()))
	}
	// What was unpacked is what runs: proven too, whatever the module
	// cache or the proxy held meanwhile.
	return checkTree()
}

// copyBounded copies the regular file src to dst, at most limit bytes.
func copyBounded(src, dst string, limit int64) error {
	// Opened without waiting: a named pipe there would block os.Open
	// until something writes to it.
	in, err := bounded.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if info, err := in.Stat(); err != nil {
		return err
	} else if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	} else if info.Size() > limit {
		return fmt.Errorf("%s is %d bytes, over the %d a toolchain's may be", src, info.Size(), limit)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	// One byte past the limit is read: a file that grew since its size
	// was seen is said to be over it, not taken cut short, which then
	// hashed as another toolchain's.
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("%s is over the %d bytes a toolchain's may be (it grew while it was copied)", src, limit)
	}
	if err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// toolchainRecord reads m's go.sum lines from the checksum database gosumdb
// names, as the go command cached them in the file proxy dir (its
// sumdb/<name>/lookup and tile files), verified by the database's key and
// its tree: the h1: hashes of m's zip and of its go.mod.
func toolchainRecord(dir, gosumdb string, m module.Version) (zipSum, modSum string, err error) {
	verifier, key, err := sumDBVerifier(gosumdb)
	if err != nil {
		return "", "", fmt.Errorf("toolchain %s: %w", m, err)
	}
	ops := &cachedSumDB{dir: filepath.Join(dir, "sumdb", filepath.FromSlash(verifier.Name())), key: key, config: map[string][]byte{}}
	ep, ev, err := escaped(m)
	if err != nil {
		return "", "", err
	}
	lookup := filepath.Join(ops.dir, "lookup", filepath.FromSlash(ep)+"@"+ev)
	if _, err := os.Stat(lookup); err != nil {
		return "", "", fmt.Errorf("toolchain %s: no record of it from checksum database %s to verify it by offline (%w): fetch the mirror again with this pallet (pallet fetch), or, without a mirror, build once online", m, verifier.Name(), err)
	}
	// The client says a note signed by another key, or forged, only as
	// text: checked here first, so that the error says so rather than
	// suggest fetching again what would be refused again.
	data, err := bounded.ReadFile(lookup, maxSumDBFile)
	if err != nil {
		return "", "", fmt.Errorf("toolchain %s: checksum database %s's record for it: %w", m, verifier.Name(), err)
	}
	if _, _, signed, err := tlog.ParseRecord(data); err != nil {
		return "", "", fmt.Errorf("toolchain %s: %s, checksum database %s's record for it: %w", m, lookup, verifier.Name(), err)
	} else if _, err := note.Open(signed, note.VerifierList(verifier)); err != nil {
		return "", "", fmt.Errorf("toolchain %s: %s, checksum database %s's record for it, is not signed by the key GOSUMDB gives it (%s): %w; it comes from another checksum database, or was altered", m, lookup, verifier.Name(), key, err)
	}
	client := sumdb.NewClient(ops)
	// One record holds both hashes; Lookup gives the go.mod's only when
	// asked for version/go.mod.
	var lines []string
	for _, v := range []string{m.Version, m.Version + "/go.mod"} {
		l, err := client.Lookup(m.Path, v)
		if msg := ops.securityError(); msg != "" {
			return "", "", fmt.Errorf("toolchain %s: checksum database %s's data in %s: %s", m, verifier.Name(), dir, msg)
		}
		if err != nil {
			return "", "", fmt.Errorf("toolchain %s: verifying it by checksum database %s's data in %s (fetch the mirror again with this pallet if it lacks some): %w", m, verifier.Name(), dir, err)
		}
		lines = append(lines, l...)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != m.Path {
			continue
		}
		switch f[1] {
		case m.Version:
			zipSum = f[2]
		case m.Version + "/go.mod":
			modSum = f[2]
		}
	}
	if zipSum == "" || modSum == "" {
		return "", "", fmt.Errorf("toolchain %s: %s, checksum database %s's record for it, does not hold its hashes", m, lookup, verifier.Name())
	}
	return zipSum, modSum, nil
}

// cachedSumDB serves a sumdb.Client from what the go command cached of one
// checksum database in a module cache's cache/download/sumdb/<name>, and
// nothing else: no network, no configuration but the key, and a tree no
// newer than the lookup's. What it serves is checked by the client (the
// note's signature, the record's and tiles' hashes up to its tree).
type cachedSumDB struct {
	dir, key string
	mu       sync.Mutex // the client reads tiles in parallel
	config   map[string][]byte
	security string
}

func (c *cachedSumDB) securityError() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.security
}

func (c *cachedSumDB) ReadRemote(p string) ([]byte, error) {
	p = strings.TrimPrefix(p, "/")
	if strings.HasPrefix(p, "tile/") {
		return c.readTile(p)
	}
	return c.read(p)
}

func (c *cachedSumDB) read(p string) ([]byte, error) {
	if !fs.ValidPath(p) {
		return nil, fmt.Errorf("invalid checksum database path %q", p)
	}
	return bounded.ReadFile(filepath.Join(c.dir, filepath.FromSlash(p)), maxSumDBFile)
}

// readTile serves tile p, or, when the go command cached a wider copy of
// it (a tree it verified later than the lookup's), that copy's prefix:
// a tile's hashes stay as they are as the tree grows.
func (c *cachedSumDB) readTile(p string) ([]byte, error) {
	data, err := c.read(p)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	t, err := tlog.ParseTilePath(p)
	if err != nil {
		return nil, err
	}
	full := t
	full.W = 1 << uint(t.H)
	if data, err := c.read(full.Path()); err == nil && len(data) >= t.W*tlog.HashSize {
		return data[:t.W*tlog.HashSize], nil
	}
	dir := path.Dir(p) // <n>.p
	entries, _ := os.ReadDir(filepath.Join(c.dir, filepath.FromSlash(dir)))
	for _, e := range entries {
		w, err := tlog.ParseTilePath(dir + "/" + e.Name())
		if err != nil || w.W < t.W {
			continue
		}
		if data, err := c.read(dir + "/" + e.Name()); err == nil && len(data) >= t.W*tlog.HashSize {
			return data[:t.W*tlog.HashSize], nil
		}
	}
	return nil, fmt.Errorf("tile %s: %w", p, fs.ErrNotExist)
}

func (c *cachedSumDB) ReadConfig(file string) ([]byte, error) {
	if file == "key" {
		return []byte(c.key), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.config[file], nil
}

func (c *cachedSumDB) WriteConfig(file string, old, new []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if string(c.config[file]) != string(old) {
		return sumdb.ErrWriteConflict
	}
	c.config[file] = new
	return nil
}

func (c *cachedSumDB) ReadCache(string) ([]byte, error) { return nil, fs.ErrNotExist }
func (c *cachedSumDB) WriteCache(string, []byte)        {}
func (c *cachedSumDB) Log(string)                       {}
func (c *cachedSumDB) SecurityError(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.security = msg
}
