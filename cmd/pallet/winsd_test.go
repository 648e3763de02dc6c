package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/pallet-dev/pallet/internal/layer"
)

// sdBaseImage is a nanoserver-like Windows base of one layer whose
// Windows and Windows/System32 carry the descriptors windowsSD and
// system32SD and the attributes system32Attr on System32, as a base
// exported from Windows does (go-winio's backuptar); osVersion goes into
// its config.
func sdBaseImage(t *testing.T, windowsSD, system32SD string, system32Attr int, osVersion string) v1.Image {
	t.Helper()
	dir := func(n, sd string, attr int) *tar.Header {
		h := &tar.Header{Name: n, Typeflag: tar.TypeDir, Mode: 0o40755, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"MSWINDOWS.fileattr": strconv.Itoa(attr)}}
		if sd != "" {
			h.PAXRecords["MSWINDOWS.rawsd"] = sd
		}
		return h
	}
	blob := rawTar(t,
		dir("Files", "", 0x10), dir("Files/Windows", windowsSD, 0x10), dir("Files/Windows/System32", system32SD, system32Attr),
		&tar.Header{Name: "Files/Windows/System32/cmd.exe", Typeflag: tar.TypeReg, Size: 3, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"MSWINDOWS.fileattr": "32", "MSWINDOWS.rawsd": system32SD}},
		dir("Files/Users", "", 0x10), dir("Hives", "", 0x10))
	tmp := filepath.Join(t.TempDir(), "b")
	windowsBaseOf(t, tmp, blob)
	img := dfImage(t, tmp)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OSVersion = osVersion
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// writeSDBase writes img as the only image of an OCI layout at dir.
func writeSDBase(t *testing.T, dir string, img v1.Image) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
}

// winDirRecords are the MSWINDOWS.rawsd and MSWINDOWS.fileattr of each
// entry of l, by name.
func winDirRecords(t *testing.T, l v1.Layer) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	walkLayer(t, l, func(h *tar.Header, _ io.Reader) {
		out[strings.TrimSuffix(h.Name, "/")] = [2]string{h.PAXRecords["MSWINDOWS.rawsd"], h.PAXRecords["MSWINDOWS.fileattr"]}
	})
	return out
}

var (
	// Descriptors told apart by their bytes: pallet's own directory
	// descriptor with the last byte of its last SID changed, so that each
	// is still one go-winio and Windows take (the layout checker parses
	// them); what they grant does not matter here, only that they are
	// carried over as they are.
	sdWindows  = variantSD(1)
	sdSystem32 = variantSD(2)
	sdOther    = variantSD(3)
	palletDir  = base64.StdEncoding.EncodeToString(layer.SecurityDescriptor(true))
	palletFile = base64.StdEncoding.EncodeToString(layer.SecurityDescriptor(false))
)

func variantSD(n byte) string {
	raw := layer.SecurityDescriptor(true)
	raw[len(raw)-1] ^= n
	return base64.StdEncoding.EncodeToString(raw)
}

const sdRecipe = `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: %s
    platforms: [windows/amd64]
    files:
      - {artifact: app, dest: /Windows/System32/}
`

// windowsImages are the Windows images of the layout at dir, in its
// indexes' order.
func windowsImages(t *testing.T, dir string) []v1.Image {
	t.Helper()
	var imgs []v1.Image
	for _, li := range layoutImages(t, dir) {
		if li.desc.Platform != nil && li.desc.Platform.OS == "windows" {
			imgs = append(imgs, li.img)
		}
	}
	return imgs
}

// topLayer is img's last layer, pallet's.
func topLayer(t *testing.T, img v1.Image) v1.Layer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	return ls[len(ls)-1]
}

// A file placed into a directory the base holds makes pallet's layer
// list that directory, and its parents, again; the Windows union shows a
// directory with the top layer's descriptor, so the layer carries the
// base's (and its attributes), not pallet's, which lets Users add files:
// C:\Windows\System32 would be open to DLL planting. A directory the
// base lacks keeps pallet's. A base whose System32 has another
// descriptor gets another layer, not the one cached for the first.
func TestWindowsSDOfBaseDirectoriesKept(t *testing.T) {
	dir := t.TempDir()
	cache := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "app", "Extra", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(sdRecipe, "oci:base"))
	build := func(system32SD string) (v1.Layer, map[string][2]string) {
		t.Helper()
		base := filepath.Join(dir, "base")
		if err := os.RemoveAll(base); err != nil {
			t.Fatal(err)
		}
		writeSDBase(t, base, sdBaseImage(t, sdWindows, system32SD, 0x2010, ""))
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
		// As an importer reads it: the base's one layer, then pallet's,
		// whose re-listed directories keep what the base gave them.
		checkWindowsLayoutOnBase(t, out, 1)
		l := topLayer(t, dfImage(t, out))
		return l, winDirRecords(t, l)
	}
	first, got := build(sdSystem32)
	for name, want := range map[string][2]string{
		"Files/Windows":                        {sdWindows, "16"},
		"Files/Windows/System32":               {sdSystem32, "8208"},
		"Files/Windows/System32/Extra":         {palletDir, "16"},
		"Files/Windows/System32/app.dll":       {palletFile, "32"},
		"Files/Windows/System32/Extra/app.dll": {palletFile, "32"},
		"Files":                                {"", "16"},
	} {
		if got[name] != want {
			t.Errorf("%s: rawsd, fileattr = %q, want %q", name, got[name], want)
		}
	}
	again, _ := build(sdSystem32)
	if d1, d2 := digestOf(t, first), digestOf(t, again); d1 != d2 {
		t.Errorf("the same base built twice gives layers %s and %s", d1, d2)
	}
	other, got := build(sdOther)
	if got["Files/Windows/System32"] != [2]string{sdOther, "8208"} {
		t.Errorf("on a base whose System32 has another descriptor, the layer's System32 carries %q (served the layer cached for the first base?)", got["Files/Windows/System32"])
	}
	if digestOf(t, other) == digestOf(t, first) {
		t.Error("a base whose System32 has another descriptor got the same layer")
	}
}

