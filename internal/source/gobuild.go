package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/tree"
)

// goBuild cross-compiles the packages with the host toolchain. GOCACHE is
// left alone so repeated builds reuse the user's build cache.
func (f *Fetcher) goBuild(ctx context.Context, a Artifact, work string) (*Result, error) {
	g := a.Go
	out := filepath.Join(work, "bin") + string(filepath.Separator)
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	// -buildvcs=false by default: otherwise the commit of whatever
	// repository encloses the module (and whether it is dirty) ends up in
	// the binary and two checkouts of the same code give different images.
	args := []string{"build", "-o", out, "-buildvcs=false"}
	if g.Trimpath {
		args = append(args, "-trimpath")
	}
	if len(g.Ldflags) > 0 {
		args = append(args, "-ldflags="+strings.Join(g.Ldflags, " "))
	}
	if len(g.Tags) > 0 {
		args = append(args, "-tags="+strings.Join(g.Tags, ","))
	}
	args = append(args, g.Flags...)
	args = append(args, g.Packages...)

	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = g.Module
	cgo := "0"
	if g.CGO {
		cgo = "1"
	}
	cmd.Env = append(os.Environ(), a.Platform.GoEnv()...)
	cmd.Env = append(cmd.Env, "CGO_ENABLED="+cgo)
	cmd.Env = append(cmd.Env, g.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (in %s, %s): %w\n%s", strings.Join(args, " "), g.Module, a.Platform, err, strings.TrimSpace(stderr.String()))
	}
	t, err := tree.FromDir(out)
	if err != nil {
		return nil, err
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("go build of %s produced no executable (are they main packages?)", strings.Join(g.Packages, " "))
	}
	return &Result{Tree: t, Record: Record{Kind: "go", Path: g.Module}}, nil
}
