package golicenses

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

// TestVerifyZipGarbagePerFile holds what proving a module zip allocates
// per file it reads to well under a buffer per file: with the licence
// classifier's tens of megabytes live, every megabyte of garbage costs a
// collection's scan of them, and verifying the modules of a binary like
// containerd's reads tens of thousands of files.
func TestVerifyZipGarbagePerFile(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector empties sync.Pool at random")
	}
	const files = 2000
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	v := module.Version{Path: "example.com/many", Version: "v1.0.0"}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/many\n")
	write("LICENSE", "Permission is hereby granted, free of charge.\n")
	for i := range files {
		write(fmt.Sprintf("f%04d.go", i), "package many\n\n// "+strings.Repeat("compressible text ", 40)+"\n")
	}
	zipFile := filepath.Join(dir, "many.zip")
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
	opt := Options{}.withDefaults()
	verify := func() {
		lic, err := verifyZip(zipFile, v.Path, v, sum, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(lic["LICENSE"]) == 0 {
			t.Fatalf("the licence file was not kept: %v", lic)
		}
	}
	verify() // the decoders' pool is filled
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	verify()
	runtime.ReadMemStats(&after)
	perFile := (after.TotalAlloc - before.TotalAlloc) / files
	t.Logf("%d bytes allocated per file", perFile)
	if perFile > 3072 {
		t.Errorf("proving the zip allocated %d bytes per file, want at most 3072", perFile)
	}
}
