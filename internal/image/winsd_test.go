package image

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/pallet-dev/pallet/internal/tree"
)

// sdLayer is a Windows layer of an entry per spec: a name ("/" ending a
// directory, .wh. starting a whiteout) with its MSWINDOWS.rawsd after a
// '=' (none without). A directory's attributes add the descriptor's
// length to FILE_ATTRIBUTE_DIRECTORY, so that they tell layers apart.
func sdLayer(t *testing.T, specs ...string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, s := range specs {
		name, sd, hasSD := strings.Cut(s, "=")
		h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX, PAXRecords: map[string]string{"MSWINDOWS.fileattr": "32"}}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
			h.PAXRecords["MSWINDOWS.fileattr"] = strconv.Itoa(0x10 | len(sd))
		}
		if strings.HasPrefix(path.Base(name), ".wh.") {
			h.PAXRecords, h.Format = nil, tar.FormatUnknown
		}
		if hasSD {
			h.PAXRecords["MSWINDOWS.rawsd"] = sd
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A Windows base's view keeps each directory's descriptor and attributes
// from the layer that listed it last, as the Windows union shows it: a
// later layer's replace an earlier's, one without a descriptor leaves
// none, a directory removed or replaced by a file keeps nothing. Equal
// descriptors are one.
func TestWindowsBaseViewDescriptors(t *testing.T) {
	img := imageOf(t,
		sdLayer(t, "Files/", "Files/Windows/=AAAA", "Files/Windows/System32/=AAAA", "Files/Windows/Temp/=AAAA",
			"Files/Users/=AAAA", "Files/Gone/=AAAA", "Files/Swap/=AAAA", "Hives/"),
		sdLayer(t, "Files/", "Files/WINDOWS/", "Files/WINDOWS/system32/=BBBBBBBB", "Files/Windows/Temp/", // spelled otherwise: one name
			"Files/.wh.Gone", "Files/Swap",
			"Hives/"),
	)
	v, err := WindowsBaseView(img, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]tree.WinDir{}
	for p, d := range v.WinDirs {
		got[p] = *d
	}
	want := map[string]tree.WinDir{
		"Windows/System32": {RawSD: "BBBBBBBB", Attr: 0x18},
		"Users":            {RawSD: "AAAA", Attr: 0x14},
	}
	if len(got) != len(want) {
		t.Errorf("WinDirs = %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %+v, want %+v", p, got[p], w)
		}
	}
	if _, ok := v.Dirs["Windows/System32"]; !ok {
		t.Errorf("Dirs = %v", v.Dirs)
	}

	shared := imageOf(t, sdLayer(t, "Files/", "Files/a/=AAAA", "Files/b/=AAAA", "Files/c/=AAAA"))
	if v, err = WindowsBaseView(shared, 1<<20, 0); err != nil {
		t.Fatal(err)
	}
	if v.WinDirs["a"] == nil || v.WinDirs["a"] != v.WinDirs["b"] || v.WinDirs["b"] != v.WinDirs["c"] {
		t.Errorf("equal descriptors are not one: %v", v.WinDirs)
	}
}

// A directory's descriptor that go-winio cannot decode fails the
// base's import: the base is refused, naming the entry.
func TestWindowsBaseViewBadDescriptor(t *testing.T) {
	_, err := WindowsBaseView(imageOf(t, sdLayer(t, "Files/", "Files/Windows/=not base64!")), 1<<20, 0)
	if err == nil || !strings.Contains(err.Error(), "MSWINDOWS.rawsd is not base64") || !strings.Contains(err.Error(), "Files/Windows") {
		t.Errorf("err = %v", err)
	}
}
