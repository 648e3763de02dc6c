package recipe

import (
	"reflect"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

const gitFilesRecipe = `version: 1
artifacts:
  scripts:
    version: "2.3.0"
    default: source
    modes:
      source:
        git:
          repo: https://example.com/antrea.git
          commit: 0123456789abcdef0123456789abcdef01234567
          tag: v{{version}}
          path: hack/windows/{{os}}
      local: {}
images:
  agent:
    base: scratch
    platforms: [windows/amd64, linux/amd64]
    files:
      - {artifact: scripts, dest: /k/}
`

// git with a path and no go takes the checkout's files; the kind carries
// every pin and the path, expanded per platform.
func TestGitFilesPlan(t *testing.T) {
	_, p := planValid(t, gitFilesRecipe)
	a := p.Artifacts["scripts@windows/amd64"]
	g, ok := a.Kind.(*artifact.GitFiles)
	if !ok {
		t.Fatalf("planned as %T", a.Kind)
	}
	want := artifact.GitFiles{Repo: "https://example.com/antrea.git", Commit: "0123456789abcdef0123456789abcdef01234567", Tag: "v2.3.0", Path: "hack/windows/windows"}
	if !reflect.DeepEqual(*g, want) || a.Mode != "source" {
		t.Errorf("got %s mode, %+v\nwant %+v", a.Mode, *g, want)
	}
	if got := p.Artifacts["scripts@linux/amd64"].Kind.(*artifact.GitFiles).Path; got != "hack/windows/linux" {
		t.Errorf("linux path %q", got)
	}
}

func TestGitFilesErrors(t *testing.T) {
	checkEdits(t, gitFilesRecipe, []editCase{
		{"go too", "          path: hack/windows/{{os}}\n", "          path: hack/windows/{{os}}\n        go: {packages: [./cmd/agent]}\n", 12, "git.path takes files of the checkout as they are and go builds it"},
		{"neither", "          path: hack/windows/{{os}}\n", "", 7, "give go (to build the checkout) or git.path"},
		{"climbs", "path: hack/windows/{{os}}", "path: hack/../../etc", 12, "climbs out of the repository"},
		{"absolute", "path: hack/windows/{{os}}", "path: /etc/passwd", 12, "is absolute"},
		{"expanded climbs", "path: hack/windows/{{os}}", `path: "{{os}}/../../x"`, 12, "climbs out of the repository"},
		{"backslash", "path: hack/windows/{{os}}", `path: hack\windows`, 12, "separate its parts with /"},
	})
}
