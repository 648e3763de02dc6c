package build

import (
	"context"
	"go/version"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
)

func TestGoRelease(t *testing.T) {
	for _, tc := range []struct {
		recorded string
		min      string
		ok       bool
	}{
		{"go1.26.8", "go1.26.8", true},
		{"go1.26.7", "go1.26.8", false},
		{"go1.22.0 X:boringcrypto", "go1.22.0", true},
		{"go1.22.0 X:boringcrypto", "go1.22.1", false},
		{"go1.27rc1", "go1.26.8", true},
		{"go1.27rc1", "go1.27.0", false},
		{"devel go1.27-0123abcd Tue Nov 3 10:00:00 2026 +0000", "go1.26.8", true},
		{"devel go1.27-0123abcd Tue Nov 3 10:00:00 2026 +0000", "go1.27.0", false},
	} {
		v := goRelease(tc.recorded)
		if !version.IsValid(v) {
			t.Errorf("%q: %q is not a Go version", tc.recorded, v)
			continue
		}
		if ok := version.Compare(v, tc.min) >= 0; ok != tc.ok {
			t.Errorf("%q against --min-go %s: ok=%v, want %v", tc.recorded, tc.min, ok, tc.ok)
		}
	}
}

// The refusal of zstd on a Windows image names the flag that allows it,
// and comes before any work.
func TestWindowsZstdNamesTheFlag(t *testing.T) {
	p := &plan.Plan{Images: []*plan.Image{{Name: "agent", Pos: plan.Pos{File: "pallet.yaml", Line: 7},
		Platforms: []*plan.PlatformImage{{Platform: platform.Platform{OS: "linux", Arch: "amd64"}}, {Platform: platform.Platform{OS: "windows", Arch: "amd64"}}}}}}
	_, err := Run(context.Background(), p, Options{Compression: layer.Zstd})
	if err == nil || !strings.Contains(err.Error(), "image agent (windows/amd64)") || !strings.Contains(err.Error(), "--windows-zstd") || !strings.HasPrefix(err.Error(), "pallet.yaml:7") {
		t.Errorf("zstd on a Windows image: %v", err)
	}
}
