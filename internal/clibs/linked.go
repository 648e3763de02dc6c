// Package clibs finds the C libraries a cgo build linked into its
// binaries, from the build's own inputs (go list, pkg-config, the C
// compiler's search path) and the binaries themselves (their ELF
// interpreter and DT_NEEDED), and the Debian packages that own them, with
// their copyright files: what a binary contains of them is shipped with
// it, and needs their licences as its Go modules do.
package clibs

import (
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/quoted"
)

// Build is a cgo build as it ran: where, with which environment, and what
// of the recipe decides what the linker was given.
type Build struct {
	// Dir is where the go command ran, Env its environment (CC, CGO_*,
	// PKG_CONFIG*, GOOS, GOARCH...).
	Dir string
	Env []string
	// Packages are the packages built, Tags their build tags, Flags the
	// recipe's other go build flags (-mod=vendor, -race...: go list takes
	// them as go build does), Ldflags the go linker flags (for
	// -extldflags).
	Packages []string
	Tags     []string
	Flags    []string
	Ldflags  []string
	// Command starts the tools asked (go, pkg-config, the C compiler)
	// as the build started its own (artifact.Command: stopped with the
	// build); exec.CommandContext when nil.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

// Binary is what one binary of the build links of C libraries.
type Binary struct {
	// Path is the binary's path in the artifact.
	Path string `json:"path"`
	// Static says the binary has no ELF interpreter and loads no shared
	// library: everything it links, the C library included, is inside
	// it.
	Static bool `json:"static,omitempty"`
	// Libraries are the libraries linked into the binary (static
	// archives), by their owning package; sorted by file.
	Libraries []Library `json:"libraries,omitempty"`
	// Needed are the shared libraries it loads at run time (DT_NEEDED):
	// the base image's to ship, not this binary's.
	Needed []string `json:"needed,omitempty"`
	// Shared are the shared objects (and linker scripts: libc.so) the
	// link was given, as named where the linker found them
	// (/usr/lib/x86_64-linux-gnu/libseccomp.so, of libseccomp-dev), by
	// their owning package: not in the binary, so not credited, but what
	// it was compiled and linked against (their -dev package's headers,
	// glibc's crt1.o), so a package of them changed since makes a result
	// stale as a changed archive's does; sorted by file.
	Shared []Library `json:"shared,omitempty"`
}

// Library is one library file linked into a binary.
type Library struct {
	// File is the file the linker took, on the build machine, links
	// followed (empty when it was not found where the linker looks;
	// relative to the module, slash-separated, when InModule); Flag is
	// how the build named it (-lseccomp).
	File string `json:"file"`
	Flag string `json:"flag,omitempty"`
	// InModule says File is in the source of the module built (an
	// archive its repository carries): under the module's licence, as
	// its C code is, and not looked up.
	InModule bool `json:"inModule,omitempty"`
	// Package is the Debian package that owns File, empty when none does.
	Package
	// SHA256 is File's digest when no package owns it (/usr/local/lib,
	// a PKG_CONFIG_PATH of the user's): no version then says that it
	// changed, its content does (Changed).
	SHA256 string `json:"sha256,omitempty"`
	// Copyright is the package's copyright file as shipped, by its path
	// under /LICENSES/<artifact>/ (debian/<package>/copyright); empty
	// when the package has none.
	Copyright string `json:"copyright,omitempty"`
	// Licenses are the SPDX identifiers its copyright file declares, when
	// it is machine-readable; set by the build, not found here.
	Licenses []string `json:"licenses,omitempty"`
}

// maxGoList bounds what go list says of a build's packages: a few KB a
// package, for thousands.
const maxGoList = 64 << 20

// listed is what go list -json says of a package, as far as linking C
// goes.
type listed struct {
	ImportPath   string
	Name         string
	DepOnly      bool
	CgoFiles     []string
	CgoLDFLAGS   []string
	CgoPkgConfig []string
	// Imports, not Deps: each package's Deps names all below it, which
	// for thousands of packages is hundreds of MB (Kubernetes), where
	// its imports are the graph itself, the closure made here.
	Imports []string
}

// Find says, for each binary of a cgo build (path in the artifact, and
// its file), what it links of C libraries. It lists the build's packages
// with the build's environment (go list -deps), and for those using cgo
// expands their #cgo pkg-config directives with pkg-config (--static for a
// static binary) and resolves each -lNAME as the linker would: in the -L
// directories named, then the C compiler's search path ($CC
// -print-file-name). A dynamic binary links a library's shared object
// where there is one, loaded at run time (DT_NEEDED) and not contained;
// a static one, or a library with no shared object, is linked from its
// archive, into the binary. The compiler driver links libgcc into every
// binary, and into a static one the C library and libgcc_eh too.
// binaries maps a binary's path in the artifact to its file; a binary
// no listed main package is named for is credited with every package's
// libraries. Nothing when no package of the build uses cgo.
func Find(ctx context.Context, b Build, binaries map[string]string) ([]Binary, error) {
	pkgs, err := goList(ctx, b)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*listed{}
	var cgo []*listed
	for i := range pkgs {
		byPath[pkgs[i].ImportPath] = &pkgs[i]
		if len(pkgs[i].CgoFiles) > 0 {
			cgo = append(cgo, &pkgs[i])
		}
	}
	if len(cgo) == 0 {
		return nil, nil
	}
	r := &resolver{b: b, ctx: ctx, printed: map[string]string{}}
	var out []Binary
	for _, p := range slices.Sorted(maps.Keys(binaries)) {
		bin, err := readELF(binaries[p])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if bin == nil {
			continue // not an ELF file: not for here
		}
		bin.Path = p
		uses := cgoOf(path.Base(p), pkgs, byPath, cgo)
		if len(uses) == 0 {
			continue
		}
		flags, err := r.linkFlags(uses, bin.Static)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		libs, shared, err := r.resolve(flags, bin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		bin.Libraries, bin.Shared = libs, shared
		out = append(out, *bin)
	}
	return out, nil
}

// cgoOf is the packages using cgo that the main package a binary is
// named for links; all of cgo when no main package listed has its name.
func cgoOf(name string, pkgs []listed, byPath map[string]*listed, cgo []*listed) []*listed {
	for i := range pkgs {
		m := &pkgs[i]
		if m.Name != "main" || m.DepOnly || binaryName(m.ImportPath) != name {
			continue
		}
		// The packages it links: itself, then those below it by path,
		// as go list orders a package's Deps.
		var out []*listed
		seen := map[string]bool{m.ImportPath: true}
		for queue := []*listed{m}; len(queue) > 0; queue = queue[1:] {
			p := queue[0]
			if len(p.CgoFiles) > 0 {
				out = append(out, p)
			}
			for _, d := range p.Imports {
				if q, ok := byPath[d]; ok && !seen[d] {
					seen[d] = true
					queue = append(queue, q)
				}
			}
		}
		if len(out) > 1 {
			rest := out[1:]
			if out[0] != m {
				rest = out
			}
			slices.SortFunc(rest, func(a, b *listed) int { return strings.Compare(a.ImportPath, b.ImportPath) })
		}
		return out
	}
	return cgo
}

// binaryName is the name go build gives a main package's binary: its
// last path element, or the one before a major version (cmd/x/v2 is x).
func binaryName(importPath string) string {
	base := path.Base(importPath)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		if d := path.Dir(importPath); d != "." {
			return path.Base(d)
		}
	}
	return base
}

// goList runs go list -deps -json on the build's packages, as the build
// saw them.
func goList(ctx context.Context, b Build) ([]listed, error) {
	args := []string{"list", "-deps", "-json=ImportPath,Name,DepOnly,CgoFiles,CgoLDFLAGS,CgoPkgConfig,Imports"}
	if len(b.Tags) > 0 {
		args = append(args, "-tags="+strings.Join(b.Tags, ","))
	}
	args = append(args, b.Flags...)
	out, err := b.run(ctx, "go", append(args, b.Packages...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// run runs a command of the build and gives its output, bounded; its
// error says what it wrote to stderr.
func (b Build) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	command := b.Command
	if command == nil {
		command = exec.CommandContext
	}
	cmd := command(ctx, name, args...)
	cmd.Dir, cmd.Env = b.Dir, b.Env
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	stdout, stderr := &bounded.Output{Max: maxGoList}, &bounded.Output{Max: 32 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := bounded.Answered(cmd, cmd.Run()); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if stdout.Over() {
		return nil, fmt.Errorf("%s %s: over %d bytes of output", name, strings.Join(args, " "), maxGoList)
	}
	return stdout.Bytes(), nil
}

// readELF reads what the binary at file says of how it was linked: a
// static one has no interpreter; a dynamic one names the shared
// libraries it needs. nil for a file that is not ELF.
func readELF(file string) (*Binary, error) {
	f, err := elf.Open(file)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	interp := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp = true
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil && interp {
		return nil, fmt.Errorf("reading its DT_NEEDED: %w", err)
	}
	slices.Sort(needed)
	// Static: no interpreter and nothing to load. A shared object
	// (-buildmode=c-shared) has no interpreter either, but loads the C
	// library as a dynamic executable does.
	return &Binary{Static: !interp && len(needed) == 0, Needed: needed}, nil
}

// resolver resolves a build's link flags to files, asking the C compiler
// once per name.
type resolver struct {
	ctx     context.Context
	b       Build
	printed map[string]string // file name -> what $CC -print-file-name said
}

// getenv is the last value of key in the build's environment.
func (r *resolver) getenv(key string) string {
	v := ""
	for _, kv := range r.b.Env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// linkFlags are the flags the link was given of C libraries for the
// packages uses: their #cgo LDFLAGS, their pkg-config libraries, the
// build's CGO_LDFLAGS and -extldflags, and what the compiler driver adds
// (libgcc; for a static binary the C library and libgcc_eh).
func (r *resolver) linkFlags(uses []*listed, static bool) ([]string, error) {
	var flags []string
	var pc []string
	for _, p := range uses {
		flags = append(flags, p.CgoLDFLAGS...)
		for _, n := range p.CgoPkgConfig {
			if !slices.Contains(pc, n) {
				pc = append(pc, n)
			}
		}
	}
	if len(pc) > 0 {
		args := []string{"--libs"}
		if static {
			args = append(args, "--static")
		}
		// As cgo runs it: "--" ends the options, so that a name cannot be one.
		tool := cmp.Or(r.getenv("PKG_CONFIG"), "pkg-config")
		out, err := r.b.run(r.ctx, tool, append(append(args, "--"), pc...)...)
		if err != nil {
			return nil, err
		}
		flags = append(flags, strings.Fields(string(out))...)
	}
	flags = append(flags, strings.Fields(r.getenv("CGO_LDFLAGS"))...)
	ext, err := extldflags(r.b.Ldflags)
	if err != nil {
		return nil, err
	}
	flags = append(flags, ext...)
	if static {
		flags = append(flags, "-lc", "-lgcc", "-lgcc_eh")
	} else {
		flags = append(flags, "-lc", "-lgcc")
	}
	return flags, nil
}

// extldflags are the words of the value of -extldflags in the go linker
// flags, which go passes to the C linker, each split as go and its
// linker split them.
func extldflags(ldflags []string) ([]string, error) {
	words, err := quoted.Split(strings.Join(ldflags, " "))
	if err != nil {
		return nil, fmt.Errorf("ldflags: %w", err)
	}
	var out []string
	for i := 0; i < len(words); i++ {
		name, v, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(words[i], "-"), "-"), "=")
		if name != "extldflags" {
			continue
		}
		if !hasValue {
			if i+1 == len(words) {
				continue
			}
			i++
			v = words[i]
		}
		ws, err := quoted.Split(v)
		if err != nil {
			return nil, fmt.Errorf("-extldflags: %w", err)
		}
		out = append(out, ws...)
	}
	return out, nil
}

// resolve turns link flags into the library files a binary contains:
// each -lNAME (and -l:FILE, and a library named by path) found as the
// linker finds it. In a dynamic binary a library with a shared object
// is loaded at run time, not contained: it is among shared instead. In
// a static one every library is its archive. Each file once, sorted.
func (r *resolver) resolve(flags []string, bin *Binary) (libs, shared []Library, err error) {
	var dirs []string
	for _, f := range flags {
		if d, ok := strings.CutPrefix(f, "-L"); ok && d != "" {
			dirs = append(dirs, d)
		}
	}
	seen, seenShared := map[string]bool{}, map[string]bool{}
	var out []Library
	add := func(flag, file string) error {
		real, err := filepath.EvalSymlinks(file)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if !seen[real] {
			seen[real] = true
			out = append(out, Library{File: real, Flag: flag})
		}
		return nil
	}
	for _, f := range flags {
		var names []string // candidate file names, in the linker's order
		switch {
		case strings.HasPrefix(f, "-l:"):
			names = []string{f[len("-l:"):]}
		case strings.HasPrefix(f, "-l") && len(f) > 2:
			n := f[2:]
			if bin.Static {
				names = []string{"lib" + n + ".a"}
			} else {
				names = []string{"lib" + n + ".so", "lib" + n + ".a"}
			}
		case filepath.IsAbs(f) && (strings.HasSuffix(f, ".a") || strings.Contains(path.Base(f), ".so")):
			if strings.HasSuffix(f, ".a") {
				if err := add(f, f); err != nil {
					return nil, nil, err
				}
			}
			continue
		default:
			continue
		}
		file, err := r.find(names, dirs)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		if file == "" {
			// The link succeeded, so the linker found it where this does
			// not look (a linker script's directory, -Wl options): kept
			// by its flag alone, a library whose licence is not known.
			if !seen[f] {
				seen[f] = true
				out = append(out, Library{Flag: f})
			}
			continue
		}
		if !strings.HasSuffix(file, ".a") {
			// A shared object or a linker script: loaded at run time.
			// Named as found, its directory's links followed but not
			// its own: libseccomp.so is libseccomp-dev's, the library
			// it leads to libseccomp2's.
			dir, err := filepath.EvalSymlinks(filepath.Dir(file))
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			if so := filepath.Join(dir, filepath.Base(file)); !seenShared[so] {
				seenShared[so] = true
				shared = append(shared, Library{File: so, Flag: f})
			}
			continue
		}
		if emptyArchive(file) {
			continue // glibc's libpthread.a since 2.34: nothing to link
		}
		if err := add(f, file); err != nil {
			return nil, nil, err
		}
	}
	byFile := func(a, b Library) int { return strings.Compare(a.File+"\x00"+a.Flag, b.File+"\x00"+b.Flag) }
	slices.SortFunc(out, byFile)
	slices.SortFunc(shared, byFile)
	return out, shared, nil
}

// find is the first of names in dirs, else in the C compiler's search
// path, as the linker looks: each directory for every name before the
// next directory.
func (r *resolver) find(names, dirs []string) (string, error) {
	for _, d := range dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	for _, n := range names {
		p, err := r.printFileName(n)
		if err != nil {
			return "", err
		}
		if p != "" {
			return p, nil
		}
	}
	return "", nil
}

// printFileName is where the C compiler finds the file n, or "" when it
// does not ($CC -print-file-name=n says n back).
func (r *resolver) printFileName(n string) (string, error) {
	if p, ok := r.printed[n]; ok {
		return p, nil
	}
	cc := strings.Fields(cmp.Or(r.getenv("CC"), "gcc"))
	if len(cc) == 0 {
		return "", errors.New("no C compiler")
	}
	out, err := r.b.run(r.ctx, cc[0], append(cc[1:], "-print-file-name="+n)...)
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(string(out))
	if !filepath.IsAbs(p) {
		p = ""
	} else if _, err := os.Stat(p); err != nil {
		p = ""
	}
	r.printed[n] = p
	return p, nil
}

// emptyArchive says whether the archive at file holds no member (its
// magic alone): the linker takes nothing from it.
func emptyArchive(file string) bool {
	st, err := os.Stat(file)
	return err == nil && st.Size() <= int64(len("!<arch>\n"))
}
