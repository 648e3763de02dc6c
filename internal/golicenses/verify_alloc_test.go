package golicenses

import (
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture/gomod"
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
	src, v := gomod.ManyFiles(t, files, map[string]string{"LICENSE": "Permission is hereby granted, free of charge.\n"})
	zipFile, sum := gomod.Zip(t, src, v)
	opt := Options{}.withDefaults()
	perFile := gomod.GarbagePerFile(t, files, func() error {
		lic, err := verifyZip(zipFile, v.Path, v, sum, opt)
		if err == nil && len(lic["LICENSE"]) == 0 {
			t.Fatalf("the licence file was not kept: %v", lic)
		}
		return err
	})
	t.Logf("%d bytes allocated per file", perFile)
	if perFile > 3072 {
		t.Errorf("proving the zip allocated %d bytes per file, want at most 3072", perFile)
	}
}

// A module zip is refused for its layout before it is hashed: one that
// holds a file outside path@version/ is refused, naming the module and
// the file, though it hashes to the binary's record.
func TestVerifyZipLayoutChecked(t *testing.T) {
	src, v := gomod.ManyFiles(t, 1, nil)
	zipFile, sum := gomod.Stray(t, src, v, "elsewhere/x.go")
	_, err := verifyZip(zipFile, v.Path, v, sum, Options{}.withDefaults())
	if err == nil || !strings.HasPrefix(err.Error(), "module "+v.Path+": hashing "+zipFile+": zip: ") || !strings.Contains(err.Error(), "elsewhere/x.go") {
		t.Fatalf("a zip with elsewhere/x.go: %v, want it refused", err)
	}
}
