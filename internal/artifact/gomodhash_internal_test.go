package artifact

import (
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture/gomod"
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
	src, v := gomod.ManyFiles(t, files, nil)
	zipFile, sum := gomod.Zip(t, src, v)
	m := &GoModule{Path: v.Path, Version: v.Version, Sum: sum}
	for _, tc := range []struct {
		name  string
		prove func() error
	}{
		{"modulePin.verify", func() error { return m.pin().verify(zipFile) }},
		{"GoModule.verifyTree", func() error { return m.verifyTree(src) }},
	} {
		perFile := gomod.GarbagePerFile(t, files, tc.prove)
		t.Logf("%s: %d bytes allocated per file", tc.name, perFile)
		if perFile > 3072 {
			t.Errorf("%s allocated %d bytes per file, want at most 3072", tc.name, perFile)
		}
	}
}

// A module zip is refused for its layout before it is hashed: one that
// holds a file outside path@version/ is refused, naming the module and
// the file, though it hashes to its pin.
func TestModuleZipLayoutChecked(t *testing.T) {
	src, v := gomod.ManyFiles(t, 1, nil)
	zipFile, sum := gomod.Stray(t, src, v, "elsewhere/x.go")
	err := (&GoModule{Path: v.Path, Version: v.Version, Sum: sum}).pin().verify(zipFile)
	if err == nil || !strings.HasPrefix(err.Error(), "module "+v.Path+"@"+v.Version+": ") || !strings.Contains(err.Error(), "elsewhere/x.go") {
		t.Fatalf("a zip with elsewhere/x.go: %v, want it refused", err)
	}
}
