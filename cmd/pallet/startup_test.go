package main

import (
	"os"
	"os/exec"
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

func TestStartupLinksNoCostlyInitializers(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOOS=", "GOARCH=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if why, ok := notLinked[pkg]; ok {
			t.Errorf("pallet links %s, which %s (go mod why -m %s says through what)", pkg, why, pkg)
		}
	}
}
