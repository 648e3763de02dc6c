package platform

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Every pallet command runs this package's initializers, a no-op build
// and pallet version too, and most never parse a platform: its tables
// are laid out by the compiler, and building them allocates nothing at
// start-up. The test binary, run again with GODEBUG=inittrace=1, reports
// what each package's initializers allocated.
func TestTablesNotBuiltAtStartup(t *testing.T) {
	if os.Getenv("PALLET_INITTRACE_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTablesNotBuiltAtStartup$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "PALLET_INITTRACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	const pkg = "github.com/pallet-dev/pallet/internal/platform"
	seen := false
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" {
			continue
		}
		seen = true
		if f[1] == pkg && (f[7] != "0" || f[9] != "0") {
			t.Errorf("%s allocates %s bytes in %s allocations at start-up: %s", pkg, f[7], f[9], line)
		}
	}
	if !seen {
		t.Fatalf("no initializer in the trace (GODEBUG=inittrace=1 ignored?):\n%s", out)
	}
}

// Known's callers print it, and a message lists it, in order: the table
// is written sorted rather than sorted on each call.
func TestKnownSorted(t *testing.T) {
	if k := Known(); !slices.IsSorted(k) || len(k) != len(known) {
		t.Errorf("Known() = %q, want the %d platforms sorted", k, len(known))
	}
}
