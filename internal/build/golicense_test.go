package build

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// A build being stopped kills the go command that finds the toolchain's
// licence: that is the stop, returned as such, and no warning that the
// licence is not shipped (which a failing build printed for every
// cached Go artifact still in flight).
func TestGoLicenceNotWarnedWhenStopped(t *testing.T) {
	var out bytes.Buffer
	rep, err := progress.New("plain", &out)
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{opt: Options{Progress: rep}, work: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pa := &plan.Artifact{Request: artifact.Request{Name: "agent", Kind: &artifact.Go{}}}
	a := &record.Artifact{GoBinaries: []record.GoBinary{{Path: "agent", GoVersion: "go1.26.8"}}}
	err = b.addGoLicense(ctx, pa, os.Environ(), goToolchain{}, a, tree.New())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("addGoLicense on a stopped build = %v, want context.Canceled", err)
	}
	if strings.Contains(out.String(), "not shipped") {
		t.Errorf("a stopped build warned:\n%s", out.String())
	}
}

// Offline without a mirror, what to do names the module cache the
// modules came from, not a mirror the build was not given.
func TestHowToProceedOffline(t *testing.T) {
	release := &artifact.URL{}
	for _, c := range []struct {
		offline, mirror bool
		kind            artifact.Kind
		want, not       string
	}{
		{true, false, &artifact.Go{}, "go env GOMODCACHE", "puts a Go build's modules in the mirror"},
		{true, false, release, "go env GOMODCACHE", "this mirror"},
		{true, true, &artifact.Go{}, "puts a Go build's modules in the mirror", "GOMODCACHE"},
		{true, true, release, "fetch again into this mirror", "go env GOMODCACHE"},
	} {
		got := howToProceed(c.offline, c.mirror, c.kind)
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) || !strings.Contains(got, "--module-licenses=false") {
			t.Errorf("offline %v, mirror %v, %T: %q", c.offline, c.mirror, c.kind, got)
		}
	}
}
