package recipe

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// gomodFilesRecipe takes the scripts of the module version whose agent it
// builds, by the same pin: as a kind of its own and as a source mode.
const gomodFilesRecipe = `version: 1
artifacts:
  agent:
    version: 2.4.0
    gomod:
      module: antrea.io/antrea/v2
      version: v{{version}}
      sum: ` + testSum + `
      packages: [./cmd/antrea-agent]
  scripts:
    version: 2.4.0
    gomod:
      module: antrea.io/antrea/v2
      version: v{{version}}
      sum: ` + testSum + `
      path: hack/{{os}}
  conf:
    version: 2.4.0
    default: source
    modes:
      source:
        gomod:
          module: antrea.io/antrea/v2
          version: v{{version}}
          sum: ` + testSum + `
          commit: 0123456789abcdef0123456789abcdef01234567
          path: build/yamls/antrea.yml
      local: {}
images:
  agent:
    base: scratch
    platforms: [windows/amd64, linux/amd64]
    files:
      - {artifact: agent, dest: /k/antrea/bin/}
      - {artifact: scripts, dest: /k/antrea/}
      - {artifact: conf, dest: /k/antrea/etc/}
`

// gomod with a path and no packages takes the module's files; the kind
// carries the pin and the path, expanded per platform.
func TestGoModuleFilesPlan(t *testing.T) {
	r, p := planValid(t, gomodFilesRecipe)
	a := p.Artifacts["scripts@windows/amd64"]
	m, ok := a.Kind.(*artifact.GoModuleFiles)
	if !ok {
		t.Fatalf("planned as %T", a.Kind)
	}
	want := artifact.GoModuleFiles{Module: "antrea.io/antrea/v2", Version: "v2.4.0", Sum: testSum, Path: "hack/windows"}
	if !reflect.DeepEqual(*m, want) || a.Mode != "" {
		t.Errorf("got %q mode, %+v\nwant %+v", a.Mode, *m, want)
	}
	if pos, ok := a.Fields["path"]; !ok || pos.Line != 16 {
		t.Errorf("a FieldError of path is placed at %v, want line 16", a.Fields["path"])
	}
	if got := p.Artifacts["scripts@linux/amd64"].Kind.(*artifact.GoModuleFiles).Path; got != "hack/linux" {
		t.Errorf("linux path %q", got)
	}
	a = p.Artifacts["conf@linux/amd64"]
	want = artifact.GoModuleFiles{Module: "antrea.io/antrea/v2", Version: "v2.4.0", Sum: testSum, Commit: "0123456789abcdef0123456789abcdef01234567", Path: "build/yamls/antrea.yml"}
	if m, ok := a.Kind.(*artifact.GoModuleFiles); !ok || !reflect.DeepEqual(*m, want) || a.Mode != "source" {
		t.Errorf("conf: %q mode, %+v", a.Mode, a.Kind)
	}
	if _, ok := p.Artifacts["agent@linux/amd64"].Kind.(*artifact.GoModule); !ok {
		t.Errorf("agent planned as %T", p.Artifacts["agent@linux/amd64"].Kind)
	}
	reqs, err := r.Fetchable(Options{Platforms: []string{"windows/amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, q := range reqs {
		if m, ok := q.Kind.(*artifact.GoModuleFiles); ok {
			files = append(files, m.Path)
		}
	}
	if strings.Join(files, " ") != "build/yamls/antrea.yml hack/windows" && strings.Join(files, " ") != "hack/windows build/yamls/antrea.yml" {
		t.Errorf("pallet fetch would mirror the files of %v", files)
	}
}

func TestGoModuleFilesErrors(t *testing.T) {
	checkEdits(t, gomodFilesRecipe, []editCase{
		{"packages too", "      path: hack/{{os}}\n", "      path: hack/{{os}}\n      packages: [./cmd/antrea-agent]\n", 16, "gomod.path takes files of the module as they are and gomod.packages builds it"},
		{"packages first", "      path: hack/{{os}}\n", "      packages: [./cmd/antrea-agent]\n      path: hack/{{os}}\n", 17, "give one of them"},
		{"in a source mode", "          path: build/yamls/antrea.yml\n", "          path: build/yamls/antrea.yml\n          packages: .\n", 27, "gomod.packages builds it"},
		{"a build setting", "      path: hack/{{os}}\n", "      path: hack/{{os}}\n      ldflags: [-s]\n", 17, "gomod.ldflags is a setting of a build"},
		{"a toolchain", "      path: hack/{{os}}\n", "      path: hack/{{os}}\n      toolchain: \"1.23.4\"\n", 17, "gomod.toolchain is a setting of a build"},
		{"climbs", "path: hack/{{os}}", "path: hack/../../etc", 16, "climbs out of the module"},
		{"absolute", "path: hack/{{os}}", "path: /etc/passwd", 16, "is absolute; name it relative to the module's root"},
		{"expanded climbs", "path: hack/{{os}}", `path: "{{os}}/../../x"`, 16, "climbs out of the module"},
		{"backslash", "path: hack/{{os}}", `path: hack\windows`, 16, "separate its parts with /"},
		{"empty", "path: hack/{{os}}", `path: ""`, 16, "empty path"},
		{"neither", "      path: hack/{{os}}\n", "", 12, "gomod.packages is required (to build the module), or gomod.path (to take files of it)"},
	})
}

// The schema refuses what the parser refuses for shape.
func TestGoModuleFilesSchema(t *testing.T) {
	s := compileSchema(t)
	for _, bad := range []string{
		strings.Replace(gomodFilesRecipe, "      path: hack/{{os}}\n", "      path: hack/{{os}}\n      packages: [./cmd/antrea-agent]\n", 1),
		strings.Replace(gomodFilesRecipe, "      path: hack/{{os}}\n", "      path: hack/{{os}}\n      ldflags: [-s]\n", 1),
		strings.Replace(gomodFilesRecipe, "      path: hack/{{os}}\n", "", 1),
	} {
		if err := s.Validate(yamlToJSONValue(t, []byte(bad))); err == nil {
			t.Errorf("schema accepted:\n%s", bad)
		}
	}
}
