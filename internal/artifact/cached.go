package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/tree"
)

// digest is the sha256 of a file, remembered by the cache across builds
// when there is one; st is the file's stamp, if the caller took it.
func (f *Fetcher) digest(path string, st tree.Stamp) (string, error) {
	if f.Cache != nil {
		return f.Cache.FileDigest(path, st)
	}
	return cache.HashFile(path)
}

// key is the cache key of r's result: everything that can change what the
// artifact produces, the kind's inputs and what this package adds
// (licences). ok is false for kinds used in place.
func (f *Fetcher) key(r *Request) (string, bool, error) {
	parts, ok, err := r.Kind.Key(f, r)
	if err != nil || !ok {
		return "", false, err
	}
	// Work the same on every platform is kept once for them all: a
	// build of both platforms makes it for the first only (SameWork),
	// and a later build of the second alone takes it from there.
	on := r.Platform.String()
	if r.SameWork() != "" {
		on = "any platform"
	}
	// v5: findLicenses leaves out scripts and sources with licence-like
	// names, which an entry made before keeps among its licences.
	common := []string{"v5", r.Kind.Name(), r.Mode, on, strings.Join(r.Licenses, "\x00"), strconv.FormatBool(r.NoLicense)}
	return cache.Key(append(common, parts...)...), true, nil
}

// fetch is Fetch's cache-aside: take the entry for r's key, or make it under
// the key's lock and store it.
func (f *Fetcher) fetch(ctx context.Context, r *Request, work string) (*Result, error) {
	if f.Cache == nil {
		return f.produce(ctx, r, work)
	}
	key, ok, err := f.key(r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return f.produce(ctx, r, work)
	}
	// An entry that is damaged, or not what the request pins, is said,
	// dropped and made again.
	// An entry pulled from a shared registry cache is checked the same way
	// before it enters the local cache at all.
	check := func(dir string) error {
		_, err := f.fromCache(dir, r)
		return err
	}
	lookup := func(locked bool) (*Result, bool) {
		dir, hit := f.Cache.ArtifactChecked(key, check)
		if !hit {
			return nil, false
		}
		res, err := f.fromCache(dir, r)
		if err != nil && locked {
			f.Log("cache: %v; rebuilding", err)
			if err := f.Cache.DropArtifact(key); err != nil {
				f.Log("cache: %v", err)
			}
		}
		return res, err == nil
	}
	return cache.Aside(f.Cache, "artifact-"+key, lookup, func() (*Result, error) {
		res, err := f.produce(ctx, r, work)
		if err != nil {
			return nil, err
		}
		// The key was made from the inputs before the work read them: if
		// they changed meanwhile, the result belongs to neither version,
		// and would be stored under the old one's key.
		if after, _, err := f.key(r); err != nil || after != key {
			if err == nil {
				err = errors.New("its inputs changed while it was being built; run the build again")
			}
			return nil, err
		}
		res.Record.Origin = r.Kind.Origin()
		// What is stored is what later builds read, the source's
		// snapshot included: this one reads the same.
		return f.store(key, res, work, r)
	})
}

// localModulesDigest covers every file of the module in dir and of every
// module it replaces with a local directory, followed transitively: all a
// go build of it reads from disk besides the module cache (whose modules
// go.sum pins) and the toolchain. What it reads of them all is bounded
// by maxKeyFiles and maxKeyBytes together. packages are those the
// recipe builds, as it names them: go build compiles them through links
// up too (see importedUp). cgo says whether the build compiles cgo
// files, whose headers are then looked for, with env's flags.
func (f *Fetcher) localModulesDigest(dir string, packages []string, cgo bool, env cgoEnvFlags) ([]string, error) {
	dirs, walks, err := walkModules(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, d := range dirs {
		sum, err := tree.Digest(walks[i].t, f.digest)
		if err != nil {
			return nil, err
		}
		// The directory is named as go.mod names it relative to the
		// module, so moving the whole tree keeps the key.
		rel, err := filepath.Rel(dir, d)
		if err != nil {
			rel = d
		}
		out = append(out, filepath.ToSlash(rel)+"="+sum)
	}
	// Only where a link leads up: the keys of all other modules are
	// what they were.
	var reads *cgoReads
	if cgo && f.keyReads != nil {
		root, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, err
		}
		reads = &cgoReads{root: root}
	}
	ups, headers, pcs, err := f.importedUp(walks, filepath.Clean(dir), packages, cgo, env, reads)
	if err != nil {
		return nil, err
	}
	if reads != nil {
		f.keyReads.Store(keyReadsKey(dir, packages, env), reads)
	}
	for i, up := range ups {
		if up == nil {
			continue
		}
		sum, err := tree.Digest(up, f.digest)
		if err != nil {
			return nil, err
		}
		out[i] += " up:" + sum
	}
	for i, h := range headers {
		if h == nil {
			continue
		}
		sum, err := tree.Digest(h, f.digest)
		if err != nil {
			return nil, err
		}
		out[i] += " cgo:" + sum
	}
	for i, pc := range pcs {
		if pc != "" {
			out[i] += " pkg-config:" + cache.Key(pc)
		}
	}
	return out, nil
}

