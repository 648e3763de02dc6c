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
	rec := func(attr int) map[string]string { return windowsRecords(attr, dirSD, time.Unix(0, 0)) }
	dir := func(n string) *tar.Header {
		return &tar.Header{Name: n + "/", Typeflag: tar.TypeDir, PAXRecords: rec(attrDirectory)}
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
