package modhash

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/pallet-dev/pallet/internal/fixture/gomod"
)

// sameResult fails unless got and want are the same hash, or failures
// of the same type and message.
func sameResult(t *testing.T, what, got string, gotErr error, want string, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%s: got %q, %v; dirhash gives %q, %v", what, got, gotErr, want, wantErr)
	}
	if wantErr != nil {
		if fmt.Sprintf("%T", gotErr) != fmt.Sprintf("%T", wantErr) || gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: failed with %T %q, dirhash with %T %q", what, gotErr, gotErr, wantErr, wantErr)
		}
		return
	}
	if got != want {
		t.Fatalf("%s: hashes to %s, dirhash to %s", what, got, want)
	}
}

func checkZip(t *testing.T, zipFile string) {
	t.Helper()
	got, gotErr := Zip(zipFile)
	want, wantErr := dirhash.HashZip(zipFile, dirhash.Hash1)
	sameResult(t, zipFile, got, gotErr, want, wantErr)
}

func checkDir(t *testing.T, dir, prefix string) {
	t.Helper()
	got, gotErr := Dir(dir, prefix)
	want, wantErr := dirhash.HashDir(dir, prefix, dirhash.Hash1)
	sameResult(t, dir, got, gotErr, want, wantErr)
}

// TestModuleCache hashes real module zips, and the trees the go command
// unpacked from them, as dirhash does.
func TestModuleCache(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	modcache := strings.TrimSpace(string(out))
	download := filepath.Join(modcache, "cache", "download")
	var zips []string
	filepath.WalkDir(download, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".zip") {
			zips = append(zips, p)
		}
		return nil
	})
	if len(zips) == 0 {
		t.Skipf("no module zips under %s", download)
	}
	// Twenty spread over the cache, not the first module's versions.
	slices.Sort(zips)
	var picked []string
	for i := range 20 {
		if j := i * len(zips) / 20; len(picked) == 0 || picked[len(picked)-1] != zips[j] {
			picked = append(picked, zips[j])
		}
	}
	dirs := 0
	for _, z := range picked {
		checkZip(t, z)
		// <download>/<escaped path>/@v/<version>.zip was unpacked into
		// <modcache>/<escaped path>@<version>.
		rel, _ := filepath.Rel(download, z)
		escPath, file, ok := strings.Cut(filepath.ToSlash(rel), "/@v/")
		if !ok {
			continue
		}
		escVersion := strings.TrimSuffix(file, ".zip")
		dir := filepath.Join(modcache, filepath.FromSlash(escPath)+"@"+escVersion)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		path, err1 := module.UnescapePath(escPath)
		version, err2 := module.UnescapeVersion(escVersion)
		if err1 != nil || err2 != nil {
			continue
		}
		checkDir(t, dir, path+"@"+version)
		dirs++
	}
	t.Logf("%d zips and %d unpacked trees hashed", len(picked), dirs)
}