// keyReadsKey names the headers read by a build of packages of the
// module in dir with env's flags and environment (pkg-config's), which
// are all they depend on.
func keyReadsKey(dir string, packages []string, env cgoEnvFlags) string {
	return strings.Join([]string{filepath.Clean(dir), strings.Join(packages, "\x00"),
		strings.Join(env.cppflags, "\x00"), strings.Join(env.cflags, "\x00"), strings.Join(env.cxxflags, "\x00"),
		strings.Join(env.environ, "\x00")}, "\x01")
}

// keyedReads gives the headers the last key of a build of packages of
// the local module in dir with env found (localModulesDigest), nil where
// none was made, one of them is not as it was then (its stamp, or
// where its path leads), or a directory looked in for one is not (a
// header made there since may shadow one found, and its compile was
// given the old digest): its build had the module walked again for
// them (cgoHeadersRead), the whole tree listed a second time a moment
// after the key listed it. A change none of those show (a new #include
// in a Go file) changes the key made after the build, which then
// stores nothing; go build's cache hashes the Go file. A header edited
// while go build runs is compiled under the old digest all the same.
func (f *Fetcher) keyedReads(dir string, packages []string, env cgoEnvFlags) *cgoReads {
	if f.keyReads == nil {
		return nil
	}
	v, ok := f.keyReads.Load(keyReadsKey(dir, packages, env))
	if !ok {
		return nil
	}
	reads := v.(*cgoReads)
	for _, h := range reads.list {
		info, err := os.Stat(h.at)
		if err != nil || tree.StampOf(info) != h.st {
			return nil
		}
		if resolved, err := filepath.EvalSymlinks(h.at); err != nil || resolved != h.resolved {
			return nil
		}
	}
	if !reads.unchanged() {
		return nil
	}
	return reads
}

// walkModulesHook, set by tests, is called as the module in dir is about
// to be walked.
var walkModulesHook func(dir string)

// walkModules walks the module in dir and those it replaces with local
// directories (localModules), in one budget.
func walkModules(dir string) ([]string, []*moduleWalk, error) {
	if walkModulesHook != nil {
		walkModulesHook(dir)
	}
	dirs, err := localModules(dir)
	if err != nil {
		return nil, nil, err
	}
	b := &keyBudget{}
	var walks []*moduleWalk
	for _, d := range dirs {
		w, err := walkModule(d, b)
		if err != nil {
			return nil, nil, err
		}
		walks = append(walks, w)
	}
	return dirs, walks, nil
}

