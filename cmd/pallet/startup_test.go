package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every command pays for the initializers of every package linked in,
// a no-op build too (0.014 s, against 0.004 s for an empty Go program,
// most of it start-up). These packages did costly work there, and pallet
// has what it needs of them without linking them; the reason says what
// it cost and what replaces it.
var notLinked = map[string]string{
	"github.com/distribution/reference": "compiles eight regular expressions at start-up (3.5 ms); internal/refname reads the same grammar",
}

// linked is what the pallet command links: go list -deps.
func linked(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOOS=", "GOARCH=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return strings.Fields(string(out))
}

func TestStartupLinksNoCostlyInitializers(t *testing.T) {
	for _, pkg := range linked(t) {
		if why, ok := notLinked[pkg]; ok {
			t.Errorf("pallet links %s, which %s (go mod why -m %s says through what)", pkg, why, pkg)
		}
	}
}

// initAllocMax bounds what one of pallet's own packages allocates in its
// initializers: error values, small maps and slices come to a few KB,
// while a table built there (a CRC's, a regexp's) is tens of KB, paid by
// every command for work most never do. Build it on first use
// (sync.OnceValue, lazyre).
const initAllocMax = 16 << 10

func TestPalletInitializersBuildNoTables(t *testing.T) {
	ours := map[string]bool{}
	for _, pkg := range linked(t) {
		if strings.HasPrefix(pkg, "github.com/pallet-dev/pallet/") {
			ours[pkg] = true
		}
	}
	// The command itself, not this test binary: the tests' own
	// dependencies may build a shared table (hash/crc64's) first, and
	// their initializers are not pallet's.
	bin := filepath.Join(t.TempDir(), "pallet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," || !ours[f[1]] {
			continue
		}
		seen++
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", line, err)
		}
		if b > initAllocMax {
			t.Errorf("%s allocates %d bytes in its initializers (at most %d): %s", f[1], b, initAllocMax, line)
		}
	}
	if seen == 0 {
		t.Fatalf("no initializer of pallet's packages in the trace:\n%s", out)
	}
}
