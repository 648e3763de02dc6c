package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/exe"
)

// A dynamically linked executable on scratch cannot start: the build
// says so, unless a layer of the image provides its loader.
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
	want := "/usr/bin/true is dynamically linked and needs " + loader + ", which nothing in the image provides on scratch"
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
	loader, err = exe.CheckLoader(real, real, "linux", "amd64")
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
