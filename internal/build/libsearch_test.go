package build

import (
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/exe"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// musl's loader is its C library: the names it answers for are not
// looked for; the others are, in /lib, /usr/local/lib and /usr/lib, not
// in glibc's multiarch directories; and a base with its own search path
// file, whose content is not known here, gets no warning.
func TestMissingLibrariesMusl(t *testing.T) {
	n := loaderNeed{path: "/usr/bin/tool", Dynamic: exe.Dynamic{Interp: "/lib/ld-musl-x86_64.so.1", Needed: []string{"libc.musl-x86_64.so.1", "libz.so.1", "libssl.so.3"}}}
	v := &tree.View{Files: map[string]bool{"lib/ld-musl-x86_64.so.1": true, "usr/local/lib/libz.so.1": true, "usr/lib/x86_64-linux-gnu/libssl.so.3": true}}
	if got := newLibLookup(v, newLayerFiles(nil), "").missing(n, platform.Platform{OS: "linux", Arch: "amd64"}); !slices.Equal(got, []string{"libssl.so.3"}) {
		t.Errorf("missing %q, want libssl.so.3 only", got)
	}
	v.Files["etc/ld-musl-x86_64.path"] = true
	if got := newLibLookup(v, newLayerFiles(nil), "").missing(n, platform.Platform{OS: "linux", Arch: "amd64"}); got != nil {
		t.Errorf("with a search path file: missing %q, want nothing said", got)
	}
	// glibc's loader looks in the multiarch directory, and a layer's
	// link to a base file is the library.
	n.Interp, n.Needed = "/lib64/ld-linux-x86-64.so.2", []string{"libssl.so.3", "libz.so.1", "libfoo.so.1"}
	l := tree.New()
	if err := l.Add(tree.Entry{Path: "usr/lib/libfoo.so.1", Kind: tree.Symlink, Link: "/usr/local/lib/libz.so.1"}); err != nil {
		t.Fatal(err)
	}
	if got := newLibLookup(v, newLayerFiles([]*tree.Tree{l}), "").missing(n, platform.Platform{OS: "linux", Arch: "amd64"}); got != nil {
		t.Errorf("glibc: missing %q, want none", got)
	}
}

// The image's LD_LIBRARY_PATH is searched too: a library placed in a
// directory it names is found, by either loader.
func TestMissingLibrariesLibraryPath(t *testing.T) {
	v := &tree.View{Files: map[string]bool{"lib/ld-musl-x86_64.so.1": true, "usr/lib/x86_64-linux-gnu/libc.so.6": true, "opt/app/lib/libapp.so.1": true}}
	for _, interp := range []string{"/lib/ld-musl-x86_64.so.1", "/lib64/ld-linux-x86-64.so.2"} {
		n := loaderNeed{path: "/opt/app/bin/app", Dynamic: exe.Dynamic{Interp: interp, Needed: []string{"libapp.so.1"}}}
		lk := newLibLookup(v, newLayerFiles(nil), "")
		if got := lk.missing(n, platform.Platform{OS: "linux", Arch: "amd64"}); !slices.Equal(got, []string{"libapp.so.1"}) {
			t.Errorf("%s, no LD_LIBRARY_PATH: missing %q", interp, got)
		}
		lk.libraryPath = "/usr/local/nvidia/lib64:/opt/app/lib"
		if got := lk.missing(n, platform.Platform{OS: "linux", Arch: "amd64"}); got != nil {
			t.Errorf("%s, LD_LIBRARY_PATH=%s: missing %q, want none", interp, lk.libraryPath, got)
		}
	}
}
