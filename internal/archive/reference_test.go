package archive

import (
	"archive/tar"
	"context"
	"os/exec"
	"regexp"
	"testing"
)

// gnuTar unpacks the archive at src into dir with GNU tar, or skips the
// test where there is none (tar is in every Debian image, CI's too).
func gnuTar(t *testing.T, src, dir string, args ...string) {
	t.Helper()
	tarPath, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar on PATH")
	}
	if out, err := exec.Command(tarPath, "--version").Output(); err != nil || !regexp.MustCompile(`GNU tar`).Match(out) {
		t.Skip("tar on PATH is not GNU tar")
	}
	cmd := exec.Command(tarPath, append([]string{"-xf", src, "-C", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GNU tar: %v\n%s", err, out)
	}
}

// modes drops the permission bits from a snapshot: pallet writes its
// own (0755 or 0644), GNU tar the header's under the umask.
var modes = regexp.MustCompile(`^(file|dir) [0-7]+ ?`)

func shapes(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = modes.ReplaceAllString(v, "$1 ")
	}
	return out
}

// TestLaterEntryReplacesAsGNUTar: a tar holding a name twice (appended
// with tar -r, or written so) unpacks to the later entry, as GNU tar and
// bsdtar unpack it, whatever the earlier one was, but a directory: a
// symlink is replaced, not written through, and a directory replaces a
// file or a symlink.
func TestLaterEntryReplacesAsGNUTar(t *testing.T) {
	for _, tt := range []struct {
		name string
		ents []ent
		want map[string]string
	}{
		{"file then symlink", []ent{
			{name: "t", body: "target"},
			{name: "a", body: "one"},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
		}, map[string]string{"t": "file target", "a": "-> t"}},
		{"symlink then file", []ent{
			{name: "t", body: "target"},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
			{name: "a", body: "two"},
		}, map[string]string{"t": "file target", "a": "file two"}},
		{"symlink then symlink", []ent{
			{name: "t", body: "target"},
			{name: "u", body: "u"},
			{name: "a", typ: tar.TypeSymlink, link: "t"},
			{name: "a", typ: tar.TypeSymlink, link: "u"},
		}, map[string]string{"t": "file target", "u": "file u", "a": "-> u"}},
		{"symlink then hard link", []ent{
			{name: "t", body: "target"},
			{name: "a", typ: tar.TypeSymlink, link: "missing"},
			{name: "a", typ: tar.TypeLink, link: "t"},
		}, map[string]string{"t": "file target", "a": "file target"}},
		{"symlink to a directory then a directory", []ent{
			{name: "d/x", body: "x"},
			{name: "a", typ: tar.TypeSymlink, link: "d"},
			{name: "a/", typ: tar.TypeDir},
			{name: "a/y", body: "y"},
		}, map[string]string{"d": "dir ", "d/x": "file x", "a": "dir ", "a/y": "file y"}},
		{"symlink to itself then a directory in the open one", []ent{
			{name: "a/b/f", body: "x"},
			{name: "a/b/l", typ: tar.TypeSymlink, link: "."},
			{name: "a/b/l/", typ: tar.TypeDir},
		}, map[string]string{"a": "dir ", "a/b": "dir ", "a/b/f": "file x", "a/b/l": "dir "}},
		{"file then directory", []ent{
			{name: "a", body: "file"},
			{name: "a/", typ: tar.TypeDir},
			{name: "a/x", body: "x"},
		}, map[string]string{"a": "dir ", "a/x": "file x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, Tar, build(t, Tar, tt.ents))
			if err := Extract(context.Background(), s.src, Tar, s.out, Options{}); err != nil {
				t.Fatal(err)
			}
			s.checkContained(t)
			diffTrees(t, shapes(snapshot(t, s.out)), tt.want)

			ref := t.TempDir()
			gnuTar(t, s.src, ref)
			diffTrees(t, shapes(snapshot(t, ref)), tt.want)
		})
	}
}