// A base without descriptors (a host-process base, written with plain
// tar) leaves pallet's own on every directory, as before.
func TestWindowsSDBaseWithoutDescriptors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "app", "Extra", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(sdRecipe, "oci:base"))
	writeSDBase(t, filepath.Join(dir, "base"), sdBaseImage(t, "", "", 0x10, ""))
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	got := winDirRecords(t, topLayer(t, dfImage(t, out)))
	for _, name := range []string{"Files/Windows", "Files/Windows/System32", "Files/Windows/System32/Extra"} {
		if got[name] != [2]string{palletDir, "16"} {
			t.Errorf("%s: rawsd, fileattr = %q, want pallet's", name, got[name])
		}
	}
}

// Bases of one platform (one manifest per Windows version) share the
// layer where they give its directories the same descriptors, and each
// gets its own where they differ: one layer for all would give a base
// the other's System32 descriptor.
func TestWindowsSDPerBase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "app", "Extra", "app.dll"), "MZ\n")
	writeSDBase(t, filepath.Join(dir, "ltsc2019"), sdBaseImage(t, sdWindows, sdSystem32, 0x10, "10.0.17763.6054"))
	writeSDBase(t, filepath.Join(dir, "ltsc2022"), sdBaseImage(t, sdWindows, sdOther, 0x10, "10.0.20348.2582"))
	writeSDBase(t, filepath.Join(dir, "ltsc2025"), sdBaseImage(t, sdWindows, sdSystem32, 0x10, "10.0.26100.1000"))
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(sdRecipe, "[oci:ltsc2019, oci:ltsc2022, oci:ltsc2025]"))
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	imgs := windowsImages(t, out)
	if len(imgs) != 3 {
		t.Fatalf("%d Windows images, want 3", len(imgs))
	}
	want := []string{sdSystem32, sdOther, sdSystem32}
	var digests []v1.Hash
	for i, img := range imgs {
		l := topLayer(t, img)
		digests = append(digests, digestOf(t, l))
		if got := winDirRecords(t, l)["Files/Windows/System32"]; got != [2]string{want[i], "16"} {
			t.Errorf("image %d: System32 carries %q, want %q", i, got, want[i])
		}
	}
	if digests[0] != digests[2] || digests[0] == digests[1] {
		t.Errorf("layers %v: want the first and last alike, the second apart", digests)
	}
}

func digestOf(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A base's view kept in the cache by a pallet that read no descriptors
// (the fact base-view-windows-v5) is not taken for a base without them:
// the view is read again, and the layer carries the base's descriptor.
func TestWindowsSDOldViewFactNotTaken(t *testing.T) {
	dir := t.TempDir()
	cache := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "app.dll"), "MZ\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(sdRecipe, "oci:base"))
	writeSDBase(t, filepath.Join(dir, "base"), sdBaseImage(t, sdWindows, sdSystem32, 0x10, ""))
	build := func() map[string][2]string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cache, "-o", "oci:"+out)
		return winDirRecords(t, topLayer(t, dfImage(t, out)))
	}
	build()
	asOlderViewFacts(t, cache, "base-view-windows-v5")
	if got := build()["Files/Windows/System32"]; got != [2]string{sdSystem32, "16"} {
		t.Errorf("with an older view fact in the cache, System32 carries %q, want the base's", got)
	}
}

// asOlderViewFacts rewrites each Windows view fact in cache as an earlier
// pallet kept it: without the directories' descriptors (its "S " and "W "
// lines), under name, and nothing under the current one.
func asOlderViewFacts(t *testing.T, cache, name string) {
	t.Helper()
	facts, err := filepath.Glob(filepath.Join(cache, "facts", "base-view-windows-*", "*", "*"))
	if err != nil || len(facts) == 0 {
		t.Fatalf("no Windows view fact in the cache (%v)", err)
	}
	for _, f := range facts {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(data), "\n")
		var kept []string
		for _, line := range strings.Split(body, "\n") {
			if !strings.HasPrefix(line, "S ") && !strings.HasPrefix(line, "W ") {
				kept = append(kept, line)
			}
		}
		old := strings.Join(kept, "\n")
		sum := sha256.Sum256([]byte(old))
		rel, _ := filepath.Rel(filepath.Join(cache, "facts"), f)
		_, rest, _ := strings.Cut(rel, string(filepath.Separator))
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(cache, "facts", name, rest), hex.EncodeToString(sum[:])+"\n"+old)
	}
}
