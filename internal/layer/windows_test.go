package layer

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// checkWindowsLayer verifies r and checks the security every entry carries.
func checkWindowsLayer(t *testing.T, r io.Reader) []string {
	t.Helper()
	entries, err := VerifyWindows(r)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Header.Name, "/"))
		s := e.Security
		if s == nil {
			if n := strings.TrimSuffix(e.Header.Name, "/"); n != "Hives" && n != "Files" {
				t.Errorf("%s: no security descriptor", n)
			}
			continue
		}
		if s.Owner != "S-1-5-32-544" || s.Group != "S-1-5-32-544" {
			t.Errorf("%s: owner %s group %s", e.Header.Name, s.Owner, s.Group)
		}
		if s.Grants["S-1-5-32-544"] != 0x1f01ff || s.Grants["S-1-5-18"] != 0x1f01ff || s.Grants["S-1-5-32-545"] != 0x1200a9 {
			t.Errorf("%s: DACL grants %v", e.Header.Name, s.Grants)
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
	for name, tc := range map[string]struct {
		r    io.Reader
		want string
	}{
		"no Hives":       {write(dir("Files")), "first entry must be the directory Hives"},
		"missing parent": {write(dir("Hives"), dir("Files"), dir("Files/a/b")), "parent Files/a does not come before"},
		"twice":          {write(dir("Hives"), dir("Files"), dir("Files/a"), dir("Files/A")), "written twice"},
		"outside Files":  {write(dir("Hives"), dir("Files"), dir("etc")), "not under Files/"},
		"no rawsd":       {write(dir("Hives"), dir("Files"), &tar.Header{Name: "Files/a/", Typeflag: tar.TypeDir, PAXRecords: map[string]string{paxFileAttr: "16", paxCreationTime: "0"}}), "MSWINDOWS.rawsd missing"},
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
	img.Add(tree.Entry{Path: "bin/Agent.exe", Kind: tree.File, Source: os.DevNull})
	img.Add(tree.Entry{Path: "bin/agent.exe", Kind: tree.File, Source: os.DevNull})
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
		{"bin/trail.", "ends with a dot or space", false},
		{"bin/q?x", "contains '?'", false},
		{"bin/.wh.keep", "whiteout", true},
	} {
		img := tree.New()
		if err := img.Add(tree.Entry{Path: tc.path, Kind: tree.Dir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		_, err := Build(img, t.TempDir(), Options{Format: Windows})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("windows %s: got %v, want an error naming it with %q", tc.path, err, tc.want)
		}
		_, err = Build(img, t.TempDir(), Options{Format: Linux})
		if tc.linux != (err != nil) {
			t.Errorf("linux %s: got %v", tc.path, err)
		}
	}
	// Names that only look close are fine.
	img := tree.New()
	for _, p := range []string{"bin/console.exe", "bin/com10", "bin/auxiliary", "bin/a.b.c", "bin/x.wh.y"} {
		if err := img.Add(tree.Entry{Path: p, Kind: tree.Dir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build(img, t.TempDir(), Options{Format: Windows}); err != nil {
		t.Error(err)
	}
}

// A base layer is Files/ alone, with no Windows records, like Microsoft's
// host-process base.
func TestWindowsBaseLayer(t *testing.T) {
	img := tree.New()
	for _, e := range []tree.Entry{
		{Path: "Windows/System32/config/SYSTEM", Kind: tree.File, Mode: 0o644, Source: os.DevNull},
		{Path: "License/NOTICE.txt", Kind: tree.File, Mode: 0o644, Source: os.DevNull},
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
