package clibs

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtureRoot writes a dpkg database and documentation tree as Debian
// lays them out: a Multi-Arch: same -dev package listed as name:arch, a
// cross package of arch all, a -dev package whose doc directory is a link
// to its library's, and a file no package owns.
func fixtureRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("var/lib/dpkg/info/libseccomp-dev:amd64.list", "/.\n/usr\n/usr/lib/x86_64-linux-gnu/libseccomp.a\n/usr/lib/x86_64-linux-gnu/libseccomp.so\n")
	write("var/lib/dpkg/info/libseccomp-dev:arm64.list", "/.\n/usr/lib/aarch64-linux-gnu/libseccomp.a\n")
	write("var/lib/dpkg/info/libc6-dev-arm64-cross.list", "/.\n/usr/aarch64-linux-gnu/lib/libc.a\n")
	// Listed under /lib on a merged-/usr system: found by its /usr path.
	write("var/lib/dpkg/info/libfoo1:amd64.list", "/lib/x86_64-linux-gnu/libfoo.a\n")
	write("var/lib/dpkg/status", `Package: libseccomp-dev
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Source: libseccomp
Version: 2.5.4-1+deb12u1
Description: high level interface
 to Linux seccomp filter

Package: libseccomp-dev
Status: install ok installed
Architecture: arm64
Multi-Arch: same
Source: libseccomp
Version: 2.5.4-1+deb12u1

Package: libc6-dev-arm64-cross
Status: install ok installed
Architecture: all
Source: cross-toolchain-base (66)
Version: 2.36-8cross1

Package: libfoo1
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 1.0-1

Package: removed
Status: deinstall ok config-files
Architecture: amd64
Version: 0.1
`)
	write("etc/os-release", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n")
	write("usr/share/doc/libseccomp2/copyright", "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: LGPL-2.1\n")
	if err := os.Symlink("libseccomp2", filepath.Join(root, "usr/share/doc/libseccomp-dev")); err != nil {
		t.Fatal(err)
	}
	write("outside/copyright", "not Debian's")
	if err := os.Symlink("../../../outside", filepath.Join(root, "usr/share/doc/escapes")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestOwners(t *testing.T) {
	d := Dpkg{Root: fixtureRoot(t)}
	got, err := d.Owners([]string{
		"/usr/lib/x86_64-linux-gnu/libseccomp.a",
		"/usr/lib/aarch64-linux-gnu/libseccomp.a",
		"/usr/aarch64-linux-gnu/lib/libc.a",
		"/usr/lib/x86_64-linux-gnu/libfoo.a",
		"/usr/local/lib/libbar.a",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Package{
		"/usr/lib/x86_64-linux-gnu/libseccomp.a":  {Name: "libseccomp-dev", Arch: "amd64", Version: "2.5.4-1+deb12u1", Source: "libseccomp", OS: "debian", Distro: "debian-12"},
		"/usr/lib/aarch64-linux-gnu/libseccomp.a": {Name: "libseccomp-dev", Arch: "arm64", Version: "2.5.4-1+deb12u1", Source: "libseccomp", OS: "debian", Distro: "debian-12"},
		"/usr/aarch64-linux-gnu/lib/libc.a":       {Name: "libc6-dev-arm64-cross", Arch: "all", Version: "2.36-8cross1", Source: "cross-toolchain-base", SourceVersion: "66", OS: "debian", Distro: "debian-12"},
		"/usr/lib/x86_64-linux-gnu/libfoo.a":      {Name: "libfoo1", Arch: "amd64", Version: "1.0-1", OS: "debian", Distro: "debian-12"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Owners:\n got %v\nwant %v", got, want)
	}
}

func TestCopyright(t *testing.T) {
	d := Dpkg{Root: fixtureRoot(t)}
	// A -dev package's doc directory links to its library's.
	text, err := d.Copyright("libseccomp-dev")
	if err != nil || len(text) == 0 {
		t.Fatalf("libseccomp-dev: %q, %v", text, err)
	}
	if text, err := d.Copyright("libnone"); err != nil || text != nil {
		t.Errorf("a package without a copyright file: %q, %v", text, err)
	}
	if _, err := d.Copyright("escapes"); err == nil {
		t.Error("a doc directory linking out of usr/share/doc was followed")
	}
	if _, err := d.Copyright("../x"); err == nil {
		t.Error("a package name with a slash was taken")
	}
}

func TestChanged(t *testing.T) {
	d := Dpkg{Root: fixtureRoot(t)}
	lib := func(name, arch, version string) Library {
		return Library{File: "/x/" + name + ".a", Package: Package{Name: name, Arch: arch, Version: version}}
	}
	got, err := d.Changed([]Binary{{Path: "a", Libraries: []Library{
		lib("libseccomp-dev", "amd64", "2.5.4-1+deb12u1"),
		lib("libseccomp-dev", "arm64", "2.5.3-1"),
		lib("libc6-dev-arm64-cross", "all", "2.36-8cross1"),
		lib("removed", "amd64", "0.1"),
		{File: "/usr/local/lib/libbar.a"},
	}}, {Path: "dynamic", Shared: []Library{
		// A dynamic binary was compiled against libfoo1's headers, now
		// another version: as stale as one containing its archive.
		lib("libfoo1", "amd64", "0.9-1"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"libfoo1:amd64 0.9-1, now 1.0-1", "libseccomp-dev:arm64 2.5.3-1, now 2.5.4-1+deb12u1", "removed:amd64 0.1, now not installed"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Changed: %q, want %q", got, want)
	}
}

// A library no package owns has no version to compare: its digest, taken
// when it was linked, is; one that changed since, or is gone, makes the
// result stale. One recorded without a digest (or from the module) is
// not checked.
func TestChangedUnowned(t *testing.T) {
	dir := t.TempDir()
	same, edited, gone := filepath.Join(dir, "libsame.a"), filepath.Join(dir, "libedited.a"), filepath.Join(dir, "libgone.a")
	for _, f := range []string{same, edited, gone} {
		if err := os.WriteFile(f, []byte("!<arch>\n"+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	digest := map[string]string{}
	for _, f := range []string{same, edited, gone} {
		d, err := FileDigest(f)
		if err != nil {
			t.Fatal(err)
		}
		digest[f] = d
	}
	if err := os.WriteFile(edited, []byte("!<arch>\npatched"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	got, err := Dpkg{Root: fixtureRoot(t)}.Changed([]Binary{{Path: "a", Libraries: []Library{
		{File: same, SHA256: digest[same]},
		{File: edited, SHA256: digest[edited]},
		{File: filepath.Join(dir, "libold.a")}, // recorded before digests were
	}}, {Path: "b", Shared: []Library{{File: gone, SHA256: digest[gone]}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != edited+", owned by no package, changed since" || !strings.HasPrefix(got[1], gone+", owned by no package: ") {
		t.Errorf("Changed: %q, want %s changed and %s gone", got, edited, gone)
	}
}

// Boost's copyright files list every file's authors: 2 MB, shipped as
// any other (libboost-filesystem1.74-dev's is 2,050,085 bytes).
func TestCopyrightOfBoostSize(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "usr/share/doc/libboost-filesystem1.74-dev")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("Files: libs/filesystem/src/x.cpp\n"), 2050085/34+1)
	if err := os.WriteFile(filepath.Join(dir, "copyright"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Dpkg{Root: root}.Copyright("libboost-filesystem1.74-dev")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("a 2 MB copyright file: %d bytes, %v", len(got), err)
	}
}

// Once every file is owned, the lists after are not read, however many
// binaries link one file (a static libc.a in each).
func TestOwnersStopsOnceAllOwned(t *testing.T) {
	root := fixtureRoot(t)
	// Unreadable as a list: read, it would fail Owners.
	if err := os.Mkdir(filepath.Join(root, "var/lib/dpkg/info/zz.list"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := "/usr/lib/x86_64-linux-gnu/libseccomp.a"
	got, err := Dpkg{Root: root}.Owners([]string{f, f})
	if err != nil || got[f].Name != "libseccomp-dev" {
		t.Errorf("Owners: %v, %v", got, err)
	}
}