// cgoHeadersRead lists the headers that the cgo packages of a build of
// packages of the module in dir read, found as its key finds them, in
// the modules or not, named from dir, with env's flags.
func (f *Fetcher) cgoHeadersRead(dir string, packages []string, env cgoEnvFlags) (*cgoReads, error) {
	_, walks, err := walkModules(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	reads := &cgoReads{root: root}
	if _, _, _, err := f.importedUp(walks, filepath.Clean(dir), packages, true, env, reads); err != nil {
		return nil, err
	}
	return reads, nil
}

// walkModule lists every file of a local module (VCS metadata aside),
// as go build reads them: through a link at the module's own path (a
// module: ./src that links to the sources, which WalkDir alone took for
// an empty module, so that no edit changed the key and the cache gave
// the binary of the sources first built), and through links inside it,
// to a file or to a package's directory (which go build imports through
// the link). A link to nothing, or to a directory holding the module
// (which would walk all that holds it), is listed as its target as
// written; the packages imported through the latter are importedUp's.
// All it reads counts in b.
func walkModule(dir string, b *keyBudget) (*moduleWalk, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	w := &moduleWalk{t: tree.New(), root: root, dir: dir, walked: map[string]bool{}, budget: b, devs: map[uint64]string{}}
	err = kernelMade(root)
	if err == nil {
		err = w.add(root, "")
	}
	if err != nil {
		return nil, fmt.Errorf("go module %s: %w", dir, err)
	}
	return w, nil
}

// The files and bytes a key reads, in all: of its module, of the
// directories its go.mod replaces modules with, and through their links.
// go build reads only the packages it imports, but the key cannot know
// which, and reads all of them. A link to /usr, or to /proc (whose kcore
// is as large as the address space), or a module or replace directory at
// /, would have every build hash all of it, where go build reads a few
// packages. High enough for a large repository's tree as it is worked in,
// with what its own builds left in it (Kubernetes' make writes GBs under
// _output), where a refusal would leave its user nothing to do but move
// the tree: the memo hashes a file again only when its stamp changes.
// Variables, so that tests can lower them.
var (
	maxKeyFiles       = 250_000
	maxKeyBytes int64 = 16 << 30
)

// keyBudget counts what one key has read.
type keyBudget struct {
	files int
	bytes int64
}

// moduleWalk adds a module's files to t.
type moduleWalk struct {
	t *tree.Tree
	// root is the module's directory, resolved; dir as the recipe or
	// go.mod names it.
	root, dir string
	walked    map[string]bool
	budget    *keyBudget
	// devs are the kernel filesystems (kernelFS) of the devices the
	// walk's files are on, "" for others.
	devs map[uint64]string
	// goFiles are the Go files added to t, whose imports importedUp
	// reads; up the links found to directories that hold the module.
	goFiles []goFile
	up      []upLink
}

// goFile is a Go file the walk found at path, with the stamp it took.
type goFile struct {
	path string
	st   tree.Stamp
}

// read counts a file of size bytes at p that the key reads. Its error is
// blamed on the recipe's module: what it would read is all under it.
func (w *moduleWalk) read(p string, size int64) error {
	b := w.budget
	b.files++
	b.bytes += size
	switch {
	case b.files > maxKeyFiles:
		return blame("module", fmt.Errorf("more than %d files in the module, the directories it replaces modules with and what their links lead to (at %s): the cache key would read them all; keep the module, and what it links to, to the packages it builds", maxKeyFiles, p))
	case b.bytes > maxKeyBytes:
		return blame("module", fmt.Errorf("more than %d bytes in the module, the directories it replaces modules with and what their links lead to (at %s, %d bytes): the cache key would read them all; keep the module, and what it links to, to the packages it builds", maxKeyBytes, p, size))
	}
	return nil
}

// kernelMade refuses p, a file or directory the key would read, when the
// kernel makes up its files as they are read (see kernelFS): hashing
// /proc/kmsg waits forever, and what the others hold changes with no
// stamp to show it. A link to one is refused, not taken as its target
// text: go build reads a package's files through it.
func kernelMade(p string) error {
	if fsys := kernelFS(p); fsys != "" {
		return blame("module", fmt.Errorf("%s is on the kernel's %s filesystem, whose files are made as they are read (a read of some waits forever): the cache key reads none; copy what the build needs into the module", p, fsys))
	}
	return nil
}

// kernelDev is kernelMade for a file the walk came to, asked once per
// device: a kernel filesystem mounted below a directory walked (a bind
// mount of /proc, a chroot linked to that holds one) is on no path that
// kernelMade was asked about, the roots and the links' targets, and the
// key hashed what its files said at that moment. Its files' device is
// another than the directory's, and the walk has their stat anyway.
func (w *moduleWalk) kernelDev(p string, info fs.FileInfo) error {
	dev := tree.StampOf(info).Dev
	fsys, ok := w.devs[dev]
	if !ok {
		fsys = kernelFS(p)
		w.devs[dev] = fsys
	}
	if fsys != "" {
		return kernelMade(p)
	}
	return nil
}

// goWouldRead refuses a file at rel that is not a regular one (of mode m)
// where go build would read it, by its name, as a package's source: it
// opens a named pipe x.go and waits for a writer forever, and reads a
// device as the device gives (go 1.26, tried). Any other it leaves alone
// (go/build's matchFile: other extensions, names from _ or .), and so
// does the key, which opens none. A module's go.sum and
// vendor/modules.txt it reads by name too, and waits on as long.
func goWouldRead(rel string, m fs.FileMode) error {
	if rel == "go.sum" || rel == "vendor/modules.txt" {
		return blame("module", fmt.Errorf("go build would read %s, by its name, and it is %s (a pipe it would wait on forever): make it a file", rel, bounded.TypeName(m)))
	}
	if name := path.Base(rel); strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
		return nil
	}
	switch path.Ext(rel) {
	case ".go", ".c", ".cc", ".cxx", ".cpp", ".m", ".s", ".S", ".sx", ".h", ".hh", ".hpp", ".hxx",
		".f", ".F", ".for", ".f90", ".swig", ".swigcxx", ".syso":
		return blame("module", fmt.Errorf("go build would read %s as a source file, by its name, and it is %s (a pipe it would wait on forever): make it a file", rel, bounded.TypeName(m)))
	}
	return nil
}

