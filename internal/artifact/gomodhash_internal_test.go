package artifact

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// TestGoModuleProofGarbagePerFile holds what proving a module zip
// (modulePin.verify) and the tree go unpacked from it
// (GoModule.verifyTree) allocate per file to well under a 32 KiB buffer
// per file: a gomod build of containerd proves thousands of files, with
// the licence classifier's tens of megabytes live for every collection
// the garbage sets off to scan.
func TestGoModuleProofGarbagePerFile(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties sync.Pool at random")
	}
	const files = 2000
	v := module.Version{Path: "example.com/many", Version: "v1.0.0"}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/many\n")
	for i := range files {
		write(fmt.Sprintf("f%04d.go", i), "package many\n\n// "+strings.Repeat("compressible text ", 40)+"\n")
	}
	zipFile := filepath.Join(t.TempDir(), "many.zip")
	f, err := os.Create(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(f, v, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	m := &GoModule{Path: v.Path, Version: v.Version, Sum: sum}
	for _, tc := range []struct {
		name  string
		prove func() error
	}{
		{"modulePin.verify", func() error { return m.pin().verify(zipFile) }},
		{"GoModule.verifyTree", func() error { return m.verifyTree(src) }},
	} {
		// Once first, so that the pools hold what it uses.
		if err := tc.prove(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := tc.prove(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		runtime.ReadMemStats(&after)
		perFile := (after.TotalAlloc - before.TotalAlloc) / files
		t.Logf("%s: %d bytes allocated per file", tc.name, perFile)
		if perFile > 3072 {
			t.Errorf("%s allocated %d bytes per file, want at most 3072", tc.name, perFile)
		}
	}
}
