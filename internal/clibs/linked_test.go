package clibs

import (
	"context"
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
		if got := extldflags(c.ldflags); !reflect.DeepEqual(got, c.want) {
			t.Errorf("extldflags(%q) = %q, want %q", c.ldflags, got, c.want)
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
	write(second, "libdyn.so", "\x7fELF")
	dynA := write(second, "libdyn.a", "!<arch>\nmember")
	write(first, "libempty.a", "!<arch>\n")
	named := write(second, "named.a", "!<arch>\nmember")
	exact := write(second, "libexact.a", "!<arch>\nmember")
	// echo says the name back: the compiler's search path has nothing.
	r := &resolver{ctx: context.Background(), b: Build{Env: []string{"CC=echo"}}, printed: map[string]string{}}
	flags := []string{"-L" + first, "-L" + second, "-lfoo", "-ldyn", "-lempty", "-lmissing", named, "-l:libexact.a"}
	lib := func(flag, file string) Library { return Library{Flag: flag, File: file} }
	got, err := r.resolve(flags, &Binary{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Library{lib("-lmissing", ""), lib("-lfoo", foo), lib("-l:libexact.a", exact), lib(named, named)}
	slices.SortFunc(want, func(a, b Library) int { return strings.Compare(a.File+"\x00"+a.Flag, b.File+"\x00"+b.Flag) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dynamic:\n got %+v\nwant %+v", got, want)
	}
	got, err = r.resolve(flags, &Binary{Static: true})
	if err != nil {
		t.Fatal(err)
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