// holds says whether p, a path with no link in it, is in the module.
func (w *moduleWalk) holds(p string) bool { return within(p, w.root) }

// add adds to t the files under dir, a directory with no link in its
// path, named below prefix ("" for the module's root), following links
// out of the module's root. A directory is walked once, at the first
// path that leads to it. Each file's stamp is taken here, where the
// walk stats it to count its bytes, so that its digest stats it no more.
func (w *moduleWalk) add(dir, prefix string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == ".hg" || w.walked[p] {
				return filepath.SkipDir
			}
			w.walked[p] = true
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = path.Join(prefix, filepath.ToSlash(rel))
		// at is the file read, where a link leads for a link.
		var info fs.FileInfo
		at := p
		switch {
		case d.Type().IsRegular():
			if info, err = d.Info(); err != nil {
				return err
			}
			if err := w.kernelDev(p, info); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			if to, err := filepath.EvalSymlinks(p); err == nil {
				linked, err := os.Stat(to)
				if err != nil {
					return err
				}
				if linked.Mode().IsRegular() || linked.IsDir() {
					if err := kernelMade(to); err != nil {
						return fmt.Errorf("%s, a link to %s: %w", rel, to, err)
					}
				}
				if linked.Mode().IsRegular() {
					info, at = linked, to
					break
				}
				if linked.IsDir() && !within(w.root, to) {
					if err := w.add(to, rel); err != nil {
						return fmt.Errorf("%s, a link to %s: %w", rel, to, err)
					}
					return nil
				}
				if linked.IsDir() {
					w.up = append(w.up, upLink{rel: rel, path: p})
				} else if err := goWouldRead(rel, linked.Mode()); err != nil {
					return fmt.Errorf("%s, a link to %s: %w", rel, to, err)
				}
			}
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return w.t.Add(tree.Entry{Path: rel, Kind: tree.Symlink, Link: target})
		default:
			return goWouldRead(rel, d.Type())
		}
		if err := w.read(at, info.Size()); err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".go") {
			w.goFiles = append(w.goFiles, goFile{p, tree.StampOf(info)})
		}
		return w.t.Add(tree.Entry{Path: rel, Kind: tree.File, Source: p, Stamp: tree.StampOf(info)})
	})
}

var (
	hostGoOnce sync.Once
	hostGo     string
	hostGoOwn  bool
	hostGoErr  error
)

// toolchainIdentity names the Go toolchain a build uses: the pinned
// release; or the host's go binary by path, size and mtime, without
// running it (asking `go env` would cost more than a no-op rebuild may
// take); or, where the go on PATH is not a toolchain's own (a version
// manager's shim, see HostGo), whose stamp stays when the user switches
// Go, the toolchain ask names, asking it where the build runs it (go env
// GOROOT GOVERSION, once per directory and environment in a process):
// by its version, GOROOT and the stamp of its go there, so that a patch
// release of a distribution's Go that keeps its version is told apart.
func toolchainIdentity(pinned string, ask func() (root, version string, err error)) (string, error) {
	if pinned != "" {
		return "go" + pinned, nil
	}
	hostGoOnce.Do(func() {
		p, own, err := HostGo()
		if err != nil {
			hostGoErr = err
			return
		}
		info, err := os.Stat(p)
		if err != nil {
			hostGoErr = err
			return
		}
		// GOTOOLCHAIN, from the environment or the go env file, may
		// select another Go than the one on PATH.
		toolchain := os.Getenv("GOTOOLCHAIN")
		if toolchain == "" {
			toolchain = goEnvFile()["GOTOOLCHAIN"]
		}
		hostGo = fmt.Sprintf("host:%s:%d:%d:%s", p, info.Size(), info.ModTime().UnixNano(), toolchain)
		hostGoOwn = own
	})
	if hostGoErr != nil || hostGoOwn {
		return hostGo, hostGoErr
	}
	root, version, err := ask()
	if err != nil {
		return "", fmt.Errorf("the Go toolchain the go on PATH, not a toolchain's own, runs: %w", err)
	}
	if !filepath.IsAbs(root) || version == "" {
		return "", fmt.Errorf("the Go toolchain the go on PATH, not a toolchain's own, runs: go env GOROOT GOVERSION said %q, %q", root, version)
	}
	gobin, err := filepath.EvalSymlinks(filepath.Join(root, "bin", "go"+exeSuffix()))
	if err != nil {
		return "", fmt.Errorf("the Go toolchain the go on PATH runs: %w", err)
	}
	info, err := os.Stat(gobin)
	if err != nil {
		return "", fmt.Errorf("the Go toolchain the go on PATH runs: %w", err)
	}
	return fmt.Sprintf("host-asked:%s:%s:%d:%d", version, gobin, info.Size(), info.ModTime().UnixNano()), nil
}

