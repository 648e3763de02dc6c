package main

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A second reader of pallet's Windows images, for the rules of Windows'
// importers that checkWindowsImage (wincheck_test.go) does not hold them
// to. It shares no code with that reader nor with pallet. The rules and
// where they come from:
//
//   - hcsshim internal/safefile ntRelativePath refuses a relative path of
//     more than 32,767 UTF-16 units (ENAMETOOLONG); its legacyLayerWriter.Add
//     creates a directory's metadata as NAME.$wcidirs$, ten units more, so
//     a directory's path must leave room for them.
//   - The same writer (Add) and the CimFS one (internal/wclayer/cim,
//     isDeltaOrBaseHive) take what is under Hives/ for registry deltas,
//     merged into the parent's hives: a layer of files holds none.
//   - go-winio backuptar reads MSWINDOWS.fileattr with ParseUint (base 10,
//     32 bits), MSWINDOWS.rawsd with base64.StdEncoding and
//     LIBARCHIVE.creationtime as a PAX time; BuildKit's util/winlayers
//     writes them as canonical decimal and padded base64, which this reader
//     requires (a base64 DecodeString skips newlines that another decoder
//     may not).
//   - A base layer (no parents) goes to hcsshim's baseLayerWriter, then
//     ProcessBaseLayer, which needs the five registry hives under
//     Files/Windows/System32/config, valid ones from Windows Server 2025
//     on (the CimFS writer hard-links them into Hives/*_BASE); it cannot
//     hold tombstones, and a UtilityVM/ would be processed as a utility
//     VM's image.
//   - containerd and hcsshim reach a foreign layer by the descriptor's urls
//     only, and take the config's rootfs of type "layers".
type crossLayer struct {
	// base: the image's first layer, imported with no parent.
	base bool
	// theirs: a layer of the base's, held to nothing here.
	theirs bool
}

// maxNTRelative is the longest relative path, in UTF-16 units, hcsshim
// opens (safefile.ntRelativePath).
const maxNTRelative = 32767

// crossHives are the hives a base layer holds, as hcsshim names them.
var crossHives = []string{"DEFAULT", "SAM", "SECURITY", "SOFTWARE", "SYSTEM"}

// crossCheckLayout checks every Windows image of the layout at dir;
// theirs is how many of each image's first layers are the base's (a read
// base's, not the built-in one, which pallet writes).
func crossCheckLayout(t *testing.T, dir string, theirs int) {
	t.Helper()
	n := 0
	for _, li := range layoutImages(t, dir) {
		cf, err := li.img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "windows" {
			continue
		}
		n++
		if err := crossCheckImage(li.img, theirs); err != nil {
			t.Errorf("image %s: %v", li.desc.Digest, err)
		}
	}
	if n == 0 {
		t.Fatalf("%s: no Windows image", dir)
	}
}

func crossCheckImage(img v1.Image, theirs int) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if cf.RootFS.Type != "layers" {
		return fmt.Errorf("rootfs type %q, where containerd and Docker read layers", cf.RootFS.Type)
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	if len(layers) != len(m.Layers) {
		return fmt.Errorf("%d layers, %d descriptors", len(layers), len(m.Layers))
	}
	for i, d := range m.Layers {
		if !d.MediaType.IsDistributable() {
			if len(d.URLs) == 0 {
				return fmt.Errorf("layer %d: foreign (%s) with no urls: nothing can fetch it", i, d.MediaType)
			}
			continue
		}
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return fmt.Errorf("layer %d: %v", i, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("layer %d: %v", i, err)
		}
		if err := crossCheckTar(b, crossLayer{base: i == 0, theirs: i < theirs}); err != nil {
			return fmt.Errorf("layer %d: %v", i, err)
		}
	}
	return nil
}

