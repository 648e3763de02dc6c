package layer

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// checkWindowsLayer verifies r and checks the security every entry carries:
// its binary descriptor, decoded, is the documented SDDL for its kind.
func checkWindowsLayer(t *testing.T, r io.Reader) []string {
	t.Helper()
	entries, err := VerifyWindows(r)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		n := strings.TrimSuffix(e.Header.Name, "/")
		names = append(names, n)
		s := e.Security
		if s == nil {
			if n != "Hives" && n != "Files" {
				t.Errorf("%s: no security descriptor", n)
			}
			continue
		}
		want := FileSDDL
		if attr, _ := strconv.Atoi(e.Header.PAXRecords[paxFileAttr]); attr&attrDirectory != 0 {
			want = DirectorySDDL
		}
		if got := s.SDDL(); got != want {
			t.Errorf("%s: security %s, want %s", n, got, want)
		}
	}
	return names
}

func TestVerifyWindowsRejects(t *testing.T) {
	write := func(hdrs ...*tar.Header) io.Reader {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range hdrs {
			h.Format = tar.FormatPAX
			tw.WriteHeader(h)
		}
		tw.Close()
		return &buf
	}
	dir := func(n string) *tar.Header {
		sd := dirSD
		if n == "Hives" || n == "Files" {
			sd = ""
		}
		return &tar.Header{Name: n + "/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, sd, time.Unix(0, 0))}
	}
	with := func(h *tar.Header, f func(*tar.Header)) *tar.Header { f(h); return h }
	for name, tc := range map[string]struct {
		r    io.Reader
		want string
	}{
		"no Hives":       {write(dir("Files")), "first entry must be the directory Hives"},
		"missing parent": {write(dir("Hives"), dir("Files"), dir("Files/a/b")), "parent Files/a does not come before"},
		"twice":          {write(dir("Hives"), dir("Files"), dir("Files/a"), dir("Files/A")), "written twice"},
		"outside Files":  {write(dir("Hives"), dir("Files"), dir("etc")), "not under Files/"},
		"no rawsd":       {write(dir("Hives"), dir("Files"), &tar.Header{Name: "Files/a/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{paxFileAttr: "16", paxCreationTime: "0"}}), "MSWINDOWS.rawsd missing"},
		"device name":    {write(dir("Hives"), dir("Files"), dir("Files/aux.txt")), `"aux.txt" is a reserved device name`},
		"wcidirs":        {write(dir("Hives"), dir("Files"), dir("Files/a"), dir("Files/a.$wcidirs$")), "reserves for its directory metadata"},
		"year 9999":      {write(dir("Hives"), dir("Files"), with(dir("Files/a"), func(h *tar.Header) { h.ModTime = time.Unix(253402300799, 0) })), "is after 2262-04-11T23:47:16Z"},
		"rawsd on root":  {write(&tar.Header{Name: "Hives/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, dirSD, time.Unix(0, 0))}), "a root with a security descriptor"},
	} {
		if _, err := VerifyWindows(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
	sd := SecurityDescriptor(false)
	sd[0] = 2
	if _, err := ParseSecurityDescriptor(sd); err == nil {
		t.Error("revision 2 accepted")
	}
	sd = SecurityDescriptor(false)
	binary.LittleEndian.PutUint32(sd[16:], uint32(len(sd)+4))
	if _, err := ParseSecurityDescriptor(sd); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("DACL offset outside the blob: %v", err)
	}
}

func TestWindowsLayerFormat(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"bin/agent.exe", "bin/ctl.exe", "ovs/usr/bin/ovs-vsctl.exe", "ovs/usr/bin/libssl.dll", "ovs/driver/ovsext.inf"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(dir, "ovs", "bin")); err != nil {
		t.Fatal(err)
	}
	src, err := tree.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	img := tree.New()
	if err := img.Place(src, tree.Placement{Dest: "/k/antrea/"}); err != nil {
		t.Fatal(err)
	}
	l, err := Build(img, t.TempDir(), Options{Format: Windows, Epoch: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	names := checkWindowsLayer(t, rc)
	want := []string{"Hives", "Files", "Files/k", "Files/k/antrea", "Files/k/antrea/bin", "Files/k/antrea/bin/agent.exe", "Files/k/antrea/bin/ctl.exe",
		"Files/k/antrea/ovs", "Files/k/antrea/ovs/bin", "Files/k/antrea/ovs/driver", "Files/k/antrea/ovs/driver/ovsext.inf",
		"Files/k/antrea/ovs/usr", "Files/k/antrea/ovs/usr/bin", "Files/k/antrea/ovs/usr/bin/libssl.dll", "Files/k/antrea/ovs/usr/bin/ovs-vsctl.exe"}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

func TestWindowsSymlinkToDirectory(t *testing.T) {
	img := tree.New()
	for _, e := range []tree.Entry{
		{Path: "data", Kind: tree.Dir, Mode: 0o755},
		{Path: "link-dir", Kind: tree.Symlink, Link: "data"},
		{Path: "link-file", Kind: tree.Symlink, Link: "missing.txt"},
	} {
		if err := img.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Build(img, t.TempDir(), Options{Format: Windows})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := l.Uncompressed()
	defer rc.Close()
	tr := tar.NewReader(rc)
	attrs := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		attrs[h.Name] = h.PAXRecords["MSWINDOWS.fileattr"] + " " + h.Linkname
	}
	if attrs["Files/link-dir"] != "1040 data" || attrs["Files/link-file"] != "1056 missing.txt" {
		t.Errorf("symlink attributes: %v", attrs)
	}
}

func TestWindowsCaseCollision(t *testing.T) {
	img := tree.New()
	img.Add(tree.Entry{Path: "bin/Agent.exe", Kind: tree.File, Source: emptyFile(t)})
	img.Add(tree.Entry{Path: "bin/agent.exe", Kind: tree.File, Source: emptyFile(t)})
	_, err := Build(img, t.TempDir(), Options{Format: Windows})
	if err == nil || !strings.Contains(err.Error(), "case-insensitive") {
		t.Errorf("got %v, want a case collision error", err)
	}
}

// Names Windows cannot create as written are refused, naming the entry;
// a .wh. name is refused in every format, as it would be a whiteout.
func TestWindowsNamesRefused(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		linux      bool // refused in Linux layers too
	}{
		{"bin/foo:bar", "contains ':'", false},
		{"bin/CON", "reserved device name", false},
		{"bin/aux.txt", "reserved device name", false},
		{"bin/lpt1.log", "reserved device name", false},
		{"bin/COM¹", "reserved device name", false},
		{"bin/com².txt", "reserved device name", false},
		{"bin/lpt³", "reserved device name", false},
		{"bin/CONIN$", "reserved device name", false},
		{"bin/conout$.log", "reserved device name", false},
		{"bin/CON .txt", "reserved device name", false},
		{"bin/nul  .x.y", "reserved device name", false},
		{"bin/f\xff", "is not UTF-8", false},
		{"bin/trail.", "ends with a dot or space", false},
		{"bin/q?x", "contains '?'", false},
		{"bin/x.$wcidirs$", "reserves for its directory metadata files", false},
		{"bin/X.$WCIDirs$", "reserves for its directory metadata files", false},
		{"bin/.wh.keep", "whiteout", true},
		// The backslash's message shows the name as it is, but a name
		// with a control character beside it comes quoted, never raw.
		{"bin/a\\b", `a\b holds a backslash`, false},
		{"bin/a\\\x1b[2Jb", `"a\\\x1b[2Jb" holds a backslash`, false},
	} {
		img := tree.New()
		if err := img.Add(tree.Entry{Path: tc.path, Kind: tree.Dir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		_, err := Build(img, t.TempDir(), Options{Format: Windows})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ShowPath(tc.path)) {
			t.Errorf("windows %s: got %v, want an error naming it with %q", tc.path, err, tc.want)
		}
		_, err = Build(img, t.TempDir(), Options{Format: Linux})
		if tc.linux != (err != nil) {
			t.Errorf("linux %s: got %v", tc.path, err)
		}
	}
	// Names that only look close are fine.
	img := tree.New()
	for _, p := range []string{"bin/console.exe", "bin/com10", "bin/com⁴", "bin/auxiliary", "bin/a.b.c", "bin/x.wh.y", "bin/conin", "bin/CON$", "bin/ con", "bin/$wcidirs$", "bin/x.$wcidirs$.txt"} {
		if err := img.Add(tree.Entry{Path: p, Kind: tree.Dir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build(img, t.TempDir(), Options{Format: Windows}); err != nil {
		t.Error(err)
	}
}

// Windows' importer reads each time through Unix nanoseconds: an epoch
// after 2262 is refused in both Windows formats, the last one it reads is
// written.
func TestWindowsEpochRange(t *testing.T) {
	img := tree.New()
	if err := img.Add(tree.Entry{Path: "bin", Kind: tree.Dir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{Windows, WindowsBase} {
		_, err := Build(img, t.TempDir(), Options{Format: f, Epoch: time.Unix(253402300799, 0)})
		if err == nil || !strings.Contains(err.Error(), "epoch 253402300799 (9999-12-31T23:59:59Z) is after 2262-04-11T23:47:16Z") {
			t.Errorf("%s: got %v, want the epoch refused", f, err)
		}
		if _, err := Build(img, t.TempDir(), Options{Format: f, Epoch: time.Unix(math.MaxInt64/int64(time.Second), 0)}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Build(img, t.TempDir(), Options{Format: Linux, Epoch: time.Unix(253402300799, 0)}); err != nil {
		t.Errorf("linux: %v", err)
	}
}

// A base layer is Files/ alone, with no Windows records, like Microsoft's
// host-process base.
func TestWindowsBaseLayer(t *testing.T) {
	img := tree.New()
	for _, e := range []tree.Entry{
		{Path: "Windows/System32/config/SYSTEM", Kind: tree.File, Mode: 0o644, Source: emptyFile(t)},
		{Path: "License/NOTICE.txt", Kind: tree.File, Mode: 0o644, Source: emptyFile(t)},
	} {
		if err := img.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Build(img, t.TempDir(), Options{Format: WindowsBase})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := l.Uncompressed()
	defer rc.Close()
	var buf bytes.Buffer
	io.Copy(&buf, rc)
	hdrs, err := VerifyWindowsBase(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hdrs {
		names = append(names, h.Name)
	}
	want := "Files/ Files/License/ Files/License/NOTICE.txt Files/Windows/ Files/Windows/System32/ Files/Windows/System32/config/ Files/Windows/System32/config/SYSTEM"
	if strings.Join(names, " ") != want {
		t.Errorf("entries %v, want %s", names, want)
	}
	// It is not a layer VerifyWindows accepts: no Hives.
	if _, err := VerifyWindows(bytes.NewReader(buf.Bytes())); err == nil {
		t.Error("VerifyWindows accepted a base layer")
	}
}

// The directory and file descriptors, decoded from their bytes, grant what
// BuildKit's do: Administrators and SYSTEM full control, Users read and
// execute, and on directories Users may add files and subdirectories (to
// the directory and, by CI, to its subdirectories) while CREATOR OWNER
// gets full control of what it creates (inherit-only, to files and
// directories). Files give Users no write.
func TestSecurityDescriptorsDecoded(t *testing.T) {
	dir, err := ParseSecurityDescriptor(SecurityDescriptor(true))
	if err != nil {
		t.Fatal(err)
	}
	file, err := ParseSecurityDescriptor(SecurityDescriptor(false))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*SecurityInfo{"directory": dir, "file": file} {
		if s.Owner != "S-1-5-32-544" || s.Group != "S-1-5-18" {
			t.Errorf("%s: owner %s group %s, want Administrators and SYSTEM", name, s.Owner, s.Group)
		}
		if s.Control != 0x8004 {
			t.Errorf("%s: control %#x, want self-relative with a DACL (0x8004)", name, s.Control)
		}
		if s.Grants["S-1-5-32-544"] != 0x1F01FF || s.Grants["S-1-5-18"] != 0x1F01FF {
			t.Errorf("%s: Administrators %#x, SYSTEM %#x, want full control", name, s.Grants["S-1-5-32-544"], s.Grants["S-1-5-18"])
		}
	}
	const addFile, addSubdir, write = 0x2, 0x4, 0x2 | 0x4 | 0x10 | 0x100 | 0x10000 | 0x40000 | 0x80000
	if g := dir.Grants["S-1-5-32-545"]; g&addFile == 0 || g&addSubdir == 0 || g&0x1200A9 != 0x1200A9 {
		t.Errorf("directory: Users get %#x, want read/execute (0x1200a9), add file and add subdirectory", g)
	}
	if g := file.Grants["S-1-5-32-545"]; g != 0x1200A9 || g&write != 0 {
		t.Errorf("file: Users get %#x, want read/execute only", g)
	}
	inheritedBy := func(s *SecurityInfo, sid string, flag uint8) uint32 {
		var m uint32
		for _, a := range s.ACEs {
			if a.SID == sid && a.Type == accessAllowedAce && a.Flags&flag != 0 {
				m |= a.Mask
			}
		}
		return m
	}
	if m := inheritedBy(dir, "S-1-5-32-545", containerInheritAce); m&(addFile|addSubdir) != addFile|addSubdir {
		t.Errorf("subdirectories inherit %#x for Users, want add file and add subdirectory", m)
	}
	if m := inheritedBy(dir, "S-1-5-32-545", objectInheritAce); m != 0x1200A9 {
		t.Errorf("files inherit %#x for Users, want read/execute only", m)
	}
	var co []ACE
	for _, a := range dir.ACEs {
		if a.SID == "S-1-3-0" {
			co = append(co, a)
		}
	}
	if len(co) != 1 || co[0].Mask != 0x10000000 || co[0].Flags != objectInheritAce|containerInheritAce|inheritOnlyAce {
		t.Errorf("CREATOR OWNER ACEs %+v, want one GENERIC_ALL, OI|CI|IO", co)
	}
	if _, ok := dir.Grants["S-1-3-0"]; ok {
		t.Error("CREATOR OWNER is granted on the directory itself; its ACE must be inherit-only")
	}
	for _, a := range file.ACEs {
		if a.Flags != 0 {
			t.Errorf("file ACE %+v carries inheritance flags", a)
		}
	}
	if got := dir.SDDL(); got != DirectorySDDL {
		t.Errorf("directory descriptor is %s, documented as %s", got, DirectorySDDL)
	}
	if got := file.SDDL(); got != FileSDDL {
		t.Errorf("file descriptor is %s, documented as %s", got, FileSDDL)
	}
}

func TestSDDLRendering(t *testing.T) {
	sd, err := encodeSecurityDescriptor("S-1-5-21-1-2-3-500", "S-1-1-0", seSelfRelative|seDaclPresent|seDaclProtected|seDaclAutoInherit, []ACE{
		{accessDeniedAce, inheritedAce, 0x80000000 | 0x20000, "S-1-5-11"},
		{accessAllowedAce, noPropagateInherit, 0x100000, "S-1-5-18"},
		{accessAllowedAce, 0, 0x000F003F, "S-1-5-32-544"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSecurityDescriptor(sd)
	if err != nil {
		t.Fatal(err)
	}
	want := "O:S-1-5-21-1-2-3-500G:WDD:PAI(D;ID;GRRC;;;AU)(A;NP;0x100000;;;SY)(A;;KA;;;BA)"
	if got := s.SDDL(); got != want {
		t.Errorf("SDDL %s, want %s", got, want)
	}
	if _, err := encodeSecurityDescriptor("S-1-5-x", "S-1-5-18", 0, nil); err == nil {
		t.Error("a malformed SID was encoded")
	}
}

// Names NTFS's $UpCase maps alike collide, and so do those Unicode case
// folding maps alike, which older volumes' tables and other tools take
// for one (collisionKey); links still find their targets as NTFS does.
func TestWindowsNamesCompareAsNTFS(t *testing.T) {
	for _, tc := range []struct {
		a, b          string
		ntfs, collide bool
		why           string
	}{
		{"agent.exe", "AGENT.EXE", true, true, "ASCII"},
		{"σ", "Σ", true, true, "Greek sigma and its capital"},
		{"ς", "σ", false, true, "final sigma maps to itself in Windows 7+ $UpCase, to Σ in Vista's"},
		{"ς", "Σ", false, true, "final sigma maps to itself in Windows 7+ $UpCase, to Σ in Vista's"},
		{"\u212A", "k", false, true, "KELVIN SIGN is its own uppercase, and folds to k"},
		{"\u212A", "K", false, true, "KELVIN SIGN is not LATIN K, and folds to it"},
		{"\u212B", "å", false, true, "ANGSTROM SIGN is its own uppercase, and folds to å"},
		{"k", "K", true, true, "ASCII"},
		{"é", "É", true, true, "Latin-1"},
		{"ÿ", "Ÿ", true, true, "ÿ uppercases out of Latin-1"},
		{"ǆ", "Ǆ", true, true, "digraph, lower and upper"},
		{"ǅ", "Ǆ", false, true, "titlecase digraph maps to itself, and folds"},
		{"ı", "I", false, false, "dotless i maps to itself, and folds only to itself"},
		{"ſ", "S", false, true, "long s maps to itself, and folds to s"},
		{"µ", "Μ", false, true, "micro sign maps to itself, and folds to μ"},
		{"ß", "ẞ", false, true, "no simple uppercase for ß, but they fold together"},
		{"ß", "SS", false, false, "full case folding is not simple folding"},
		{"д", "Д", true, true, "Cyrillic"},
		{"ⰰ", "Ⰰ", true, true, "Glagolitic (Windows Vista+)"},
		{"ꙁ", "Ꙁ", true, true, "Cyrillic Extended-B (Windows 7+)"},
		{"ⓐ", "Ⓐ", true, true, "circled letters"},
		{"ⅻ", "Ⅻ", true, true, "Roman numerals"},
		{"ａ", "Ａ", true, true, "fullwidth"},
		{"ა", "Ა", false, true, "Georgian Mtavruli came in Unicode 11"},
		{"ꭰ", "Ꭰ", false, true, "Cherokee small letters came in Unicode 8"},
		{"𐐨", "𐐀", false, true, "outside the BMP: surrogates map to themselves"},
		{"a", "b", false, false, "two letters"},
	} {
		if got := NTFSKey(tc.a) == NTFSKey(tc.b); got != tc.ntfs {
			t.Errorf("%s and %s (%s): one name to NTFS %v, want %v", tc.a, tc.b, tc.why, got, tc.ntfs)
		}
		img := tree.New()
		for _, p := range []string{"d/" + tc.a, "d/" + tc.b} {
			if err := img.Add(tree.Entry{Path: p, Kind: tree.File, Source: emptyFile(t)}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Build(img, t.TempDir(), Options{Format: Windows})
		if tc.collide != (err != nil) {
			t.Errorf("%s and %s (%s): collide %v, got %v", tc.a, tc.b, tc.why, tc.collide, err)
		}
		if err != nil && !strings.Contains(err.Error(), "case-insensitive") {
			t.Errorf("%s and %s: %v", tc.a, tc.b, err)
		}
		// The verifier compares names the same way.
		_, err = VerifyWindows(rawWindowsTar(t, "Files/d", "Files/d/"+tc.a, "Files/d/"+tc.b))
		if tc.collide != (err != nil) {
			t.Errorf("verify %s and %s (%s): collide %v, got %v", tc.a, tc.b, tc.why, tc.collide, err)
		}
	}
}

// rawWindowsTar writes directories with valid Windows records, for the
// verifier.
func rawWindowsTar(t *testing.T, dirs ...string) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, n := range append([]string{"Hives", "Files"}, dirs...) {
		sd := dirSD
		if i < 2 {
			sd = ""
		}
		if err := tw.WriteHeader(&tar.Header{Name: n + "/", Typeflag: tar.TypeDir, Format: tar.FormatPAX, PAXRecords: windowsRecords(attrDirectory, sd, time.Unix(0, 0))}); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return &buf
}

// The mapping is the $UpCase of Windows 7 and later: 973 code units map
// to another one (ntfs-3g's reconstruction of the table has 973 too), every
// result is in the BMP, and mapping twice changes nothing.
func TestNTFSUpcaseTable(t *testing.T) {
	n := 0
	for c := rune(0); c <= 0xFFFF; c++ {
		if c >= 0xD800 && c < 0xE000 {
			continue
		}
		u := ntfsUpper(c)
		if u != c {
			n++
		}
		if u > 0xFFFF || ntfsUpper(u) != u {
			t.Errorf("U+%04X maps to U+%04X, which maps on", c, u)
		}
	}
	if n != 973 {
		t.Errorf("%d code units map to another, the Windows 7+ table maps 973", n)
	}
}

// collisionKey refuses at least what NTFS takes for one name: every
// pair $UpCase maps alike is one case folding orbit.
func TestCollisionKeyRefinesNTFS(t *testing.T) {
	for c := rune(0); c <= 0xFFFF; c++ {
		if c >= 0xD800 && c < 0xE000 {
			continue
		}
		if u := ntfsUpper(c); foldRune(u) != foldRune(c) {
			t.Errorf("NTFS maps U+%04X to U+%04X, which collisionKey keeps apart", c, u)
		}
	}
}

// Symlink targets are read as Windows reads them, '\' a separator like
// '/': absolute ones, drive ones and those that climb out of the image's
// C:\ are refused; relative ones are written with '/'.
func TestWindowsSymlinkTargets(t *testing.T) {
	for _, tc := range []struct {
		target, want string // want: "" if accepted, else part of the error
	}{
		{`..\..\Windows`, "leaves the image root"},
		{`../../Windows`, "leaves the image root"},
		{`\Windows`, "absolute"},
		{`/Windows`, "absolute"},
		{`\\server\share\x`, "absolute"},
		{`C:\Windows`, "drive"},
		{`C:Windows`, "drive"},
		{`c:/windows`, "drive"},
		{`file.txt:stream`, "stream"},
		{`data\..\..\..\x`, "after a named component"},
		{`..\Data`, ""},
		{`..\data\x.dll`, ""},
		{`.\sub`, ""},
		{strings.Repeat("x/", 2045), ""},
		{strings.Repeat("x/", 2045) + "y", "symlink target of 4091 UTF-16 units: a Windows link holds 4090"},
	} {
		img := tree.New()
		for _, e := range []tree.Entry{
			{Path: "data", Kind: tree.Dir, Mode: 0o755},
			{Path: "a/link", Kind: tree.Symlink, Link: tc.target},
		} {
			if err := img.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		l, err := Build(img, t.TempDir(), Options{Format: Windows})
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "a/link") {
				t.Errorf("%s: got %v, want an error naming a/link with %q", tc.target, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.target, err)
			continue
		}
		rc, _ := l.Uncompressed()
		entries, err := VerifyWindows(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		for _, e := range entries {
			if e.Header.Name != "Files/a/link" {
				continue
			}
			// As a Windows link holds it: '\' only (a '/' fails to
			// resolve), no "." or empty components.
			want := strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(tc.target, "/", `\`), `.\`), `\`)
			if e.Header.Linkname != want {
				t.Errorf("%s: written as %q, want %q", tc.target, e.Header.Linkname, want)
			}
			// ..\Data names the directory data: NTFS resolves it whatever the case.
			if dirLink := tc.target == `..\Data`; dirLink != (e.Header.PAXRecords[paxFileAttr] == "1040") {
				t.Errorf("%s: attributes %s", tc.target, e.Header.PAXRecords[paxFileAttr])
			}
		}
	}
}

func TestVerifyWindowsRefusesEscapingLinks(t *testing.T) {
	for _, target := range []string{`C:\Windows`, "/Windows", "../../x"} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range []*tar.Header{
			{Name: "Hives/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, "", time.Unix(0, 0))},
			{Name: "Files/", Typeflag: tar.TypeDir, PAXRecords: windowsRecords(attrDirectory, "", time.Unix(0, 0))},
			{Name: "Files/link", Typeflag: tar.TypeSymlink, Linkname: target, PAXRecords: windowsRecords(attrReparsePoint|attrArchive, fileSD, time.Unix(0, 0))},
		} {
			h.Format = tar.FormatPAX
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
		}
		tw.Close()
		if _, err := VerifyWindows(&buf); err == nil || !strings.Contains(err.Error(), "Files/link") {
			t.Errorf("%s: got %v, want the link refused", target, err)
		}
	}
}

// The verifier finds a parent as NTFS does: ſ is not s there, so Files/s/x
// after Files/ſ has no parent before it.
func TestVerifyParentAsNTFSFindsIt(t *testing.T) {
	if _, err := VerifyWindows(rawWindowsTar(t, "Files/ſ", "Files/s/x")); err == nil || !strings.Contains(err.Error(), "parent Files/s does not come before it") {
		t.Errorf("got %v", err)
	}
}

// emptyFile is an empty regular file, a source for an entry whose content
// does not matter: a layer copies only regular files (regfile.Open).
func emptyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
