package layer

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// A key's parts for the entries are what they were when fmt formatted
// each entry: cache entries are stored under these keys.
func TestKeyPartsAsFormatted(t *testing.T) {
	tr := tree.New()
	for _, e := range []tree.Entry{
		{Path: "bin/tool", Kind: tree.File, Mode: 0o755 | fs.ModeSetgid, Source: "/src/tool", Size: 12345, UID: 1000, GID: 4294967294},
		{Path: "etc", Kind: tree.Dir, Mode: 0o700},
		{Path: "etc/link", Kind: tree.Symlink, Mode: 0o777, Link: "../bin/tool"},
		{Path: "etc/dirlink", Kind: tree.Symlink, Mode: 0o777, Link: "../bin"},
		{Path: "etc/x", Kind: tree.File, Mode: 0o644, Source: "/src/x"},
	} {
		if err := tr.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	sums := func(source string, _ tree.Stamp) (string, error) { return "sum-of-" + source, nil }
	for _, format := range []Format{Linux, Windows} {
		opt := Options{Format: format, Epoch: time.Unix(1700000000, 0), Compression: Gzip}
		got, err := Key(tr, opt, sums)
		if err != nil {
			t.Fatal(err)
		}
		// The parts before the entries name the format and options.
		const head = 4
		if len(got) < head || got[0] != "layer-v3" {
			t.Fatalf("%s: key %q", format, got)
		}
		want := slices.Clone(got[:head])
		links := newLinkTyper(tr.Entries(), opt)
		for e := range tr.All() {
			sum := ""
			if e.Kind == tree.File {
				sum, _ = sums(e.Source, e.Stamp)
			}
			part := fmt.Sprintf("%s|%s|%o|%d|%d|%s|%d|%s", e.Path, e.Kind, e.Mode, e.UID, e.GID, e.Link, e.Size, sum)
			if format == Windows && e.Kind == tree.Symlink {
				part += "|as:" + strings.ReplaceAll(e.Link, "/", `\`)
				if isDir, _ := links.dirLink(e); isDir {
					part += "|dir"
				}
			}
			want = append(want, part)
		}
		if format == Windows && !slices.ContainsFunc(got, func(p string) bool { return strings.HasSuffix(p, "|dir") }) {
			t.Error("no directory link in the Windows key")
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: key\n%q\nwant\n%q", format, got, want)
		}
	}
}