// exeSuffix is what names an executable end with on this host.
func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// store copies res into a new cache entry (hard links where possible) and
// returns the result as read back from it, so every later build sees the
// same paths.
func (f *Fetcher) store(key string, res *Result, work string, r *Request) (*Result, error) {
	tmp, release, err := f.Cache.TempDir()
	if err != nil {
		return nil, err
	}
	defer release()
	defer os.RemoveAll(tmp)
	src := res.ModuleSource
	if src == nil {
		src = tree.New()
	}
	trees := []struct {
		t   *tree.Tree
		sub string
	}{{res.Tree, "tree"}, {res.Licenses, "licenses"}, {src, "modsrc"}}
	if res.CLicenses != nil && res.CLicenses.Len() > 0 {
		// Only where there are any: an entry without the directory reads
		// back, and digests, as entries did before it existed.
		trees = append(trees, struct {
			t   *tree.Tree
			sub string
		}{res.CLicenses, "clibs"})
	}
	// The digests this build took of the files (while unpacking them),
	// looked up before any is linked: a link changes a file's ctime. Kept
	// in the order materialize walks the files, not by path: a map of
	// each path to its digest in hex was 130 MB for a million files.
	known := make([][]knownSum, len(trees))
	for i, m := range trees {
		for e := range m.t.All() {
			if e.Kind != tree.File {
				continue
			}
			var k knownSum
			if info, err := os.Stat(e.Source); err == nil {
				if sum, ok := f.Cache.Learned(tree.StampOf(info)); ok {
					k.ok = decodeSum(&k, sum)
				}
			}
			known[i] = append(known[i], k)
		}
	}
	var files []placedFile
	for i, m := range trees {
		p, err := materialize(m.t, filepath.Join(tmp, m.sub), work, known[i])
		if err != nil {
			return nil, err
		}
		files = append(files, p...)
		known[i] = nil
	}
	// The work directory's names of what was linked go now rather than
	// when the build ends, so that the entry's files have their final
	// ctime when the cache learns their digests: the files are pallet's,
	// and are not read again while their stamp holds.
	for _, p := range files {
		if p.linked {
			os.Remove(p.src)
		}
	}
	for _, p := range files {
		dst := p.dst()
		var sum string
		if p.summed {
			sum = hex.EncodeToString(p.sum.sum[:])
		} else {
			var err error
			if sum, err = cache.HashFile(dst); err != nil {
				return nil, err
			}
		}
		if err := f.Cache.Wrote(dst, sum); err != nil {
			return nil, err
		}
	}
	for _, sc := range sidecars {
		if data := sc.write(res.Tree); data != "" {
			if err := os.WriteFile(filepath.Join(tmp, sc.name), []byte(data), 0o644); err != nil {
				return nil, err
			}
		}
	}
	data, err := json.Marshal(res.Record)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "record.json"), data, 0o644); err != nil {
		return nil, err
	}
	// The entry's files are under a temporary name: their digests, just
	// learned, are taken by stamp, not remembered under names that are
	// about to go.
	sum, _, _, _, _, err := f.entryDigest(tmp, func(path string, st tree.Stamp) (string, error) {
		if sum, ok := f.Cache.Learned(st); ok {
			return sum, nil
		}
		return f.digest(path, st)
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "digest"), []byte(sum), 0o644); err != nil {
		return nil, err
	}
	dir, err := f.Cache.CommitArtifact(key, tmp)
	if err != nil {
		return nil, err
	}
	stored, err := f.fromCache(dir, r)
	if err != nil {
		return nil, err
	}
	stored.Cached = false
	// Not kept in the entry: true of this run's toolchain only.
	stored.GoRoot = res.GoRoot
	return stored, nil
}

