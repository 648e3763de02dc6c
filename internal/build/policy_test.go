package build

import (
	"context"
	"go/version"
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/progress"
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

// Owner and mode on a Windows platform are warned of once per line, with
// the Windows platforms only; Linux platforms and a plain placement say
// nothing.
func TestWindowsAccessWarnsOncePerLine(t *testing.T) {
	quiet, _ := progress.New("quiet", nil)
	linux := platform.Platform{OS: "linux", Arch: "amd64"}
	win := platform.Platform{OS: "windows", Arch: "amd64"}
	winArm := platform.Platform{OS: "windows", Arch: "arm64"}
	owned := plan.Placement{Artifact: "agent", Dest: "/k/", UID: 1000, GID: 1000, Mode: 0o600, Pos: plan.Pos{File: "pallet.yaml", Line: 12, Col: 9}}
	plain := plan.Placement{Artifact: "cni", Dest: "/opt/", Pos: plan.Pos{File: "pallet.yaml", Line: 15, Col: 9}}
	copyA := plan.Placement{Artifact: "a", Dest: "/k/", Mode: 0o755, Pos: plan.Pos{File: "Dockerfile", Line: 3, Col: 20}}
	copyB := copyA
	copyB.Artifact, copyB.Pos.Col = "b", 22
	layers := func(pms ...plan.Placement) []*plan.Layer { return []*plan.Layer{{Name: "0", Placements: pms}} }
	p := &plan.Plan{Images: []*plan.Image{
		{Name: "agent", Platforms: []*plan.PlatformImage{
			{Platform: linux, Layers: layers(owned, plain)},
			{Platform: win, Layers: layers(owned, plain)},
			{Platform: winArm, Layers: layers(owned, plain)},
		}},
		{Name: "df", Platforms: []*plan.PlatformImage{{Platform: win, Layers: layers(copyA, copyB)}}},
	}}
	w := &warnings{Reporter: quiet}
	warnWindowsAccess(p, w)
	want := []string{
		"Dockerfile:3:20: image df: ignored on windows/amd64: mode 0755; Windows reads no owner or mode from a layer, access is the security descriptor pallet writes (Users may read and execute)",
		"pallet.yaml:12:9: image agent: ignored on windows/amd64, windows/arm64: owner 1000:1000 and mode 0600; Windows reads no owner or mode from a layer, access is the security descriptor pallet writes (Users may read and execute)",
	}
	if got := w.sorted(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// MinGo takes a Go release's or pre-release's name, with or without go,
// into the form go/version orders, and nothing else.
func TestMinGo(t *testing.T) {
	for in, want := range map[string]string{"1.22": "go1.22", "1.22.7": "go1.22.7", "go1.22.7": "go1.22.7", "1.23rc1": "go1.23rc1", "1.23beta1": "go1.23beta1", "1.21.0": "go1.21.0"} {
		if got, err := MinGo(in); err != nil || got != want {
			t.Errorf("MinGo(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "go1.2x", "1.22.7-bigcorp", "1.22.7+x", "1.022", "1.22.07", "1.22rc0", "1.22rc", "go", "gogo1.22", "1.22.7 X:boringcrypto"} {
		if got, err := MinGo(bad); err == nil {
			t.Errorf("MinGo(%q) = %q, accepted", bad, got)
		}
	}
	// Through Options too, which a caller other than the flag fills.
	_, err := Run(context.Background(), &plan.Plan{}, Options{MinGo: "go1.2x"})
	if err == nil || !strings.Contains(err.Error(), `minimum Go "go1.2x" is not the name of a Go release`) {
		t.Errorf("Options.MinGo go1.2x: %v", err)
	}
}
