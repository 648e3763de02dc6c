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
	err = b.addGoLicense(ctx, pa, os.Environ(), a, tree.New())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("addGoLicense on a stopped build = %v, want context.Canceled", err)
	}
	if strings.Contains(out.String(), "not shipped") {
		t.Errorf("a stopped build warned:\n%s", out.String())
	}
}
