package artifact

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pinned source builds only what is in it: the module and every
// package named by path must be inside it once links are followed.
func TestModuleIn(t *testing.T) {
	src := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"mod/cmd/a", "cmd/b"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(src, "cmd", "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(src, "cmd", "alias")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		module   string
		packages []string
		want     string // in the error; "" = accepted
	}{
		{".", []string{"./cmd/b", "./...", "example.com/x/cmd/b", "./cmd/alias", "./cmd/b...", "./cmd/.../x", "./..."}, ""},
		{"mod", []string{"./cmd/a", "."}, ""},
		{"./mod/", []string{"./cmd/..."}, ""},
		{"../..", nil, "is not a directory inside the pinned source"},
		{outside, nil, "is not a directory inside the pinned source"},
		{"cmd/evil", nil, "outside the pinned source"},
		{".", []string{"./cmd/evil"}, "package ./cmd/evil leads to"},
		{".", []string{"./cmd/evil/..."}, "package ./cmd/evil/... leads to"},
		{".", []string{"../x"}, "outside the pinned source"},
		// Named as the recipe names them: the work directory the source
		// is in means nothing to its author.
		{"missing", nil, "module missing: no directory missing in the pinned source"},
		{"mod", []string{"./cmd/antcl"}, "package ./cmd/antcl: no directory mod/cmd/antcl in the pinned source"},
		{".", []string{"./cmd/nope/..."}, "package ./cmd/nope/...: no directory cmd/nope in the pinned source"},
	} {
		g := &Go{Module: tc.module, Packages: tc.packages}
		dir, err := g.moduleIn(src)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("module %s, packages %v: %v", tc.module, tc.packages, err)
		case tc.want == "" && !strings.HasPrefix(dir, src):
			t.Errorf("module %s: dir %s", tc.module, dir)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("module %s, packages %v: got %v, want %q", tc.module, tc.packages, err, tc.want)
		case err != nil && tc.module != outside && strings.Contains(err.Error(), src):
			t.Errorf("module %s, packages %v: %v names the work directory", tc.module, tc.packages, err)
		}
	}
}

// A checkout's links that lead out of it are left out before the build;
// those that stay inside are kept.
func TestDropOutwardLinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"a/b", ".git"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	links := map[string]string{
		"abs":       outside,
		"a/up":      "../../x",
		"a/b/up":    "../../../etc",
		"a/in":      "b",
		"a/b/top":   "../../a",
		"a/chain":   "b/up",
		".git/hook": "/etc/passwd",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	var said string
	if err := dropOutwardLinks(root, func(f string, a ...any) { said = fmt.Sprintf(f, a...) }); err != nil {
		t.Fatal(err)
	}
	for l, kept := range map[string]bool{"abs": false, "a/up": false, "a/b/up": false, "a/in": true, "a/b/top": true, "a/chain": true, ".git/hook": true} {
		if _, err := os.Lstat(filepath.Join(root, l)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", l, err == nil, kept)
		}
	}
	if !strings.Contains(said, "left out 3 symlink(s)") {
		t.Errorf("said %q", said)
	}
}
