package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/exe"
)

// A dynamically linked executable on scratch cannot start: the build
// says so, at the base's line as on any other base, unless a layer of
// the image provides its loader.
func TestDynamicExecutableOnScratchWarns(t *testing.T) {
	dir := t.TempDir()
	loader := hostTrue(t, filepath.Join(dir, "bin", "true"))
	writeFile(t, filepath.Join(dir, "loader"), "stand-in")
	recipe := filepath.Join(dir, "pallet.yaml")
	body := `version: 1
artifacts:
  tool:
    local: {path: ./bin/true}
    licenses: none
  loader:
    local: {path: ./loader}
    licenses: none
images:
  img:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /usr/bin/true}
`
	writeFile(t, recipe, body)
	out, err := pallet(t, "build", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	want := recipe + ":11:5: image img (linux/amd64): /usr/bin/true is dynamically linked and needs " + loader + ", which nothing in the image provides on scratch"
	if !strings.Contains(out, want) {
		t.Errorf("no warning %q in:\n%s", want, out)
	}
	// At its path, or (merged /usr: lib64 -> usr/lib64) elsewhere under
	// its name.
	for _, dest := range []string{loader, "/usr/lib64/" + filepath.Base(loader)} {
		writeFile(t, recipe, body+"      - {artifact: loader, dest: "+dest+"}\n")
		out, err = pallet(t, "build", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "dynamically linked") {
			t.Errorf("warned although the image holds %s:\n%s", dest, out)
		}
	}
}

// On a base, the loader is looked for in the base too, through its
// links (a merged-/usr Debian's lib64 -> usr/lib64, and the loader a
// link to the file): a base without it (another C library's, or none)
// gets the warning, at the base's line.
func TestDynamicExecutableOnBaseWithoutLoaderWarns(t *testing.T) {
	dir := t.TempDir()
	loader := hostTrue(t, filepath.Join(dir, "bin", "true"))
	// Two bases: one with the loader, as Debian holds it, one with
	// another C library's.
	glibc, musl := filepath.Join(dir, "glibc"), filepath.Join(dir, "musl")
	libdir := strings.TrimPrefix(filepath.Dir(loader), "/")
	writeFile(t, filepath.Join(glibc, "root", "usr", "lib", "x86_64-linux-gnu", "ld-real.so"), "loader")
	if err := os.MkdirAll(filepath.Join(glibc, "root", "usr", libdir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/"+libdir, filepath.Join(glibc, "root", libdir)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib/x86_64-linux-gnu/ld-real.so", filepath.Join(glibc, "root", "usr", libdir, filepath.Base(loader))); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(musl, "root", "lib", "ld-musl-x86_64.so.1"), "loader")
	for _, b := range []string{glibc, musl} {
		dfBase(t, b)
	}
	recipe := filepath.Join(dir, "pallet.yaml")
	for _, tc := range []struct {
		base string
		warn bool
	}{{glibc, false}, {musl, true}} {
		writeFile(t, recipe, `version: 1
artifacts:
  tool:
    local: {path: ./bin/true}
    licenses: none
images:
  img:
    base: oci:`+filepath.Join(tc.base, "base")+`
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /usr/bin/true}
`)
		out, err := pallet(t, "build", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		want := "pallet.yaml:8:5: image img (linux/amd64): /usr/bin/true is dynamically linked and needs " + loader + ", which neither the base"
		if got := strings.Contains(out, want); got != tc.warn {
			t.Errorf("base %s: warned %v, want %v:\n%s", filepath.Base(tc.base), got, tc.warn, out)
		}
	}
}

// hostTrue copies this machine's /bin/true, a dynamically linked
// linux/amd64 executable, to dst and gives its loader; it skips the test
// where there is none.
func hostTrue(t *testing.T, dst string) (loader string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("places this machine's /bin/true in a linux/amd64 image")
	}
	real, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	d, err := exe.CheckDynamic(real, real, "linux", "amd64")
	loader = d.Interp
	if err != nil || loader == "" {
		t.Skipf("/bin/true is not dynamically linked here (%v)", err)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dst, string(data))
	return loader
}

// A dynamically linked executable whose loader the base holds still
// needs its shared libraries (DT_NEEDED) where the loader looks: a base
// without one gets a warning naming it, at the base's line; one that
// holds it through a chain of links (merged /usr, soname -> file) none;
// and a run path with $ORIGIN is searched from the executable's place.
func TestMissingSharedLibraryWarns(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("links a linux/amd64 executable with this machine's C compiler")
	}
	cc := needTool(t, "cc")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "foo.c"), "int foo(void) { return 0; }\n")
	writeFile(t, filepath.Join(dir, "main.c"), "int foo(void);\nint main(void) { return foo(); }\n")
	build := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v: %v: %s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libfoo.so.1.2.3")
	build("-shared", "-fPIC", "-Wl,-soname,libfoo.so.1", "-o", lib, filepath.Join(dir, "foo.c"))
	build("-o", filepath.Join(dir, "bin", "tool"), filepath.Join(dir, "main.c"), lib)
	build("-o", filepath.Join(dir, "bin", "tool-origin"), filepath.Join(dir, "main.c"), lib, "-Wl,-rpath,$ORIGIN/../lib", "-Wl,--enable-new-dtags")
	d, err := exe.CheckDynamic(filepath.Join(dir, "bin", "tool"), "tool", "linux", "amd64")
	loader := d.Interp
	if err != nil || loader == "" {
		t.Fatalf("tool: loader %q, %v", loader, err)
	}
	// A merged-/usr glibc base: the loader, and libc where Debian keeps it.
	base := func(name string, extra func(root string)) string {
		b := filepath.Join(dir, name)
		root := filepath.Join(b, "root")
		writeFile(t, filepath.Join(root, "usr", strings.TrimPrefix(loader, "/")), "loader")
		writeFile(t, filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", "libc.so.6"), "libc")
		for _, l := range []string{"lib", "lib64"} {
			if err := os.MkdirAll(filepath.Join(root, "usr", l), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
				t.Fatal(err)
			}
		}
		if extra != nil {
			extra(root)
		}
		dfBase(t, b)
		return filepath.Join(b, "base")
	}
	symlink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	without := base("without", nil)
	// /lib/x86_64-linux-gnu/libfoo.so.1 -> libfoo.so.1.2 -> libfoo.so.1.2.3,
	// through lib -> usr/lib.
	with := base("with", func(root string) {
		d := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
		writeFile(t, filepath.Join(d, "libfoo.so.1.2.3"), "libfoo")
		symlink("libfoo.so.1.2.3", filepath.Join(d, "libfoo.so.1.2"))
		symlink("/lib/x86_64-linux-gnu/libfoo.so.1.2", filepath.Join(d, "libfoo.so.1"))
	})
	// Beside the executable only, where $ORIGIN/../lib leads.
	beside := base("beside", func(root string) {
		writeFile(t, filepath.Join(root, "opt", "app", "lib", "libfoo.so.1"), "libfoo")
	})
	// A link to nowhere is no library.
	dangling := base("dangling", func(root string) {
		symlink("libfoo.so.1.2.3", filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", "libfoo.so.1"))
	})
	recipe := filepath.Join(dir, "pallet.yaml")
	for _, tc := range []struct {
		base, bin string
		warn      bool
		env       string
	}{
		{without, "tool", true, ""},
		{with, "tool", false, ""},
		{dangling, "tool", true, ""},
		{beside, "tool", true, ""},
		{beside, "tool-origin", false, ""},
		{without, "tool-origin", true, ""},
		// The image's LD_LIBRARY_PATH is looked in too.
		{beside, "tool", false, "LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/opt/app/lib"},
		{without, "tool", true, "LD_LIBRARY_PATH=/opt/app/lib"},
	} {
		config := ""
		if tc.env != "" {
			config = "    config: {env: [\"" + tc.env + "\"]}\n"
		}
		writeFile(t, recipe, `version: 1
artifacts:
  tool:
    local: {path: ./bin/`+tc.bin+`}
    licenses: none
images:
  img:
    base: oci:`+tc.base+`
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /opt/app/bin/tool}
`+config)
		out, err := pallet(t, "build", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		want := "pallet.yaml:8:5: image img (linux/amd64): /opt/app/bin/tool needs the shared library libfoo.so.1, which neither the base oci:" + tc.base + " nor the image's layers hold"
		if got := strings.Contains(out, want); got != tc.warn {
			t.Errorf("%s on %s (%s): warned %v, want %v:\n%s", tc.bin, filepath.Base(filepath.Dir(tc.base)), tc.env, got, tc.warn, out)
		}
		// One message per executable, and none for libc, which all the
		// bases hold.
		if n := strings.Count(out, "/opt/app/bin/tool"); n > 1 || strings.Contains(out, "libc.so.6") {
			t.Errorf("%s on %s: more than the one message:\n%s", tc.bin, filepath.Base(filepath.Dir(tc.base)), out)
		}
	}
}
