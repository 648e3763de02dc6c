package golicenses

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/mod/module"
)

// The go command missing from PATH is said as the exec error, with
// nothing after it: go mod download said nothing, and the error ended
// in a bare ": ".
func TestGoMissingSaidPlainly(t *testing.T) {
	c := &collector{opt: Options{Work: t.TempDir(), Env: []string{"PATH=" + t.TempDir(), "GOPROXY=https://proxy.invalid", "HOME=" + t.TempDir()}}}
	t.Setenv("PATH", t.TempDir())
	ref := modRef{Path: "example.com/m", Version: "v1.0.0", From: module.Version{Path: "example.com/m", Version: "v1.0.0"}}
	_, err := c.runDownload(context.Background(), []modRef{ref})
	if err == nil || !strings.Contains(err.Error(), exec.ErrNotFound.Error()) || strings.HasSuffix(strings.TrimSpace(err.Error()), ":") {
		t.Errorf("go mod download with no go on PATH: %q, want the exec error ending the message", err)
	}
}
