package layer

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

func mustTree(t *testing.T, entries ...tree.Entry) *tree.Tree {
	t.Helper()
	tr := tree.New()
	for _, e := range entries {
		if e.Kind == tree.Symlink {
			e.Mode = 0o777
		}
		if err := tr.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// linkAttrs writes tr as a Windows layer with opt, verifies it and returns
// each symlink's MSWINDOWS.fileattr by path under Files/.
func linkAttrs(t *testing.T, tr *tree.Tree, opt Options) map[string]string {
	t.Helper()
	opt.Format = Windows
	l, err := Build(tr, t.TempDir(), opt)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries, err := VerifyWindows(rc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Header.Typeflag == tar.TypeSymlink {
			out[strings.TrimPrefix(e.Header.Name, "Files/")] = e.Header.PAXRecords[paxFileAttr]
		}
	}
	return out
}

const (
	dirLinkAttr  = "1040" // reparse point | directory
	fileLinkAttr = "1056" // reparse point | archive
)

// A link is a directory link when its target is a directory anywhere in
// the image: in another layer, through a chain of links, through a link in
// a middle component; NTFS names match whatever the case. What the image
// cannot tell takes the placement's word, else is a file link and named.
func TestWindowsLinksTypedFromTheImage(t *testing.T) {
	lower := mustTree(t,
		tree.Entry{Path: "opt/data/sub", Kind: tree.Dir, Mode: 0o755},
		tree.Entry{Path: "opt/file.txt", Kind: tree.File, Mode: 0o644, Source: os.DevNull},
		tree.Entry{Path: "opt/current", Kind: tree.Symlink, Link: `data`},
	)
	upper := mustTree(t,
		tree.Entry{Path: "k/d", Kind: tree.Symlink, Link: `..\opt\DATA`},
		tree.Entry{Path: "k/chain", Kind: tree.Symlink, Link: "d"},
		tree.Entry{Path: "k/chain2", Kind: tree.Symlink, Link: "../opt/current"},
		tree.Entry{Path: "k/through", Kind: tree.Symlink, Link: "chain/sub"},
		tree.Entry{Path: "k/f", Kind: tree.Symlink, Link: "../opt/file.txt"},
		tree.Entry{Path: "k/own", Kind: tree.Symlink, Link: "bin"},
		tree.Entry{Path: "k/bin", Kind: tree.Dir, Mode: 0o755},
		tree.Entry{Path: "k/unknown", Kind: tree.Symlink, Link: `..\Windows\System32`},
		tree.Entry{Path: "k/hinted", Kind: tree.Symlink, Link: `..\Windows\System32`, LinkAs: tree.LinkDir},
		tree.Entry{Path: "k/hinted-file", Kind: tree.Symlink, Link: `..\Windows\notepad.exe`, LinkAs: tree.LinkFile},
		// The image knows better than a placement-wide hint.
		tree.Entry{Path: "k/hint-overruled", Kind: tree.Symlink, Link: "../opt/file.txt", LinkAs: tree.LinkDir},
		tree.Entry{Path: "k/loop1", Kind: tree.Symlink, Link: "loop2"},
		tree.Entry{Path: "k/loop2", Kind: tree.Symlink, Link: "loop1"},
		tree.Entry{Path: "k/via-file", Kind: tree.Symlink, Link: "../opt/file.txt/x"},
	)
	opt := Options{Format: Windows, LinkTarget: ImageLinks(nil, lower, upper)}
	got := linkAttrs(t, upper, opt)
	want := map[string]string{
		"k/d": dirLinkAttr, "k/chain": dirLinkAttr, "k/chain2": dirLinkAttr, "k/through": dirLinkAttr,
		"k/own": dirLinkAttr, "k/hinted": dirLinkAttr,
		"k/f": fileLinkAttr, "k/unknown": fileLinkAttr, "k/hinted-file": fileLinkAttr, "k/hint-overruled": fileLinkAttr,
		"k/loop1": fileLinkAttr, "k/loop2": fileLinkAttr, "k/via-file": fileLinkAttr,
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: attributes %s, want %s", p, got[p], w)
		}
	}
	// Without the image, this layer alone knows only its own directory.
	alone := linkAttrs(t, upper, Options{})
	if alone["k/own"] != dirLinkAttr || alone["k/d"] != fileLinkAttr {
		t.Errorf("layer alone: %v", alone)
	}

	var named []string
	for _, u := range UntypedLinks(upper, opt) {
		named = append(named, u.Path)
		if w := u.String(); !strings.HasPrefix(w, "symlink /"+u.Path+" -> ") || !strings.Contains(w, "link: dir") {
			t.Errorf("warning %q does not say what to do", w)
		}
	}
	if wantNamed := []string{"k/loop1", "k/loop2", "k/unknown", "k/via-file"}; !slices.Equal(named, wantNamed) {
		t.Errorf("untyped links %v, want %v", named, wantNamed)
	}
	if UntypedLinks(upper, Options{Format: Linux}) != nil {
		t.Error("a Linux layer has untyped links")
	}
}

// The cache key of a Windows layer changes with how its links are typed,
// which depends on the other layers: a layer cached while a link's target
// was missing must not be reused once the target is a directory.
func TestWindowsKeyFollowsLinkTypes(t *testing.T) {
	upper := mustTree(t, tree.Entry{Path: "k/d", Kind: tree.Symlink, Link: "../opt/data"})
	withDir := ImageLinks(nil, mustTree(t, tree.Entry{Path: "opt/data", Kind: tree.Dir, Mode: 0o755}), upper)
	withFile := ImageLinks(nil, mustTree(t, tree.Entry{Path: "opt/data", Kind: tree.File, Mode: 0o644, Source: os.DevNull}), upper)
	key := func(opt Options) string {
		parts, err := Key(upper, opt, func(string, tree.Stamp) (string, error) { return "", nil })
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(parts, "\n")
	}
	a, b, c := key(Options{Format: Windows, LinkTarget: withDir}), key(Options{Format: Windows, LinkTarget: withFile}), key(Options{Format: Windows})
	if a == b || b != c {
		t.Errorf("keys: dir target %q, file target %q, alone %q", a, b, c)
	}
	if key(Options{Format: Linux, LinkTarget: withDir}) != key(Options{Format: Linux}) {
		t.Error("a Linux layer's key depends on Windows link typing")
	}
}

// The verifier refuses a link typed against its own layer: a file link to
// a directory of the layer, or a directory link to a file.
func TestVerifyWindowsLinkTypes(t *testing.T) {
	for _, tc := range []struct {
		attr   int
		target string
	}{
		{attrReparsePoint | attrArchive, "data"},
		{attrReparsePoint | attrDirectory, "file.txt"},
	} {
		r := rawWindowsLayer(t,
			&tar.Header{Name: "Files/data/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, dirSD, epoch0)},
			&tar.Header{Name: "Files/file.txt", Typeflag: tar.TypeReg, PAXRecords: windowsRecords(attrArchive, fileSD, epoch0)},
			&tar.Header{Name: "Files/link", Typeflag: tar.TypeSymlink, Linkname: tc.target, PAXRecords: windowsRecords(tc.attr, fileSD, epoch0)},
		)
		if _, err := VerifyWindows(r); err == nil || !strings.Contains(err.Error(), "Files/link: a link to a") {
			t.Errorf("link to %s with attributes %d: got %v", tc.target, tc.attr, err)
		}
	}
}

// rawWindowsLayer writes the two roots and then hdrs as they are.
func rawWindowsLayer(t *testing.T, hdrs ...*tar.Header) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range append([]*tar.Header{
		{Name: "Hives/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, "", epoch0)},
		{Name: "Files/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, "", epoch0)},
	}, hdrs...) {
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

var epoch0 = time.Unix(0, 0)