// entryDigest covers the trees of a cache entry. Written when the entry is
// made and compared when it is used: file digests come from the cache's
// memory while files are untouched, so the check costs little, and a file
// changed or damaged since is caught.
func (f *Fetcher) entryDigest(dir string, digest tree.FileDigest) (string, *tree.Tree, *tree.Tree, *tree.Tree, *tree.Tree, error) {
	var trees [4]*tree.Tree
	var parts []string
	for i, sub := range []string{"tree", "licenses", "modsrc", "clibs"} {
		if _, err := os.Lstat(filepath.Join(dir, sub)); sub == "clibs" && errors.Is(err, fs.ErrNotExist) {
			continue // none: the digest is what it was before clibs
		}
		t, err := tree.FromDir(filepath.Join(dir, sub))
		if err != nil {
			return "", nil, nil, nil, nil, err
		}
		sum, err := tree.Digest(t, digest)
		if err != nil {
			return "", nil, nil, nil, nil, err
		}
		trees[i] = t
		if sub == "clibs" {
			sum = sub + ":" + sum
		}
		parts = append(parts, sum)
	}
	for _, sc := range sidecars {
		data, err := bounded.ReadRegular(filepath.Join(dir, sc.name), sc.max)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", nil, nil, nil, nil, err
		}
		if err := sc.read(trees[0], data); err != nil {
			return "", nil, nil, nil, nil, err
		}
		sum := sha256.Sum256(data)
		parts = append(parts, sc.name+":"+hex.EncodeToString(sum[:]))
	}
	return strings.Join(parts, " "), trees[0], trees[1], trees[2], trees[3], nil
}

// sidecars are what a cache entry keeps beside its trees of what the
// files on disk do not tell of an archive's entries, each in a file of
// its name (none when write gives ""), bounded by max when read back
// into the tree, and covered by the entry's digest.
var sidecars = []struct {
	name  string
	max   int64
	write func(t *tree.Tree) string
	read  func(t *tree.Tree, data []byte) error
}{
	// The directories an archive only implied (tree.Entry.Implied).
	{"implied", maxEntryImplied, impliedDirs, func(t *tree.Tree, data []byte) error {
		set := map[string]bool{}
		for p := range strings.SplitSeq(string(data), "\n") {
			set[p] = true
		}
		t.Imply(func(p string) bool { return set[p] })
		return nil
	}},
	// The modes and owners of its tar headers (tree.Entry.Archived).
	{"archived", maxEntryArchived, archivedEntries, func(t *tree.Tree, data []byte) error {
		headers, err := parseArchived(data)
		if err != nil {
			return err
		}
		t.Archive(func(p string) (tree.DirMeta, bool) {
			h, ok := headers[p]
			return h, ok
		})
		return nil
	}},
	// The names its hard links make one file of, which the files of the
	// entry need not be (a copy of the cache holds copies):
	// tree.Entry.Linked.
	{"linked", maxEntryLinked, linkedFiles, func(t *tree.Tree, data []byte) error {
		groups, err := parseLinked(data)
		if err != nil {
			return err
		}
		return t.Link(groups)
	}},
}

// linkedFiles lists the files of t an archive's hard links make one
// file of (tree.Entry.Linked), as a cache entry keeps them: for each, its
// path and the number of its group (from 1, in the order of t's
// entries), each ended by a NUL, which no path holds ("" if none).
func linkedFiles(t *tree.Tree) string {
	var sb strings.Builder
	number := map[*tree.LinkGroup]int{}
	for e := range t.All() {
		if e.Linked == nil {
			continue
		}
		n, ok := number[e.Linked]
		if !ok {
			n = len(number) + 1
			number[e.Linked] = n
		}
		fmt.Fprintf(&sb, "%s\x00%d\x00", e.Path, n)
	}
	return sb.String()
}

// nulRecords splits what a sidecar wrote, fields each ended by a NUL,
// into records of width fields; what says what they are, for the error
// of data that is not.
func nulRecords(data []byte, width int, what string) ([][]string, error) {
	fields := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	if len(fields)%width != 0 {
		return nil, fmt.Errorf("%s: not records of %d fields", what, width)
	}
	records := make([][]string, 0, len(fields)/width)
	for i := 0; i < len(fields); i += width {
		records = append(records, fields[i:i+width])
	}
	return records, nil
}

// parseLinked reads what linkedFiles wrote.
func parseLinked(data []byte) ([][]string, error) {
	records, err := nulRecords(data, 2, "hard-linked files (path, group)")
	if err != nil {
		return nil, err
	}
	var groups [][]string
	for _, r := range records {
		n, err := strconv.Atoi(r[1])
		// Groups are numbered in order: a number is one seen, or the next.
		if err != nil || n < 1 || n > len(groups)+1 {
			return nil, fmt.Errorf("hard-linked file %q: group %q", r[0], r[1])
		}
		if n > len(groups) {
			groups = append(groups, nil)
		}
		groups[n-1] = append(groups[n-1], r[0])
	}
	return groups, nil
}