// crossCheckTar reads one layer's tar by the rules above.
func crossCheckTar(b []byte, l crossLayer) error {
	if l.theirs {
		return nil
	}
	tr := tar.NewReader(bytes.NewReader(b))
	hives := map[string][]byte{}
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("tar: %v", err)
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("entry %d %q: %s", i, h.Name, fmt.Sprintf(format, a...))
		}
		name := strings.TrimSuffix(h.Name, "/")
		// As hcsshim opens it: '\' separated, cleaned, in UTF-16.
		units := len(utf16.Encode([]rune(filepath.Clean(strings.ReplaceAll(name, "/", `\`)))))
		if units > maxNTRelative {
			return fail("a path of %d UTF-16 units: hcsshim opens at most %d (ENAMETOOLONG)", units, maxNTRelative)
		}
		attr, hasAttr, err := crossAttr(h)
		if err != nil {
			return fail("%v", err)
		}
		isDir := h.Typeflag == tar.TypeDir || hasAttr && attr&0x10 != 0
		if !l.base && isDir && units+len(".$wcidirs$") > maxNTRelative {
			return fail("a directory of %d UTF-16 units: its metadata file NAME.$wcidirs$ would be %d, past the %d hcsshim opens", units, units+len(".$wcidirs$"), maxNTRelative)
		}
		top, rest, _ := strings.Cut(name, "/")
		switch {
		case l.base && top != "Files":
			return fail("outside Files/ in a base layer: hcsshim's base writer makes %s/ part of the layer's own directory", top)
		case l.base && strings.HasPrefix(path.Base(name), ".wh."):
			return fail("a whiteout in a base layer: hcsshim's base writer cannot hold tombstones")
		case !l.base && top == "Hives" && rest != "":
			return fail("under Hives/, which the importers merge into the parent's registry hives: a layer of files holds none")
		}
		if l.base && h.Typeflag == tar.TypeReg {
			for _, hv := range crossHives {
				if name == "Files/Windows/System32/config/"+hv {
					if hives[hv], err = io.ReadAll(tr); err != nil {
						return fail("%v", err)
					}
				}
			}
		}
		if l.base {
			continue
		}
		if s, ok := h.PAXRecords["MSWINDOWS.rawsd"]; ok {
			sd, err := base64.StdEncoding.DecodeString(s)
			if err != nil || base64.StdEncoding.EncodeToString(sd) != s {
				return fail("MSWINDOWS.rawsd is not canonical padded base64 (%v)", err)
			}
		}
		if s, ok := h.PAXRecords["LIBARCHIVE.creationtime"]; ok {
			if err := crossPAXTime(s); err != nil {
				return fail("LIBARCHIVE.creationtime %q: %v", s, err)
			}
		}
	}
	if l.base {
		for _, hv := range crossHives {
			b, ok := hives[hv]
			if !ok {
				return fmt.Errorf("the base layer has no Files/Windows/System32/config/%s, which ProcessBaseLayer needs", hv)
			}
			if err := crossHive(b); err != nil {
				return fmt.Errorf("Files/Windows/System32/config/%s: %v (Windows Server 2025 refuses the base layer)", hv, err)
			}
		}
	}
	return nil
}

// crossAttr is the entry's MSWINDOWS.fileattr as go-winio reads it, held
// to canonical decimal as BuildKit writes it.
func crossAttr(h *tar.Header) (uint64, bool, error) {
	s, ok := h.PAXRecords["MSWINDOWS.fileattr"]
	if !ok {
		return 0, false, nil
	}
	a, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, true, fmt.Errorf("MSWINDOWS.fileattr %q: %v", s, err)
	}
	if strconv.FormatUint(a, 10) != s {
		return 0, true, fmt.Errorf("MSWINDOWS.fileattr %q is not canonical decimal", s)
	}
	return a, true, nil
}

// crossPAXTime reads a PAX time as go-winio's backuptar does (seconds,
// then optionally '.' and digits), and holds it to what it converts to a
// FILETIME through Unix nanoseconds.
func crossPAXTime(s string) error {
	sec, frac, hasFrac := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return err
	}
	if hasFrac && strings.Trim(frac, "0123456789") != "" {
		return errors.New("fraction is not digits")
	}
	if t := time.Unix(n, 0); t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, 1<<63-1)) {
		return errors.New("outside what go-winio converts")
	}
	return nil
}

// crossHive checks a registry hive's file as far as loading it needs: the
// base block's signature and checksum (the XOR of its first 127 dwords,
// 0 written as 1 and -1 as -2), the bins it declares present and signed,
// and its root cell a key node in them marked as the hive's entry.
func crossHive(b []byte) error {
	le := binary.LittleEndian
	switch {
	case len(b) < 8192:
		return fmt.Errorf("%d bytes: no base block and hive bin", len(b))
	case string(b[:4]) != "regf":
		return errors.New("no regf signature")
	}
	var x uint32
	for i := 0; i < 0x1FC; i += 4 {
		x ^= le.Uint32(b[i:])
	}
	switch x {
	case 0:
		x = 1
	case 0xFFFFFFFF:
		x = 0xFFFFFFFE
	}
	if got := le.Uint32(b[0x1FC:]); got != x {
		return fmt.Errorf("base block checksum %#x, its dwords give %#x", got, x)
	}
	if le.Uint32(b[4:]) != le.Uint32(b[8:]) {
		return errors.New("sequence numbers differ: a dirty hive, which needs its logs")
	}
	bins := int(le.Uint32(b[0x28:]))
	if bins == 0 || bins%4096 != 0 || 4096+bins > len(b) {
		return fmt.Errorf("hive bins of %d bytes in a file of %d", bins, len(b))
	}
	if string(b[4096:4100]) != "hbin" {
		return errors.New("no hbin after the base block")
	}
	root := int(le.Uint32(b[0x24:]))
	if root < 32 || root+4+0x4C > bins {
		return fmt.Errorf("root cell at %#x, outside the bins", root)
	}
	cell := b[4096+root:]
	if int32(le.Uint32(cell)) >= 0 {
		return errors.New("root cell is free")
	}
	if string(cell[4:6]) != "nk" || le.Uint16(cell[6:])&0x4 == 0 {
		return errors.New("root cell is no key node marked as the hive's entry")
	}
	return nil
}

// The reader refuses what it holds pallet to: each case one thing wrong.
func TestWindowsCrossCheckerRefuses(t *testing.T) {
	rec := func(attr string) map[string]string {
		return map[string]string{"MSWINDOWS.fileattr": attr, "MSWINDOWS.rawsd": buildkitFileSD, "LIBARCHIVE.creationtime": "0"}
	}
	hive := crossGoodHive()
	baseHdrs := func(skip string) []*tar.Header {
		hs := []*tar.Header{
			{Name: "Files/", Typeflag: tar.TypeDir},
			{Name: "Files/Windows/", Typeflag: tar.TypeDir},
			{Name: "Files/Windows/System32/", Typeflag: tar.TypeDir},
			{Name: "Files/Windows/System32/config/", Typeflag: tar.TypeDir},
		}
		for _, hv := range crossHives {
			if hv != skip {
				hs = append(hs, &tar.Header{Name: "Files/Windows/System32/config/" + hv, Typeflag: tar.TypeReg, Size: int64(len(hive))})
			}
		}
		return hs
	}
	deep := func(units int) string {
		var b strings.Builder
		b.WriteString("Files")
		for b.Len() < units-200 {
			b.WriteString("/" + strings.Repeat("d", 199))
		}
		b.WriteString("/" + strings.Repeat("x", units-b.Len()-1))
		return b.String()
	}
	for _, tc := range []struct {
		name string
		base bool
		hdrs []*tar.Header
		hive func([]byte) []byte
		want string
	}{
		{"good base", true, baseHdrs(""), nil, ""},
		{"good layer", false, []*tar.Header{{Name: "Files/" + strings.Repeat("a", 200), Typeflag: tar.TypeReg, PAXRecords: rec("32")}}, nil, ""},
		{"file at the bound", false, []*tar.Header{{Name: deep(maxNTRelative), Typeflag: tar.TypeReg, PAXRecords: rec("32")}}, nil, ""},
		{"file past it", false, []*tar.Header{{Name: deep(maxNTRelative + 1), Typeflag: tar.TypeReg, PAXRecords: rec("32")}}, nil, "ENAMETOOLONG"},
		{"directory without room for its metadata", false, []*tar.Header{{Name: deep(maxNTRelative-5) + "/", Typeflag: tar.TypeDir, PAXRecords: rec("16")}}, nil, ".$wcidirs$ would be"},
		{"a delta hive", false, []*tar.Header{{Name: "Hives/System_Delta", Typeflag: tar.TypeReg, PAXRecords: rec("32")}}, nil, "under Hives/"},
		{"fileattr 016", false, []*tar.Header{{Name: "Files/x", Typeflag: tar.TypeReg, PAXRecords: rec("016")}}, nil, "not canonical decimal"},
		{"fileattr 2^32", false, []*tar.Header{{Name: "Files/x", Typeflag: tar.TypeReg, PAXRecords: rec("4294967296")}}, nil, "out of range"},
		{"rawsd with a newline", false, []*tar.Header{{Name: "Files/x", Typeflag: tar.TypeReg, PAXRecords: map[string]string{"MSWINDOWS.rawsd": buildkitFileSD[:40] + "\n" + buildkitFileSD[40:]}}}, nil, "canonical padded base64"},
		{"creationtime 1.5x", false, []*tar.Header{{Name: "Files/x", Typeflag: tar.TypeReg, PAXRecords: map[string]string{"LIBARCHIVE.creationtime": "1.5x"}}}, nil, "not digits"},
		{"creationtime 1. (go-winio reads it)", false, []*tar.Header{{Name: "Files/x", Typeflag: tar.TypeReg, PAXRecords: map[string]string{"LIBARCHIVE.creationtime": "1."}}}, nil, ""},
		{"base with Hives", true, append(baseHdrs(""), &tar.Header{Name: "Hives/", Typeflag: tar.TypeDir}), nil, "outside Files/ in a base layer"},
		{"base with a whiteout", true, append(baseHdrs(""), &tar.Header{Name: "Files/.wh.x", Typeflag: tar.TypeReg}), nil, "cannot hold tombstones"},
		{"base without SAM", true, baseHdrs("SAM"), nil, "no Files/Windows/System32/config/SAM"},
		{"empty hives", true, baseHdrs(""), func([]byte) []byte { return nil }, "no base block"},
		{"hive checksum", true, baseHdrs(""), func(b []byte) []byte { b[0x1FC]++; return b }, "checksum"},
		{"dirty hive", true, baseHdrs(""), func(b []byte) []byte { b[4]++; crossSum(b); return b }, "sequence numbers"},
		{"hive root not an entry", true, baseHdrs(""), func(b []byte) []byte { b[4096+int(binary.LittleEndian.Uint32(b[0x24:]))+6] &^= 4; return b }, "marked as the hive's entry"},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range tc.hdrs {
			h.Format, h.ModTime = tar.FormatPAX, time.Unix(0, 0)
			content := []byte(nil)
			if h.Size > 0 {
				content = bytes.Clone(hive)
				if tc.hive != nil {
					content = tc.hive(content)
				}
				h.Size = int64(len(content))
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(content); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		err := crossCheckTar(buf.Bytes(), crossLayer{base: tc.base})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// crossGoodHive is a hive made here, field by field, apart from pallet's
// internal/hive: base block, one bin, a root key node marked as the
// hive's entry.
func crossGoodHive() []byte {
	le := binary.LittleEndian
	b := make([]byte, 8192)
	copy(b, "regf")
	le.PutUint32(b[4:], 7)
	le.PutUint32(b[8:], 7)
	le.PutUint32(b[0x14:], 1)
	le.PutUint32(b[0x18:], 3)
	le.PutUint32(b[0x20:], 1)
	le.PutUint32(b[0x24:], 32)
	le.PutUint32(b[0x28:], 4096)
	crossSum(b)
	copy(b[4096:], "hbin")
	le.PutUint32(b[4096+8:], 4096)
	cell := b[4096+32:]
	le.PutUint32(cell, 0xFFFFFFA8) // -0x58: an allocated cell of 88 bytes
	copy(cell[4:], "nk")
	le.PutUint16(cell[6:], 0x2C)
	return b
}

func crossSum(b []byte) {
	var x uint32
	for i := 0; i < 0x1FC; i += 4 {
		x ^= binary.LittleEndian.Uint32(b[i:])
	}
	binary.LittleEndian.PutUint32(b[0x1FC:], x)
}

// Windows images pallet builds on its host-process stand-in, from a
// recipe and a Dockerfile, holding what a Windows layer must carry with
// care (names outside ASCII, an empty and a read-only file, links to a
// file, a directory and into the base, a path near the bound pallet
// holds every path to, a file of some size, an archive's hard link and
// links), pass both readers.
func TestWindowsCrossImportHostProcess(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "l")
	// 18 names of 200 bytes: 3.6 KB, near the 4096 bytes pallet holds
	// every image path to (and Linux a path it opens).
	comps := make([]string, 18)
	for i := range comps {
		comps[i] = fmt.Sprintf("%02d", i) + strings.Repeat("p", 198)
	}
	long := strings.Join(comps, "/")
	for _, d := range []string{"sub/dir é", "日本語", long} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(src, "a.exe"), "MZ")
	writeFile(t, filepath.Join(src, "empty.txt"), "")
	writeFile(t, filepath.Join(src, "sub", "dir é", "naïve ✓.dll"), "dll")
	writeFile(t, filepath.Join(src, "日本語", "ファイル.txt"), "x")
	writeFile(t, filepath.Join(src, long, "deep.txt"), "deep")
	writeFile(t, filepath.Join(src, "big.bin"), strings.Repeat("0123456789abcdef", 1<<16))
	if err := os.Chmod(filepath.Join(src, "a.exe"), 0o444); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"tofile": "a.exe", "todir": "sub", "sys": "../../Windows/System32"} {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
epoch: 1700000000
artifacts:
  l: {local: {path: l, links: keep}, licenses: none}
images:
  app:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
    files:
      - {artifact: l, dest: /k/app/}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayout(t, out, "")
	crossCheckLayout(t, out, 0)

	// A Dockerfile's WORKDIR, ADD of an archive with a hard link and a
	// directory link, and COPY --chown.
	df := filepath.Join(dir, "df")
	arc := filepath.Join(df, "t.tar")
	if err := os.MkdirAll(df, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "sub/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "sub/a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1},
		{Name: "hard.txt", Typeflag: tar.TypeLink, Linkname: "sub/a.txt"},
		{Name: "ln", Typeflag: tar.TypeSymlink, Linkname: "sub"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte("a"))
		}
	}
	tw.Close()
	if err := os.WriteFile(arc, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(df, "f.txt"), "f")
	writeFile(t, filepath.Join(df, "Dockerfile"), "FROM windows-hostprocess-scratch\nWORKDIR C:\\\\app\nADD t.tar ./\nCOPY --chown=1000:1000 f.txt C:/app2/\n")
	dout := filepath.Join(dir, "dout")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(df, "Dockerfile"), "--platform", "windows/amd64", "-o", "oci:"+dout)
	checkWindowsLayout(t, dout, "")
	crossCheckLayout(t, dout, 0)
}

// An image on a base whose one layer is foreign (as nanoserver's was),
// with files placed into the system's directories the foreign layer
// holds, keeps the foreign descriptor's urls and passes both readers.
func TestWindowsCrossImportForeignBase(t *testing.T) {
	dir := t.TempDir()
	windowsBase(t, filepath.Join(dir, "base"), "10.0.20348.2582")
	writeFile(t, filepath.Join(dir, "f", "hosts"), "127.0.0.1 localhost\n")
	writeFile(t, filepath.Join(dir, "f", "app.exe"), "MZ")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  f: {local: {path: f}, licenses: none}
images:
  app:
    base: oci:base
    platforms: windows/amd64
    files:
      - {artifact: f, dest: /app/}
      - {artifact: f, path: hosts, dest: /Windows/System32/drivers/etc/hosts.pallet}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	checkWindowsLayoutOnBase(t, out, 1, "10.0.20348.2582")
	crossCheckLayout(t, out, 1)
	for _, li := range layoutImages(t, out) {
		m, err := li.img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if mt := m.Layers[0].MediaType; mt != types.DockerForeignLayer || len(m.Layers[0].URLs) != 1 {
			t.Errorf("base layer %s with urls %v, want the foreign layer as the base gives it", mt, m.Layers[0].URLs)
		}
	}
}
