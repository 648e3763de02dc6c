package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A hard link include keeps whose target it leaves out is made with the
// target's content, read in a second pass over the archive; the target,
// and the directories made for it alone, are not left in the tree.
func TestHardLinkToExcludedTarget(t *testing.T) {
	for _, f := range []Format{Tar, TarGzip, TarXz, TarZstd, TarBzip2} {
		t.Run(string(f), func(t *testing.T) {
			s := newSandbox(t, f, build(t, f, []ent{
				{name: "top/", typ: tar.TypeDir},
				{name: "top/bin/git", body: "git", mode: 0o755},
				{name: "top/libexec/git-core/git-add", typ: tar.TypeLink, link: "top/bin/git"},
				{name: "top/libexec/git-core/git-commit", typ: tar.TypeLink, link: "top/bin/git"},
			}))
			if err := Extract(context.Background(), s.src, f, s.out, Options{Strip: 1, Include: []string{"libexec"}}); err != nil {
				t.Fatal(err)
			}
			diffTrees(t, snapshot(t, s.out), map[string]string{
				"libexec":                     "dir 755",
				"libexec/git-core":            "dir 755",
				"libexec/git-core/git-add":    "file 755 git",
				"libexec/git-core/git-commit": "file 755 git",
			})
			s.checkContained(t)
		})
	}
}

// The non-licence case of a release tar: include: [bin], where bin/a
// is a hard link to libexec/sub/a. The second pass writes libexec/sub/a
// for the link and removes it, and libexec with it, but a directory that
// holds what include selects stays (share, of share/lib). What the callbacks are told is what the
// tree holds, each entry once: the digest of the content goes to the
// link, no group of one is told, and the entries before the link, and
// after, are told once.
func TestHardLinkTargetLeftOutTellsWhatIsPlaced(t *testing.T) {
	s := newSandbox(t, Tar, build(t, Tar, []ent{
		{name: "p/", typ: tar.TypeDir},
		{name: "p/bin/", typ: tar.TypeDir},
		{name: "p/dev", typ: tar.TypeFifo},
		{name: "p/libexec/sub/a", body: "aaa", mode: 0o755},
		{name: "p/bin/a", typ: tar.TypeLink, link: "p/libexec/sub/a"},
		{name: "p/bin/b", typ: tar.TypeLink, link: "p/libexec/sub/a"},
		{name: "p/share/", typ: tar.TypeDir},
		{name: "p/share/x", body: "x"},
		{name: "p/share/y", typ: tar.TypeLink, link: "p/libexec/sub/a"},
		{name: "p/share/lib", body: "L"},
		{name: "p/bin/c", typ: tar.TypeLink, link: "p/share/lib"},
		{name: "p/README", body: "r"},
		{name: "q", body: "beside"},
		{name: "p/fifo", typ: tar.TypeFifo},
	}))
	var (
		written         = map[string]string{}
		links           [][]string
		dirs, stripped  []string
		skipped, header []string
	)
	opt := Options{
		Strip:    1,
		Include:  []string{"bin", "share/x", "fifo", "dev"},
		Written:  func(p, sum string) { written[p] = sum },
		Links:    func(names []string) { links = append(links, names) },
		Dirs:     func(rel string) { dirs = append(dirs, rel) },
		Stripped: func(name string) { stripped = append(stripped, name) },
		Skipped:  func(name, what string) { skipped = append(skipped, name) },
		Headers:  func(rel string, h Header) { header = append(header, rel) },
	}
	if err := Extract(context.Background(), s.src, Tar, s.out, opt); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, snapshot(t, s.out), map[string]string{
		"bin":     "dir 755",
		"bin/a":   "file 755 aaa",
		"bin/b":   "file 755 aaa",
		"bin/c":   "file 644 L",
		"share":   "dir 755",
		"share/x": "file 644 x",
	})
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	wantWritten := map[string]string{
		filepath.Join(s.out, "bin", "a"):   sum("aaa"),
		filepath.Join(s.out, "bin", "c"):   sum("L"),
		filepath.Join(s.out, "share", "x"): sum("x"),
	}
	if !reflect.DeepEqual(written, wantWritten) {
		t.Errorf("Written told\n got %q\nwant %q", written, wantWritten)
	}
	if want := [][]string{{"bin/a", "bin/b"}}; !reflect.DeepEqual(links, want) {
		t.Errorf("Links told %q, want %q", links, want)
	}
	if want := []string{"bin"}; !reflect.DeepEqual(dirs, want) {
		t.Errorf("Dirs told %q, want %q", dirs, want)
	}
	if want := []string{"q"}; !reflect.DeepEqual(stripped, want) {
		t.Errorf("Stripped told %q, want %q", stripped, want)
	}
	if want := []string{"p/dev", "p/fifo"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("Skipped told %q, want %q", skipped, want)
	}
	if want := []string{"bin", "bin/a", "bin/b", "share/x", "bin/c"}; !reflect.DeepEqual(header, want) {
		t.Errorf("Headers told %q, want %q", header, want)
	}
}