// archivedEntries lists the entries of t that keep an archive's mode and
// owner (tree.Entry.Archived), as a cache entry keeps them: for each, its
// path, mode (octal), uid and gid, each ended by a NUL, which no path
// holds ("" if none).
func archivedEntries(t *tree.Tree) string {
	var sb strings.Builder
	for e := range t.All() {
		if a := e.Archived; a != nil {
			fmt.Fprintf(&sb, "%s\x00%o\x00%d\x00%d\x00", e.Path, tree.UnixMode(a.Mode), a.UID, a.GID)
		}
	}
	return sb.String()
}

// parseArchived reads what archivedEntries wrote.
func parseArchived(data []byte) (map[string]tree.DirMeta, error) {
	records, err := nulRecords(data, 4, "archived modes and owners (path, mode, uid, gid)")
	if err != nil {
		return nil, err
	}
	out := make(map[string]tree.DirMeta, len(records))
	for _, r := range records {
		mode, err1 := strconv.ParseUint(r[1], 8, 32)
		// Any id a tar header holds: the tree refuses one out of
		// tree.MaxID where a placement keeps it (see fileTree).
		uid, err2 := strconv.ParseInt(r[2], 10, strconv.IntSize)
		gid, err3 := strconv.ParseInt(r[3], 10, strconv.IntSize)
		if err := errors.Join(err1, err2, err3); err != nil || mode > 0o7777 {
			return nil, fmt.Errorf("archived modes and owners of %q: %q %q %q", r[0], r[1], r[2], r[3])
		}
		out[r[0]] = tree.DirMeta{Mode: tree.FromUnixMode(uint32(mode)), UID: int(uid), GID: int(gid)}
	}
	return out, nil
}

// impliedDirs lists the directories of t marked tree.Entry.Implied, one
// a line, as a cache entry keeps them ("" if none).
func impliedDirs(t *tree.Tree) string {
	var dirs []string
	for e := range t.All() {
		if e.Implied {
			dirs = append(dirs, e.Path)
		}
	}
	return strings.Join(dirs, "\n")
}

// maxEntryDigest and maxEntryRecord bound what of a cache entry is read
// into memory: digests of three trees, and an artifact's record.
const (
	maxEntryDigest = 4 << 10
	maxEntryRecord = 16 << 20
	// maxEntryImplied bounds the list of the directories an archive
	// only implied: paths of at most 4096 bytes, of no more directories
	// than the archive may hold entries (1,000,000 by default), would be
	// 4 GB; real archives imply a few.
	maxEntryImplied = 64 << 20
	// maxEntryArchived bounds the modes and owners kept of an archive's
	// entries, where they are not pallet's normalized ones: about 4 KiB
	// each for as many entries as an archive may hold would be 4 GB; a
	// Debian rootfs keeps a few hundred.
	maxEntryArchived = 64 << 20
	// maxEntryLinked bounds the hard-linked files kept, a path and a
	// group number each, as maxEntryArchived does their headers.
	maxEntryLinked = 64 << 20
)

// fromCache reads the cache entry at dir for r, refusing one whose files
// no longer match what was stored, or whose record does not carry r's
// pins: an entry is found by a key, and a key made elsewhere (a shared
// registry cache) is only a claim.
func (f *Fetcher) fromCache(dir string, r *Request) (*Result, error) {
	want, err := bounded.ReadRegular(filepath.Join(dir, "digest"), maxEntryDigest)
	if err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	got, t, lic, src, clic, err := f.entryDigest(dir, f.digest)
	if err != nil || got != string(want) {
		return nil, fmt.Errorf("cache entry %s is damaged (its files changed since it was stored)", dir)
	}
	res := &Result{Tree: t, Licenses: lic, Cached: true, InCache: true, ModuleSource: src, CLicenses: clic}
	switch k := r.Kind.(type) {
	case *Git:
		res.GoSource, res.GoSourceSelected = filepath.Join(dir, "modsrc", filepath.FromSlash(k.Go.Module)), true
	case *GoModule:
		res.GoSource, res.GoSourceSelected = filepath.Join(dir, "modsrc", filepath.FromSlash(k.build().Module)), true
	}
	data, err := bounded.ReadRegular(filepath.Join(dir, "record.json"), maxEntryRecord)
	if err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	if err := json.Unmarshal(data, &res.Record); err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	// A cgo build's result contains the build machine's C libraries,
	// which its key does not cover (they are known once built): one whose
	// packages dpkg no longer has at the versions it was made with is not
	// what a build now gives.
	if changed, err := f.Dpkg.Changed(res.Record.CLinked); err != nil {
		return nil, fmt.Errorf("cache entry %s: the C libraries it links: %w", dir, err)
	} else if len(changed) > 0 {
		return nil, fmt.Errorf("cache entry %s links C libraries of packages since changed (%s)", dir, strings.Join(changed, "; "))
	}
	pins := r.Kind.Origin()
	stored := res.Record.Origin
	if stored.SHA256 != pins.SHA256 || stored.Commit != pins.Commit || stored.Module != pins.Module {
		return nil, fmt.Errorf("cache entry %s was made from %s, not from what %s pins (%s)", dir, describePins(stored), r.Name, describePins(pins))
	}
	if err := f.checkDownloadPin(r, t, pins); err != nil {
		return nil, fmt.Errorf("cache entry %s: %w", dir, err)
	}
	// The tag is in the key, so the entry was checked against it; an
	// entry stored before records carried it gets it here.
	res.Record.Tag = pins.Tag
	return res, nil
}

