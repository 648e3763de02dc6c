package output

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// fileState is what a write to a file changes: its inode, size and
// change time (which a rename onto it or a rewrite sets anew).
type fileState struct {
	ino, size, ctime int64
}

func snapshotLayout(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		out[p] = fileState{ino: int64(st.Ino), size: info.Size(), ctime: st.Ctim.Nano()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hashFile is the digest memory at its simplest: every file read.
func hashFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]), nil
}

// Writing the same images into an earlier layout changes no file of it,
// index.json included; writing other images replaces the index and
// removes the blobs only the old one named; a damaged blob is replaced.
func TestLayoutUpdatedInPlace(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	images := testImages(t)
	var learned []string
	l := &Layout{Dir: out, Digests: hashFile, Learn: func(path, sum string) error {
		if got, err := hashFile(path); err != nil || got != sum {
			t.Errorf("learned %s as %s, its content is %s (%v)", path, sum, got, err)
		}
		learned = append(learned, path)
		return nil
	}}
	if err := l.Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	if len(learned) != 2 {
		t.Errorf("%d layer blobs learned, want the 2 written", len(learned))
	}
	before := snapshotLayout(t, out)
	learned = nil
	if err := l.Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	after := snapshotLayout(t, out)
	for p, st := range before {
		if after[p] != st {
			t.Errorf("%s was rewritten by a write that changed nothing", p)
		}
	}
	if len(after) != len(before) || len(learned) != 0 {
		t.Errorf("%d files before, %d after; %d blobs learned", len(before), len(after), len(learned))
	}
	if entries, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".out.new-*")); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}

	// Damage a layer blob in place: the next write replaces it.
	lays, _ := images[0].Image.Layers()
	d, _ := lays[0].Digest()
	blob := filepath.Join(out, "blobs", "sha256", d.Hex)
	rewrite(t, blob)
	if err := l.Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	if got, _ := hashFile(blob); got != d.Hex {
		t.Errorf("the damaged blob was kept: its content is %s", got)
	}

	other, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), []Image{{Repository: "example.com/app", Tags: []string{"2"}, Image: other}}); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index %v (%v), want one image", m, err)
	}
	want, _ := other.Digest()
	if m.Manifests[0].Digest != want {
		t.Errorf("the index names %s, want %s", m.Manifests[0].Digest, want)
	}
	if _, err := os.Stat(blob); err == nil {
		t.Error("a blob only the old index named is still there")
	}
	// Every blob left is named by the new image: manifest, config, layer.
	var names []string
	files, _ := os.ReadDir(filepath.Join(out, "blobs", "sha256"))
	for _, f := range files {
		names = append(names, f.Name())
	}
	wantNames := []string{want.Hex}
	cfg, _ := other.ConfigName()
	wantNames = append(wantNames, cfg.Hex)
	ol, _ := other.Layers()
	ld, _ := ol[0].Digest()
	wantNames = append(wantNames, ld.Hex)
	slices.Sort(names)
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("blobs %v, want %v", names, wantNames)
	}
	verifyLayout(t, out)
}

// rewrite flips the first byte of the file at p in place.
func rewrite(t *testing.T, p string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[0] ^= 0xff
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
}

// verifyLayout checks every blob against its name.
func verifyLayout(t *testing.T, dir string) {
	t.Helper()
	files, _ := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	for _, f := range files {
		if got, err := hashFile(filepath.Join(dir, "blobs", "sha256", f.Name())); err != nil || got != f.Name() {
			t.Errorf("blob %s holds %s (%v)", f.Name(), got, err)
		}
	}
}

// A layout another tool made (skopeo and umoci write a compact
// oci-layout) keeps its oci-layout file across an update: it is the file
// builds lock, and replacing it would let a second build take the lock
// while the first still holds it on the old file.
func TestLayoutUpdateKeepsMarker(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	l := &Layout{Dir: out}
	images := testImages(t)
	if err := l.Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(out, "oci-layout")
	if err := os.WriteFile(marker, []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	other, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), []Image{{Repository: "app", Tags: []string{"2"}, Image: other}}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the update replaced oci-layout, the file builds lock")
	}
	if _, err := layout.FromPath(out); err != nil {
		t.Errorf("the layout no longer reads: %v", err)
	}
}

// An update whose index.json cannot be put in place leaves the layout as
// it was: the old index, and no blob it does not name.
func TestLayoutUpdateFailingLeavesNoStrays(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	l := &Layout{Dir: out}
	if err := l.Write(context.Background(), testImages(t)); err != nil {
		t.Fatal(err)
	}
	before := snapshotLayout(t, out)
	renameIndex = func(string, string) error { return syscall.EIO }
	defer func() { renameIndex = os.Rename }()
	other, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(context.Background(), []Image{{Repository: "example.com/app", Tags: []string{"2"}, Image: other}}); err == nil {
		t.Fatal("the update succeeded without its index")
	}
	after := snapshotLayout(t, out)
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("left in the layout, named by no index: %s", p)
		}
	}
	for p, st := range before {
		if after[p] != st {
			t.Errorf("%s changed", p)
		}
	}
}