// A link to a link: a kept hard link whose target is a hard link include
// left out, and one whose target is a kept link deferred itself, are
// made from the file the chain ends at, which is then removed with the
// links it went through.
func TestHardLinkChainsToLeftOutTargets(t *testing.T) {
	s := newSandbox(t, Tar, build(t, Tar, []ent{
		{name: "lib/real", body: "so"},
		{name: "lib/alias", typ: tar.TypeLink, link: "lib/real"},
		{name: "bin/one", typ: tar.TypeLink, link: "lib/alias"},
		{name: "bin/two", typ: tar.TypeLink, link: "bin/one"},
		{name: "etc/conf", body: "c"},
	}))
	var links [][]string
	opt := Options{Include: []string{"bin", "etc"}, Links: func(names []string) { links = append(links, names) }}
	if err := Extract(context.Background(), s.src, Tar, s.out, opt); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, snapshot(t, s.out), map[string]string{
		"bin":      "dir 755",
		"bin/one":  "file 644 so",
		"bin/two":  "file 644 so",
		"etc":      "dir 755",
		"etc/conf": "file 644 c",
	})
	if want := [][]string{{"bin/one", "bin/two"}}; !reflect.DeepEqual(links, want) {
		t.Errorf("Links told %q, want %q", links, want)
	}
}

// What the second pass cannot make is refused as a kept link with its
// target included would be: a target strip removes, one that comes after
// the link, and a kept link placed anew needs no second pass at all.
func TestHardLinkTargetLeftOutRefusals(t *testing.T) {
	cases := []struct {
		name    string
		ents    []ent
		include []string
		wantErr string
		want    map[string]string
	}{
		{
			name: "target above strip",
			ents: []ent{
				{name: "LICENSE", body: "l"},
				{name: "p/LICENSE", typ: tar.TypeLink, link: "LICENSE"},
			},
			include: []string{"LICENSE"},
			wantErr: `hard link target "LICENSE" is removed by Strip`,
		},
		{
			name: "target after the link",
			ents: []ent{
				{name: "p/bin/a", typ: tar.TypeLink, link: "p/libexec/a"},
				{name: "p/libexec/a", body: "a"},
			},
			include: []string{"bin"},
			wantErr: `hard link target "p/libexec/a" not yet extracted`,
		},
		{
			name: "target a directory",
			ents: []ent{
				{name: "p/libexec/", typ: tar.TypeDir},
				{name: "p/libexec/x", body: "x"},
				{name: "p/bin/a", typ: tar.TypeLink, link: "p/libexec"},
			},
			include: []string{"bin"},
			wantErr: `hard link target "p/libexec" is a directory`,
		},
		{
			// Tar's order: the directory replaces the file the link was
			// made to, and what is below it needs it as a directory.
			name: "target replaced by a directory",
			ents: []ent{
				{name: "p/d", body: "a"},
				{name: "p/bin/a", typ: tar.TypeLink, link: "p/d"},
				{name: "p/d/", typ: tar.TypeDir},
				{name: "p/d/x", body: "x"},
			},
			include: []string{"bin", "d/x"},
			want:    map[string]string{"bin": "dir 755", "bin/a": "file 644 a", "d": "dir 755", "d/x": "file 644 x"},
		},
		{
			name: "link replaced",
			ents: []ent{
				{name: "p/libexec/a", body: "a"},
				{name: "p/bin/a", typ: tar.TypeLink, link: "p/libexec/a"},
				{name: "p/bin/a", body: "new"},
			},
			include: []string{"bin"},
			want:    map[string]string{"bin": "dir 755", "bin/a": "file 644 new"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, Tar, build(t, Tar, c.ents))
			err := Extract(context.Background(), s.src, Tar, s.out, Options{Strip: 1, Include: c.include})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diffTrees(t, snapshot(t, s.out), c.want)
		})
	}
}