func describePins(o Origin) string {
	var parts []string
	for _, p := range []struct{ k, v string }{{"sha256", o.SHA256}, {"commit", o.Commit}, {"module", o.Module}} {
		if p.v != "" {
			parts = append(parts, p.k+" "+p.v)
		}
	}
	if len(parts) == 0 {
		return "no pin"
	}
	return strings.Join(parts, ", ")
}

// checkDownloadPin proves a cached download placed as it is (not
// unpacked) against its pin: there the tree's one file is the download.
// An unpacked one cannot be proved without unpacking it again; its entry
// is trusted through its record and tree digest.
func (f *Fetcher) checkDownloadPin(r *Request, t *tree.Tree, pins Origin) error {
	u, ok := r.Kind.(*URL)
	if !ok || u.Extract != nil {
		return nil
	}
	for _, e := range t.Entries() {
		if e.Kind != tree.File {
			continue
		}
		sum, err := f.digest(e.Source, e.Stamp)
		if err != nil {
			return err
		}
		if sum != pins.SHA256 {
			return fmt.Errorf("%s has sha256 %s, not the pinned %s", e.Path, sum, pins.SHA256)
		}
	}
	return nil
}

// placedFile is a file materialize put into a cache entry: linked from
// src, or copied, with the sha256 of what was written, or of what this
// build wrote at src. Its place is dir and the tree's path, joined when
// asked for: a million joined paths were 130 MB.
type placedFile struct {
	src, dir, rel string
	linked        bool
	summed        bool
	sum           knownSum
}

func (p placedFile) dst() string { return filepath.Join(p.dir, filepath.FromSlash(p.rel)) }

// knownSum is a sha256, if ok.
type knownSum struct {
	sum [sha256.Size]byte
	ok  bool
}

// decodeSum puts the hex sha256 s in dst, and says whether it was one.
func decodeSum(dst *knownSum, s string) bool {
	if len(s) != hex.EncodedLen(sha256.Size) {
		return false
	}
	_, err := hex.Decode(dst.sum[:], []byte(s))
	return err == nil
}

// materialize writes t under dir, with the modes tree.FromDir reads back.
// Files pallet made under work are hard linked; any other file (the
// user's own) is copied, so that editing it in place cannot change the
// cache entry. known holds, in the order of t's files, the digests this
// build wrote them with (nil: none).
func materialize(t *tree.Tree, dir, work string, known []knownSum) ([]placedFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []placedFile
	k := 0
	for e := range t.All() {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		switch e.Kind {
		case tree.Dir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, err
			}
		case tree.Symlink:
			if err := os.Symlink(e.Link, p); err != nil {
				return nil, err
			}
		case tree.File:
			linked, sum, err := linkOrCopy(e.Source, p, e.Mode, within(e.Source, work))
			if err != nil {
				return nil, err
			}
			pf := placedFile{src: e.Source, dir: dir, rel: e.Path, linked: linked}
			switch {
			case sum != "":
				pf.summed = decodeSum(&pf.sum, sum)
			case k < len(known) && known[k].ok:
				pf.sum, pf.summed = known[k], true
			}
			k++
			files = append(files, pf)
		}
	}
	return files, nil
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// linkOrCopy links src at dst (linked), or copies it, hashing what it
// writes (sum).
func linkOrCopy(src, dst string, mode os.FileMode, mayLink bool) (linked bool, sum string, err error) {
	// A hard link shares the inode, and with it the mode: only link when
	// the source already has the mode the tree says.
	if info, err := os.Stat(src); mayLink && err == nil && info.Mode().Perm() == mode.Perm() {
		if os.Link(src, dst) == nil {
			return true, "", nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return false, "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
	if err != nil {
		return false, "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return false, "", err
	}
	return false, hex.EncodeToString(h.Sum(nil)), out.Close()
}