// moduleSource writes a module's files under a new directory: an empty
// file, one in a subdirectory, one that compresses well.
func moduleSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	for name, content := range map[string]string{
		"go.mod":        "module example.com/m\n",
		"LICENSE":       "Permission is hereby granted, free of charge.\n",
		"empty.go":      "",
		"sub/a.go":      "package sub\n",
		"big/big.txt":   strings.Repeat("compressible text ", 20000),
		"sub/deep/b.go": "package deep\n",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// entry is one entry of a zip written by writeZip.
type entry struct {
	name    string
	content string
	method  uint16
}

func writeZip(t *testing.T, entries []entry) string {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, e := range entries {
		f, err := w.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(e.content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.zip")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// corrupt writes zipFile again with the byte at the middle of the first
// occurrence of marker changed.
func corrupt(t *testing.T, zipFile, marker string) {
	t.Helper()
	data, err := os.ReadFile(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		t.Fatalf("%q not in %s", marker, zipFile)
	}
	data[i+len(marker)/2] ^= 0xff
	if err := os.WriteFile(zipFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestZip(t *testing.T) {
	v := module.Version{Path: "example.com/m", Version: "v1.0.0"}
	created := filepath.Join(t.TempDir(), "created.zip")
	f, err := os.Create(created)
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(f, v, moduleSource(t)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	checkZip(t, created)

	prefix := "example.com/m@v1.0.0/"
	stored := []entry{
		{prefix + "go.mod", "module example.com/m\n", zip.Deflate},
		{prefix + "stored.txt", "kept as it is, uncompressed", zip.Store},
		{prefix + "empty", "", zip.Store},
		{prefix + "empty.deflated", "", zip.Deflate},
	}
	checkZip(t, writeZip(t, stored))
	// HashZip hashes a name held twice twice, with its last entry.
	checkZip(t, writeZip(t, append(stored, entry{prefix + "stored.txt", "again", zip.Deflate})))

	// A stored entry changed fails its CRC (zip.ErrChecksum).
	bad := writeZip(t, stored)
	corrupt(t, bad, "uncompressed")
	if _, err := Zip(bad); err != zip.ErrChecksum {
		t.Fatalf("a changed stored entry: %v, want zip.ErrChecksum", err)
	}
	checkZip(t, bad)

	// A deflate stream changed fails to inflate (flate.CorruptInputError).
	bad = writeZip(t, []entry{{prefix + "a", strings.Repeat("abcdefgh", 4000), zip.Deflate}})
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	// The compressed data starts after the local header (30 bytes and
	// the name): its first bytes hold the block header and code lengths.
	start := 30 + len(prefix+"a")
	for i := start; i < start+8; i++ {
		data[i] = 0xff
	}
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Zip(bad); err == nil || fmt.Sprintf("%T", err) != "flate.CorruptInputError" {
		t.Fatalf("a corrupt deflate stream: %T %v, want a flate.CorruptInputError", err, err)
	}
	checkZip(t, bad)

	// Not a zip (zip.ErrFormat), and no file.
	notZip := filepath.Join(t.TempDir(), "not.zip")
	if err := os.WriteFile(notZip, []byte("not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkZip(t, notZip)
	checkZip(t, filepath.Join(t.TempDir(), "missing.zip"))
}

func TestDir(t *testing.T) {
	src := moduleSource(t)
	checkDir(t, src, "example.com/m@v1.0.0")
	// HashDir follows a link to a file, and fails on one that leads
	// nowhere as os.Open does.
	if err := os.Symlink("LICENSE", filepath.Join(src, "COPYING")); err != nil {
		t.Fatal(err)
	}
	checkDir(t, src, "example.com/m@v1.0.0")
	if err := os.Symlink("nowhere", filepath.Join(src, "dangling")); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(src, "example.com/m@v1.0.0"); err == nil {
		t.Fatal("a dangling link was hashed")
	}
	checkDir(t, src, "example.com/m@v1.0.0")
	// Not a directory, and none at all.
	checkDir(t, filepath.Join(src, "LICENSE"), "example.com/m@v1.0.0")
	checkDir(t, filepath.Join(src, "missing"), "example.com/m@v1.0.0")
}

// TestGarbagePerFile holds what hashing a module allocates per file to
// well under the 32 KiB buffer (and, for a zip, the decoder) dirhash
// takes for each: proving the modules of a binary reads tens of
// thousands of files, with the licence classifier's tens of megabytes
// live for every collection to scan.
func TestGarbagePerFile(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties sync.Pool at random")
	}
	const files = 2000
	src, v := gomod.ManyFiles(t, files, nil)
	zipFile, _ := gomod.Zip(t, src, v)
	for _, tc := range []struct {
		name string
		hash func() (string, error)
	}{
		{"Zip", func() (string, error) { return Zip(zipFile) }},
		{"Dir", func() (string, error) { return Dir(src, v.Path+"@"+v.Version) }},
	} {
		perFile := gomod.GarbagePerFile(t, files, func() error { _, err := tc.hash(); return err })
		t.Logf("%s: %d bytes allocated per file", tc.name, perFile)
		if perFile > 3072 {
			t.Errorf("%s allocated %d bytes per file, want at most 3072", tc.name, perFile)
		}
	}
}

// CheckZip passes a module zip as the go command makes one and refuses,
// naming the entry, one that is not laid out as module v's, whatever it
// hashes to.
func TestCheckZip(t *testing.T) {
	v := module.Version{Path: "example.com/m", Version: "v1.0.0"}
	zipFile, _ := gomod.Zip(t, moduleSource(t), v)
	if err := CheckZip(v, zipFile); err != nil {
		t.Fatalf("a zip the go command would make: %v", err)
	}
	if err := CheckZip(module.Version{Path: v.Path, Version: "v1.0.1"}, zipFile); err == nil || !strings.Contains(err.Error(), "example.com/m@v1.0.0/go.mod") {
		t.Errorf("another version's zip: %v, want go.mod refused", err)
	}
	prefix := "example.com/m@v1.0.0/"
	for _, tc := range []struct {
		name, refused string
		entries       []entry
	}{
		{"outside the module", "elsewhere/x.go", []entry{{prefix + "go.mod", "module example.com/m\n", zip.Deflate}, {"elsewhere/x.go", "package x\n", zip.Deflate}}},
		{"a name twice", prefix + "a.go", []entry{{prefix + "go.mod", "module example.com/m\n", zip.Deflate}, {prefix + "a.go", "package m\n", zip.Deflate}, {prefix + "a.go", "package m\n", zip.Store}}},
	} {
		err := CheckZip(v, writeZip(t, tc.entries))
		if err == nil || !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("%s: %v, want %s refused", tc.name, err, tc.refused)
		}
	}
	if err := CheckZip(v, filepath.Join(t.TempDir(), "missing.zip")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no zip: %v, want fs.ErrNotExist", err)
	}
}
