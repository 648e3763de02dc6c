package artifact

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// From the go env file, builds take where modules come from and where
// caches live, never what changes a binary; the environment wins over it.
func TestHostSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(file, []byte("GOPROXY=https://proxy.internal\nGOPRIVATE=corp.example\nGOCACHEPROG=/usr/local/bin/cacheprog\nGOAMD64=v3\nGOFLAGS=-tags=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", file)
	t.Setenv("GOPROXY", "")
	t.Setenv("GOPRIVATE", "")
	t.Setenv("GOCACHEPROG", "")
	got := hostSettings()
	// GOCACHEPROG shares compiled packages with a fleet's cache server;
	// it changes where results are kept, not what is built.
	for _, want := range []string{"GOPROXY=https://proxy.internal", "GOPRIVATE=corp.example", "GOCACHEPROG=/usr/local/bin/cacheprog"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s missing from %v", want, got)
		}
	}
	for _, kv := range got {
		if kv == "GOAMD64=v3" || kv == "GOFLAGS=-tags=evil" {
			t.Errorf("%s passed from the go env file", kv)
		}
	}
	t.Setenv("GOPROXY", "direct")
	if slices.Contains(hostSettings(), "GOPROXY=https://proxy.internal") {
		t.Error("the go env file won over the environment")
	}
	t.Setenv("GOENV", "off")
	if got := hostSettings(); len(got) != 0 {
		t.Errorf("GOENV=off, yet %v", got)
	}
}
