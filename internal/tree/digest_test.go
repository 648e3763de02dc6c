package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"testing"
)

// Digest hashes what it did when it formatted each entry with fmt:
// records and cached artifacts keep these digests.
func TestDigestAsFormatted(t *testing.T) {
	tr := New()
	for _, e := range []Entry{
		{Path: "bin/tool", Kind: File, Mode: 0o755 | fs.ModeSetuid, Source: "/src/tool"},
		{Path: "etc", Kind: Dir, Mode: 0o700},
		{Path: "etc/link", Kind: Symlink, Mode: 0o777, Link: "../bin/tool"},
		{Path: "etc/x", Kind: File, Mode: 0o644, Source: "/src/x", UID: 3},
	} {
		if err := tr.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	sums := func(source string, _ Stamp) (string, error) {
		s := sha256.Sum256([]byte(source))
		return hex.EncodeToString(s[:]), nil
	}
	h := sha256.New()
	for e := range tr.All() {
		fmt.Fprintf(h, "%s\x00%s\x00%o\x00%s\x00", e.Path, e.Kind, e.Mode, e.Link)
		if e.Kind == File {
			sum, _ := sums(e.Source, e.Stamp)
			io.WriteString(h, sum)
		}
		h.Write([]byte{0})
	}
	got, err := Digest(tr, sums)
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("digest %s, want %s", got, want)
	}
}
