package artifact

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What go install can build of a module, as import paths, and what it
// cannot, with why: a gomod build then falls back to go build in the
// unpacked module.
func TestGoModuleInstallable(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"cmd/a", "cmd/b", "tools/x"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gomod := func(s string) {
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/m/v2\n\ngo 1.22\n"+s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomod("")
	m := &GoModule{Path: "example.com/m/v2", Version: "v2.1.0"}
	for _, c := range []struct {
		pkgs, flags []string
		want        []string
		why         string
	}{
		{pkgs: []string{"./cmd/a", "example.com/m/v2/cmd/b", "./cmd/..."}, want: []string{"example.com/m/v2/cmd/a", "example.com/m/v2/cmd/b", "example.com/m/v2/cmd/..."}},
		{pkgs: []string{"."}, want: []string{"example.com/m/v2"}},
		{pkgs: []string{"./cmd/a"}, flags: []string{"-mod=mod"}, why: "refuses the flag -mod=mod"},
		{pkgs: []string{"example.com/other/cmd/x"}, why: "not in module example.com/m/v2"},
		{pkgs: []string{"example.com/m/v2/api/cmd/x"}, why: "not in module"}, // a nested module's
		{pkgs: []string{"example.com/m/v20/cmd/x"}, why: "not in module"},
	} {
		got, why := m.installable(&Go{Packages: c.pkgs, Flags: c.flags}, src, src)
		if !slices.Equal(got, c.want) || c.why == "" && why != "" || c.why != "" && !strings.Contains(why, c.why) {
			t.Errorf("%v %v: %q, %q", c.pkgs, c.flags, got, why)
		}
	}
	gomod("replace example.com/x v1.0.0 => example.com/y v1.0.0\n")
	if _, why := m.installable(&Go{Packages: []string{"./cmd/a"}}, src, src); !strings.Contains(why, "replace or exclude") {
		t.Errorf("a replace: %q", why)
	}
}
