package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A gomod sum the module proxy does not match is blamed on the sum: line,
// as a download's sha256 is, and the error says how to re-pin it.
func TestGomodSumMismatchAtSumLine(t *testing.T) {
	gomodProxy(t)
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	recipe := gomodRecipe(t, "linux/"+runtime.GOARCH, wrong)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("a wrong go.sum hash was accepted")
	}
	// Both artifacts (a gomod kind, a gomod source mode) pin it; either
	// may fail first, each at its own sum: line.
	var at []string
	for i, l := range strings.Split(readFileString(t, recipe), "\n") {
		if strings.TrimSpace(l) == "sum: "+wrong {
			at = append(at, fmt.Sprintf("pallet.yaml:%d: ", i+1))
		}
	}
	if len(at) != 2 || !strings.Contains(err.Error(), at[0]) && !strings.Contains(err.Error(), at[1]) {
		t.Errorf("the error is not at a sum: line (%q):\n%v", at, err)
	}
	if !strings.Contains(err.Error(), "pallet lock --update") {
		t.Errorf("the error does not say how to re-pin:\n%v", err)
	}
}
