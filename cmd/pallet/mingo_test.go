package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// --min-go takes the name of a Go release or pre-release, and refuses
// anything else as the flags are read, before the recipe: go/version
// would read 1.2x as a pre-release older than every release and
// 1.22.7-bigcorp as 1.22.7, so a slip passed every binary.
func TestMinGoFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "pallet.yaml")
	for _, bad := range []string{"go1.2x", "1.22.7-bigcorp", "1.22.07", "1.x", "22", "1", "v1.22.7", "1.22rc", "1.22.7rc1", "1.22 ", "go", "1.22alpha1"} {
		_, err := pallet(t, "build", "-q", "-f", missing, "-o", "oci:"+filepath.Join(t.TempDir(), "out"), "--min-go", bad)
		if want := `--min-go "` + bad + `" is not the name of a Go release: want 1.N, 1.N.P, 1.NrcK or 1.NbetaK`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--min-go %q: got %v, want %q", bad, err, want)
		}
	}
	for _, good := range []string{"1.22", "1.22.7", "go1.22.7", "1.23rc1", "go1.23beta2", "1.21.0"} {
		_, err := pallet(t, "build", "-q", "-f", missing, "-o", "oci:"+filepath.Join(t.TempDir(), "out"), "--min-go", good)
		if err == nil || strings.Contains(err.Error(), "--min-go") || !strings.Contains(err.Error(), missing) {
			t.Errorf("--min-go %q: got %v, want only the missing recipe said", good, err)
		}
	}
}
