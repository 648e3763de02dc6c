package main

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A name longer than NTFS holds (255 UTF-16 units), which no Linux file
// has but a destination may give, is refused at the line of the
// placement that names it, and no output is written; before, the layer
// was written and hcsshim's importer failed on it where it was pulled.
// A base whose layer holds one, which fails to import alike, is refused
// at the base's line, naming the layer and the entry.
func TestWindowsLongNamesRefused(t *testing.T) {
	d := t.TempDir()
	long := strings.Repeat("y", 252) + ".exe"
	writeFile(t, filepath.Join(d, "app"), "app\n")
	writeFile(t, filepath.Join(d, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: app, dest: /k/ok.exe}
      - {artifact: app, dest: /k/%s}
`, long))
	out := filepath.Join(d, "out")
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(d, "pallet.yaml"), "-o", "oci:"+out)
	for _, want := range []string{filepath.Join(d, "pallet.yaml") + ":12: ", "k/" + long + ": ", "is a name of 256 UTF-16 units, and NTFS holds at most 255"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to say %q", err, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("the failed build left %s: %v", out, err)
	}

	base := append(winBaseFirst(), &tar.Header{Name: "Files/app/" + long, Typeflag: tar.TypeReg})
	digests := windowsLayeredBase(t, filepath.Join(d, "base"), [][]byte{rawTar(t, base...)})
	writeFile(t, filepath.Join(d, "pallet.yaml"), winBaseRecipe)
	_, err = pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(d, "pallet.yaml"), "-o", "oci:"+out)
	for _, want := range []string{"pallet.yaml:8: image app (windows/amd64): base oci:base", fmt.Sprintf("base layer 1 (%s)", digests[0]), `entry "Files/app/yyyy`, "NTFS holds at most 255"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to say %q", err, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("the failed build left %s: %v", out, err)
	}
}

// The links of a Windows image reach Windows as a reparse point holding
// the tar's target as it is (hcsshim's importer, go-winio's
// EncodeReparsePoint), and Windows follows a relative one only with '\'
// between its components: each link pallet writes, from a local tree or
// an archive, holds '\' only, and no "." or empty component. Before, a
// link to ../Windows/System32 was written so, and did not open in the
// container (the file name is invalid).
func TestWindowsLinksHoldBackslashes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "l", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "l", "sub", "x.dll"), "x")
	for name, target := range map[string]string{"sys32": "../Windows/System32", "sam": "../Windows/System32/config/SAM", "here": "./sub//x.dll"} {
		if err := os.Symlink(target, filepath.Join(dir, "l", name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "a.tar"), string(rawTar(t,
		&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "bin/tool.exe", Typeflag: tar.TypeReg, Mode: 0o755},
		&tar.Header{Name: "tool.exe", Typeflag: tar.TypeSymlink, Linkname: `bin\tool.exe`},
		&tar.Header{Name: "cfg", Typeflag: tar.TypeSymlink, Linkname: "./bin/"},
	)))
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  l: {local: {path: l, links: keep}, licenses: none}
  a: {local: {path: a.tar, extract: {}}, licenses: none}
images:
  app:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
    files:
      - {artifact: l, dest: /links/}
      - {artifact: a, dest: /a/}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayout(t, out, "")
	got := map[string]string{}
	walkImage(t, dfImage(t, out), func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeSymlink {
			got[h.Name] = h.Linkname + " " + h.PAXRecords["MSWINDOWS.fileattr"]
		}
	})
	want := map[string]string{
		"Files/links/sys32": `..\Windows\System32 1040`,
		"Files/links/sam":   `..\Windows\System32\config\SAM 1056`,
		"Files/links/here":  `sub\x.dll 1056`,
		"Files/a/tool.exe":  `bin\tool.exe 1056`,
		"Files/a/cfg":       `bin 1040`,
	}
	if !maps.Equal(got, want) {
		t.Errorf("links written as %q\nwant %q", got, want)
	}
}

// A Windows base's registry hives are the base's: pallet reads none of
// them (the importer and HCS check them where the image is pulled), so
// hostile ones, a truncated hive, one whose root cell points past its
// bins, one claiming gigabytes of bins, cost a build nothing and pass
// into the image byte for byte, in the base's own layer.
func TestWindowsBaseHostileHivesPassThrough(t *testing.T) {
	d := t.TempDir()
	regf := func(rootCell, binsSize uint32, n int) []byte {
		b := make([]byte, n)
		copy(b, "regf")
		binary.LittleEndian.PutUint32(b[0x24:], rootCell)
		binary.LittleEndian.PutUint32(b[0x28:], binsSize)
		return b
	}
	hives := map[string][]byte{
		"SYSTEM":   regf(0x20, 0x1000, 100),            // truncated inside the base block
		"SOFTWARE": regf(0x7FFFFFF0, 0x1000, 2*4096),   // root cell out of range
		"SAM":      regf(0x20, 0xFFFFF000, 2*4096),     // bins far beyond the file
		"SECURITY": bytes.Repeat([]byte{0xFF}, 3*4096), // no signature at all
		"DEFAULT":  nil,                                // empty, as hpc v1.0.0 ships them
	}
	hdrs := []*tar.Header{
		{Name: "Files/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "Files/Windows/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "Files/Windows/System32/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "Files/Windows/System32/config/", Typeflag: tar.TypeDir, Mode: 0o755},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(hives)) {
		if err := tw.WriteHeader(&tar.Header{Name: "Files/Windows/System32/config/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(hives[name]))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(hives[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	windowsBaseOf(t, filepath.Join(d, "base"), buf.Bytes())
	writeFile(t, filepath.Join(d, "app"), "app\n")
	writeFile(t, filepath.Join(d, "pallet.yaml"), winBaseRecipe)
	out := filepath.Join(d, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(d, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayoutOnBase(t, out, 1)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	walkLayer(t, layers[0], func(h *tar.Header, r io.Reader) {
		if name, ok := strings.CutPrefix(h.Name, "Files/Windows/System32/config/"); ok && name != "" {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			got[name] = b
		}
	})
	if len(got) != len(hives) {
		t.Fatalf("the base layer holds hives %q", slices.Sorted(maps.Keys(got)))
	}
	for name, want := range hives {
		if !bytes.Equal(got[name], want) {
			t.Errorf("hive %s: %d bytes in the image, the base's %d", name, len(got[name]), len(want))
		}
	}
}