// Zip has no hard links: a zip entry is a file, a directory or a
// symlink, so a kept entry never waits for one left out.
func TestZipKeptSymlinkToLeftOut(t *testing.T) {
	s := newSandbox(t, Zip, build(t, Zip, []ent{
		{name: "libexec/a", body: "a"},
		{name: "bin/a", typ: tar.TypeSymlink, link: "../libexec/a"},
	}))
	if err := Extract(context.Background(), s.src, Zip, s.out, Options{Include: []string{"bin"}}); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, snapshot(t, s.out), map[string]string{"bin": "dir 755", "bin/a": "-> ../libexec/a"})
	if _, err := os.Lstat(filepath.Join(s.out, "libexec")); !os.IsNotExist(err) {
		t.Errorf("libexec: %v", err)
	}
}

// A kept hard link to a left-out target that a later entry replaces
// leaves no link to make, but the callbacks are told of what follows it
// all the same: the first pass stopped telling at the link.
func TestHardLinkDeferredThenReplacedTellsTheRest(t *testing.T) {
	s := newSandbox(t, Tar, build(t, Tar, []ent{
		{name: "p/libexec/a", body: "a"},
		{name: "p/bin/a", typ: tar.TypeLink, link: "p/libexec/a"},
		{name: "p/bin/a", body: "new"},
		{name: "p/bin/d/", typ: tar.TypeDir},
		{name: "p/bin/f", typ: tar.TypeFifo},
	}))
	var header, dirs, skipped []string
	written := map[string]bool{}
	err := Extract(context.Background(), s.src, Tar, s.out, Options{
		Strip:   1,
		Include: []string{"bin"},
		Headers: func(rel string, _ Header) { header = append(header, rel) },
		Dirs:    func(rel string) { dirs = append(dirs, rel) },
		Skipped: func(name, _ string) { skipped = append(skipped, name) },
		Written: func(p, _ string) { written[p] = true },
	})
	if err != nil {
		t.Fatal(err)
	}
	diffTrees(t, snapshot(t, s.out), map[string]string{"bin": "dir 755", "bin/a": "file 644 new", "bin/d": "dir 755"})
	// Each entry is told, as without include: the link, then the file.
	if want := []string{"bin/a", "bin/a", "bin/d"}; !reflect.DeepEqual(header, want) {
		t.Errorf("Headers told %q, want %q", header, want)
	}
	if want := []string{"bin/d"}; !reflect.DeepEqual(dirs, want) {
		t.Errorf("Dirs told %q, want %q", dirs, want)
	}
	if want := []string{"p/bin/f"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("Skipped told %q, want %q", skipped, want)
	}
	if !written[filepath.Join(s.out, "bin", "a")] || len(written) != 1 {
		t.Errorf("Written told %v, want bin/a alone", written)
	}
}
