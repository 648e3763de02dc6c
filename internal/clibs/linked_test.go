package clibs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestExtldflags(t *testing.T) {
	for _, c := range []struct {
		ldflags []string
		want    []string
	}{
		{[]string{"-s", "-w", "-extldflags", "-static"}, []string{"-static"}},
		{[]string{"-extldflags '-static -L/opt/x -lfoo'"}, []string{"-static", "-L/opt/x", "-lfoo"}},
		{[]string{`-extldflags="-static"`}, []string{"-static"}},
		{[]string{"-X main.v=1"}, nil},
	} {
		if got, err := extldflags(c.ldflags); err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("extldflags(%q) = %q, %v; want %q", c.ldflags, got, err, c.want)
		}
	}
}

func TestBinaryName(t *testing.T) {
	for in, want := range map[string]string{"github.com/opencontainers/runc": "runc", "example.com/cmd/x/v2": "x", "example.com/v2": "example.com", "x": "x"} {
		if got := binaryName(in); got != want {
			t.Errorf("binaryName(%s) = %s, want %s", in, got, want)
		}
	}
}

// Link flags resolve as the linker finds them: -L directories first, in
// order, then the compiler's search path; in a dynamic binary a shared
// object is preferred and not contained; an archive without a member is
// not; a name found nowhere is kept by its flag.
func TestResolve(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	foo := write(first, "libfoo.a", "!<arch>\nmember")
	write(second, "libfoo.a", "!<arch>\nother")
	// The -dev package's link to its library's shared object: named as
	// the linker found it, the package whose headers built the binary.
	write(second, "libdyn.so.1", "\x7fELF")
	if err := os.Symlink("libdyn.so.1", filepath.Join(second, "libdyn.so")); err != nil {
		t.Fatal(err)
	}
	dynA := write(second, "libdyn.a", "!<arch>\nmember")
	write(first, "libempty.a", "!<arch>\n")
	named := write(second, "named.a", "!<arch>\nmember")
	exact := write(second, "libexact.a", "!<arch>\nmember")
	// echo says the name back: the compiler's search path has nothing.
	r := &resolver{ctx: context.Background(), b: Build{Env: []string{"CC=echo"}}, printed: map[string]string{}}
	flags := []string{"-L" + first, "-L" + second, "-lfoo", "-ldyn", "-lempty", "-lmissing", named, "-l:libexact.a"}
	lib := func(flag, file string) Library { return Library{Flag: flag, File: file} }
	got, shared, err := r.resolve(flags, &Binary{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Library{lib("-lmissing", ""), lib("-lfoo", foo), lib("-l:libexact.a", exact), lib(named, named)}
	slices.SortFunc(want, func(a, b Library) int { return strings.Compare(a.File+"\x00"+a.Flag, b.File+"\x00"+b.Flag) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dynamic:\n got %+v\nwant %+v", got, want)
	}
	realSecond, err := filepath.EvalSymlinks(second)
	if err != nil {
		t.Fatal(err)
	}
	if w := []Library{lib("-ldyn", filepath.Join(realSecond, "libdyn.so"))}; !reflect.DeepEqual(shared, w) {
		t.Errorf("dynamic, shared:\n got %+v\nwant %+v", shared, w)
	}
	got, shared, err = r.resolve(flags, &Binary{Static: true})
	if err != nil {
		t.Fatal(err)
	}
	if shared != nil {
		t.Errorf("static: shared objects %+v", shared)
	}
	want = append(want, lib("-ldyn", dynA))
	slices.SortFunc(want, func(a, b Library) int { return strings.Compare(a.File+"\x00"+a.Flag, b.File+"\x00"+b.Flag) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("static:\n got %+v\nwant %+v", got, want)
	}
}

// A shared object (go build -buildmode=c-shared: a Fluent Bit output
// plugin) has no ELF interpreter but loads the C library: it is not
// static, and contains none of libc.a. A static binary needs nothing.
func TestReadELFSharedObjectIsNotStatic(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed; skipping")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint f(void) { return puts(\"x\"); }\nint main(void) { return f(); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so, static := filepath.Join(dir, "lib.so"), filepath.Join(dir, "static")
	for _, args := range [][]string{{"-shared", "-fPIC", "-o", so, src}, {"-static", "-o", static, src}} {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Skipf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	b, err := readELF(so)
	if err != nil || b.Static || !slices.Contains(b.Needed, "libc.so.6") {
		t.Errorf("a shared object: %+v, %v", b, err)
	}
	if b, err := readELF(static); err != nil || !b.Static || len(b.Needed) > 0 {
		t.Errorf("a static binary: %+v, %v", b, err)
	}
}

// go list is asked for each package's imports, not its Deps: a chain of
// 2200 packages made 167 MB of Deps (each names all below it), past the
// bound on go list's output, where Kubernetes-sized builds are. The
// packages a binary links are its imports' closure.
func TestGoListLinear(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2200
	pad := strings.Repeat("x", 40)
	name := func(i int) string { return fmt.Sprintf("p%04d%s", i, pad) }
	write("go.mod", "module example.com/chain\n\ngo 1.22\n")
	write("cmd/tool/main.go", "package main\n\nimport _ \"example.com/chain/"+name(0)+"\"\n\nfunc main() {}\n")
	for i := range n {
		imp := ""
		if i+1 < n {
			imp = "import _ \"example.com/chain/" + name(i+1) + "\"\n"
		}
		if i == n-1 {
			// The last links a C library, as cgo would have it.
			write(name(i)+"/c.go", "package p\n\n// #cgo LDFLAGS: -lchain\nimport \"C\"\n")
			continue
		}
		write(name(i)+"/a.go", "package p\n\n"+imp)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=1")
	pkgs, err := goList(context.Background(), Build{Dir: dir, Env: env, Packages: []string{"./cmd/tool"}})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*listed{}
	var cgo []*listed
	for i := range pkgs {
		byPath[pkgs[i].ImportPath] = &pkgs[i]
		if len(pkgs[i].CgoFiles) > 0 {
			cgo = append(cgo, &pkgs[i])
		}
	}
	uses := cgoOf("tool", pkgs, byPath, cgo)
	if !slices.ContainsFunc(uses, func(p *listed) bool { return p.ImportPath == "example.com/chain/"+name(n-1) }) {
		t.Errorf("tool links %d packages using cgo, not the last of the chain", len(uses))
	}
}
