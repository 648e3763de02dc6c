package artifact_test

import (
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

func TestModuleTagVersion(t *testing.T) {
	for _, c := range []struct {
		dir, mod, tag, want string
	}{
		{".", "github.com/opencontainers/runc", "v1.2.4", "v1.2.4"},
		{"", "github.com/opencontainers/runc", "v1.2.4", "v1.2.4"},
		{".", "github.com/containerd/containerd/v2", "v2.1.0", "v2.1.0"},
		{"api", "github.com/containerd/containerd/api", "api/v1.9.0", "v1.9.0"},
		{"./api/", "github.com/containerd/containerd/api", "api/v1.9.0", "v1.9.0"},
		{"api/v2", "example.com/repo/api/v2", "api/v2.0.1", "v2.0.1"},
		{"api", "example.com/repo/api/v2", "api/v2.0.1", "v2.0.1"},
		{"v2", "example.com/repo/v2", "v2.3.0", "v2.3.0"},
		{"tools/cmd", "example.com/repo/tools/cmd", "tools/cmd/v0.4.0", "v0.4.0"},
		// Not a version of the module: no version is claimed.
		{".", "github.com/containerd/containerd/v2", "v1.7.0", ""},
		{".", "github.com/opencontainers/runc", "v2.0.0", ""},
		{"api", "github.com/containerd/containerd/api", "v1.9.0", ""},
		{".", "github.com/containerd/containerd", "api/v1.9.0", ""},
		{"api", "example.com/repo/api", "other/v1.0.0", ""},
		{"api/v2", "example.com/repo/api/v2", "api/v2/v2.0.1", ""},
		{".", "github.com/opencontainers/runc", "release-1.2", ""},
		{".", "github.com/opencontainers/runc", "v1.2", ""},
	} {
		got, ok := artifact.ModuleTagVersion(c.dir, c.mod, c.tag)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("ModuleTagVersion(%q, %q, %q) = %q, %v; want %q", c.dir, c.mod, c.tag, got, ok, c.want)
		}
	}
}
