package layer

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// A Windows layer's directory that the base holds with a descriptor
// carries the base's descriptor and attributes (without the reparse
// point, with the directory bit), keeping pallet's times; one the base
// does not hold keeps pallet's. The key says what is carried: another
// descriptor, another key; no directory of the base, the key without
// BaseDir, part for part.
func TestWindowsBaseDirDescriptors(t *testing.T) {
	tr := tree.New()
	for _, e := range []tree.Entry{
		{Path: "Windows/System32/app.dll", Kind: tree.File, Source: emptyFile(t)},
		{Path: "Windows/System32/New", Kind: tree.Dir, Mode: 0o755},
	} {
		if err := tr.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	sys32 := &tree.WinDir{RawSD: base64.StdEncoding.EncodeToString([]byte("system32")), Attr: attrReparsePoint | 0x2000}
	other := &tree.WinDir{RawSD: base64.StdEncoding.EncodeToString([]byte("another")), Attr: 0x2010}
	baseOf := func(m map[string]*tree.WinDir) func(string) *tree.WinDir {
		return func(p string) *tree.WinDir { return m[NTFSKey(p)] }
	}
	epoch := time.Unix(1700000000, 0)
	opt := Options{Format: Windows, Epoch: epoch, Compression: Gzip,
		BaseDir: baseOf(map[string]*tree.WinDir{NTFSKey("windows/SYSTEM32"): sys32, NTFSKey("Windows/System32/app.dll"): other})}
	var buf bytes.Buffer
	if err := WriteTar(&buf, tr.Entries(), opt); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	tr2 := tar.NewReader(&buf)
	for {
		h, err := tr2.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimSuffix(h.Name, "/")] = h
	}
	for name, want := range map[string][2]string{
		"Files/Windows/System32":         {sys32.RawSD, "8208"}, // 0x2010: the reparse point left out
		"Files/Windows":                  {dirSD, "16"},
		"Files/Windows/System32/New":     {dirSD, "16"},
		"Files/Windows/System32/app.dll": {fileSD, "32"}, // a file is no directory of the base
	} {
		h := got[name]
		if h == nil {
			t.Errorf("%s: not in the layer", name)
			continue
		}
		if r := [2]string{h.PAXRecords[paxRawSD], h.PAXRecords[paxFileAttr]}; r != want {
			t.Errorf("%s: rawsd, fileattr = %q, want %q", name, r, want)
		}
		if !h.ModTime.Equal(epoch) || h.PAXRecords[paxCreationTime] != "1700000000" {
			t.Errorf("%s: times %v, %q: not pallet's", name, h.ModTime, h.PAXRecords[paxCreationTime])
		}
	}

	sums := func(string, tree.Stamp) (string, error) { return "sum", nil }
	key := func(base func(string) *tree.WinDir) []string {
		t.Helper()
		o := opt
		o.BaseDir = base
		k, err := Key(tr, o, sums)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	plain := key(nil)
	if k := key(baseOf(map[string]*tree.WinDir{"elsewhere": sys32})); !slices.Equal(k, plain) {
		t.Errorf("a base whose directories the layer does not list changes the key:\n%q\n%q", k, plain)
	}
	if k := key(baseOf(map[string]*tree.WinDir{NTFSKey("Windows/System32"): {RawSD: ""}})); !slices.Equal(k, plain) {
		t.Errorf("a base directory without a descriptor changes the key:\n%q\n%q", k, plain)
	}
	withSys32 := key(opt.BaseDir)
	withOther := key(baseOf(map[string]*tree.WinDir{NTFSKey("Windows/System32"): other}))
	if slices.Equal(withSys32, plain) || slices.Equal(withSys32, withOther) {
		t.Errorf("the base's descriptor is not in the key: %q, %q", withSys32, withOther)
	}
}
