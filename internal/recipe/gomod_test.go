package recipe

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

const testSum = "h1:Hs3VQ4cJ5hUZBzy2DVGHtQmlKNJ8iKHrvb7qpwTIWTo="

// gomodRecipe has the kind twice: as an artifact of its own, and as the
// source mode of an artifact that also has a release.
const gomodRecipe = `version: 1
args:
  GO: "1.23.4"
artifacts:
  crictl:
    version: 1.32.0
    gomod:
      module: sigs.k8s.io/cri-tools
      version: v{{version}}
      sum: ` + testSum + `
      packages: [./cmd/crictl]
      ldflags: ["-s", "-w", "-X main.v={{version}}"]
      toolchain: "{{GO}}"
      cc: {linux/arm64: aarch64-linux-gnu-gcc}
  kind:
    version: 0.26.0
    default: source
    modes:
      source:
        gomod:
          module: sigs.k8s.io/kind
          version: v{{version}}
          sum: ` + testSum + `
          packages: .
          trimpath: false
      release:
        url: https://example.com/kind-{{arch}}
        sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a
images:
  node:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: crictl, dest: /usr/local/bin/}
      - {artifact: kind, dest: /usr/local/bin/}
`

// Both forms plan into the gomod kind, with the module's version, the
// toolchain and the per-platform compiler expanded.
func TestGoModulePlan(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(gomodRecipe))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := p.Artifacts["crictl@linux/arm64"]
	m, ok := a.Kind.(*artifact.GoModule)
	if !ok {
		t.Fatalf("crictl planned as %T", a.Kind)
	}
	want := artifact.GoModule{Path: "sigs.k8s.io/cri-tools", Version: "v1.32.0", Sum: testSum, Go: artifact.Go{
		Module: ".", Packages: []string{"./cmd/crictl"}, Ldflags: []string{"-s", "-w", "-X main.v=1.32.0"},
		Trimpath: true, Version: "1.23.4", CC: "aarch64-linux-gnu-gcc"}}
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("crictl:\n got %+v\nwant %+v", *m, want)
	}
	if a.Mode != "" || !strings.HasSuffix(a.Pos.String(), ":7:5") {
		t.Errorf("crictl: mode %q, at %s", a.Mode, a.Pos)
	}
	a = p.Artifacts["kind@linux/amd64"]
	m, ok = a.Kind.(*artifact.GoModule)
	if !ok || a.Mode != "source" || m.Path != "sigs.k8s.io/kind" || m.Version != "v0.26.0" || m.Go.Trimpath || m.Go.Version != "" {
		t.Errorf("kind: %s mode, %+v", a.Mode, a.Kind)
	}
	p, err = r.Plan(Options{Modes: map[string]Choice{"kind": {Mode: "release"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Artifacts["kind@linux/amd64"].Kind.(*artifact.URL); !ok {
		t.Errorf("kind in release mode planned as %T", p.Artifacts["kind@linux/amd64"].Kind)
	}
	reqs, err := r.Fetchable(Options{Platforms: []string{"linux/amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for _, q := range reqs {
		if m, ok := q.Kind.(*artifact.GoModule); ok {
			mods = append(mods, m.Path)
		}
	}
	sort.Strings(mods)
	if strings.Join(mods, " ") != "sigs.k8s.io/cri-tools sigs.k8s.io/kind" {
		t.Errorf("pallet fetch would mirror the modules %v", mods)
	}
}

// Each pin and setting is checked where it is written.
func TestGoModuleErrors(t *testing.T) {
	checkEdits(t, gomodRecipe, []editCase{
		{"no sum", "      sum: " + testSum + "\n", "", 7, "gomod.sum must be the module's go.sum hash"},
		{"no sum, and where it comes from", "      sum: " + testSum + "\n", "", 7, "`go mod download -json sigs.k8s.io/cri-tools@v1.32.0` prints it as Sum"},
		{"no sum, and that lock writes it", "      sum: " + testSum + "\n", "", 7, "pallet lock writes it"},
		{"sha256 as sum", "      sum: " + testSum, "      sum: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", 10, `h1: and 44 base64 characters (got "0a0a`},
		{"query", "      version: v{{version}}", "      version: latest", 9, "a query such as latest does not"},
		{"expanded query", "    version: 1.32.0", "    version: latest", 9, "a query such as latest does not"},
		{"toolchain as version", "      version: v{{version}}", `      version: "1.23.4"`, 9, "invalid version"},
		{"bad path", "      module: sigs.k8s.io/cri-tools", "      module: cri-tools", 8, "malformed module path"},
		{"no module", "      module: sigs.k8s.io/cri-tools\n", "", 7, "gomod.module is required"},
		{"no packages", "      packages: [./cmd/crictl]\n", "", 7, "gomod.packages is required"},
		{"bad toolchain", `      toolchain: "{{GO}}"`, `      toolchain: "1.23.x"`, 13, "want a release such as 1.23.4"},
		// --min-go takes go1.26.8 too; a recipe's pin is said one way.
		{"toolchain with its go", `      toolchain: "{{GO}}"`, `      toolchain: "go1.26.8"`, 13, `go version "go1.26.8": write the release without go, "1.26.8": pallet sets GOTOOLCHAIN=go1.26.8 from it`},
		{"language version with its go", `      toolchain: "{{GO}}"`, `      toolchain: "go1.23"`, 13, "write the release without go, and Go releases from 1.21 on are named with their patch; want 1.23.0"},
		// No toolchain before Go 1.21 can be downloaded: refused where
		// written, not in the build's go mod download.
		{"toolchain before 1.21", `      toolchain: "{{GO}}"`, `      toolchain: 1.3`, 13, `go version "1.3": GOTOOLCHAIN selects only Go 1.21.0 and later`},
		{"toolchain before 1.21, with its patch", `      toolchain: "{{GO}}"`, `      toolchain: 1.20.3`, 13, `go version "1.20.3": GOTOOLCHAIN selects only Go 1.21.0 and later`},
		{"expanded toolchain before 1.21", `  GO: "1.23.4"`, `  GO: "1.19rc1"`, 13, `go version "1.19rc1": GOTOOLCHAIN selects only`},
		{"bad expanded toolchain", `  GO: "1.23.4"`, `  GO: "1.23.x"`, 13, "want a release such as 1.23.4"},
		{"language version as toolchain", `  GO: "1.23.4"`, `  GO: "1.26"`, 13, "want 1.26.0 or a later 1.26.N"},
		{"leading zero in the toolchain", `      toolchain: "{{GO}}"`, `      toolchain: "1.021.0"`, 13, `go version "1.021.0": no Go release has a number with a leading zero`},
		{"leading zero in the patch", `  GO: "1.23.4"`, `  GO: "1.23.04"`, 13, `go version "1.23.04": no Go release has a number with a leading zero`},
		{"package by absolute path", "      packages: [./cmd/crictl]", "      packages: [/tmp/x/main.go]", 11, "is outside the module"},
		{"a flag as a package", "      packages: [./cmd/crictl]", "      packages: [-toolexec=/tmp/x, ./cmd/crictl]", 11, `package "-toolexec=/tmp/x" begins with '-', which go build reads as a flag`},
		{"package above the module", "      packages: [./cmd/crictl]", "      packages: [./cmd/../../x]", 11, "is outside the module"},
		{"output flag", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-buildmode=pie, -o, /tmp/x]", 12, "flag -o: pallet chooses where"},
		{"overlay flag", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [--overlay=/tmp/o.json]", 12, "flag --overlay=/tmp/o.json: it replaces the module's files with those its JSON names"},
		// An overlay inside the module still names replacements anywhere.
		{"overlay inside the module", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-overlay=overlay.json]", 12, "flag -overlay=overlay.json: it replaces the module's files"},
		{"toolexec flag", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-toolexec, ./wrap]", 12, "flag -toolexec: it runs a program around every compile and link"},
		{"pkgdir flag", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-pkgdir=pkg]", 12, "flag -pkgdir=pkg: it reads installed packages"},
		{"linkshared flag", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-linkshared]", 12, "flag -linkshared: it links against shared libraries"},
		{"another compiler", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-compiler=gccgo]", 12, "flag -compiler=gccgo: pallet builds with the pinned Go toolchain's own compiler"},
		{"include directory in gcflags", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [\"-gcflags=all=-N -l -I /tmp/inc\"]", 12, "-I hands the compiler or assembler a path (I)"},
		{"importcfg in gcflags, value next", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-gcflags, \"-importcfg=/tmp/cfg\"]", 12, "flag -gcflags: -importcfg=/tmp/cfg hands the compiler"},
		{"include directory in asmflags", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [\"-asmflags=example.com/...=-I=inc\"]", 12, "-I=inc hands the compiler or assembler a path"},
		{"profile in GOFLAGS' gcflags", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [\"GOFLAGS=-gcflags=-pgoprofile=/tmp/p\"]", 12, "GOFLAGS flag -gcflags=-pgoprofile=/tmp/p: -pgoprofile=/tmp/p hands the compiler"},
		{"modfile flag", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      flags: [-modfile, ../other.mod]", 12, "reads a file outside the module"},
		// GOFLAGS in env is read as flags: the same are refused there.
		{"modfile in GOFLAGS", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [GOAMD64=v2, \"GOFLAGS=-v -modfile=/tmp/x.mod\"]", 12, "GOFLAGS flag -modfile=/tmp/x.mod: it reads a file outside the module"},
		{"ldflags in GOFLAGS", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [GOFLAGS=-ldflags=-X=main.v=2]", 12, "GOFLAGS flag -ldflags=-X=main.v=2: use the ldflags field"},
		// The go command splits GOFLAGS at spaces outside quotes, and
		// strips the quotes (cmd/internal/quoted.Split).
		{"quoted modfile in GOFLAGS", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [\"GOFLAGS='-modfile=/tmp/x.mod'\"]", 12, "GOFLAGS flag -modfile=/tmp/x.mod: it reads a file outside the module"},
		{"quoted ldflags in GOFLAGS", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: ['GOFLAGS=-v \"-ldflags=-s -extld=/tmp/x\"']", 12, "GOFLAGS flag -ldflags=-s -extld=/tmp/x: use the ldflags field"},
		{"unterminated quote in GOFLAGS", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [\"GOFLAGS='-modfile=/tmp/x.mod\"]", 12, "GOFLAGS: unterminated ' string"},
		{"a go.work", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [GOWORK=/tmp/go.work]", 12, "GOWORK=/tmp/go.work: the build reads no work file"},
		{"a go env file", "      packages: [./cmd/crictl]", "      packages: [./cmd/crictl]\n      env: [GOENV=/tmp/env]", 12, "GOENV=/tmp/env: the build reads no env file"},
		{"short commit", "      sum: " + testSum + "\n      packages: [./cmd/crictl]", "      sum: " + testSum + "\n      commit: 0123abc\n      packages: [./cmd/crictl]", 11, "gomod.commit must be a full commit hash"},
		{"{{commit}} without one", `"-X main.v={{version}}"`, `"-X main.c={{commit}}"`, 12, "the one its gomod section names (gomod.commit)"},
		{"commit not the pseudo-version's", "    version: 1.32.0\n    gomod:\n      module: sigs.k8s.io/cri-tools\n      version: v{{version}}\n      sum: " + testSum + "\n",
			"    version: 0.0.0-20240102030405-abcdefabcdef\n    gomod:\n      module: sigs.k8s.io/cri-tools\n      version: v{{version}}\n      sum: " + testSum + "\n      commit: 0123456789abcdef0123456789abcdef01234567\n", 11, "is not the one pseudo-version v0.0.0-20240102030405-abcdefabcdef names"},
		{"bad cc platform", "      cc: {linux/arm64:", "      cc: {linux/arm46:", 14, "unknown platform"},
		{"git too", "        gomod:\n", "        git: {repo: https://example.com/kind.git, commit: 0123456789abcdef0123456789abcdef01234567}\n        gomod:\n", 20, "give either git and go, or gomod"},
		{"two kinds", "    gomod:\n      module: sigs.k8s.io/cri-tools", "    url: {url: https://example.com/x, sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a}\n    gomod:\n      module: sigs.k8s.io/cri-tools", 5, "exactly one of local, url, go, gomod, modes"},
	})
}

// The schema knows both forms, rejects what the parser rejects for shape,
// and names exactly the fields of GoModule.
func TestGoModuleSchema(t *testing.T) {
	s := compileSchema(t)
	if err := s.Validate(yamlToJSONValue(t, []byte(gomodRecipe))); err != nil {
		t.Fatalf("schema: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(gomodRecipe, "      sum: "+testSum+"\n", "", 1),
		strings.Replace(gomodRecipe, "sum: "+testSum, "sum: h1:short=", 1),
		strings.Replace(gomodRecipe, "      version: v{{version}}", "      version: latest", 1),
		strings.Replace(gomodRecipe, "        gomod:\n", "        go: {packages: .}\n        gomod:\n", 1),
		// The go section's version is the toolchain; here it is the module's.
		strings.Replace(gomodRecipe, "      version: v{{version}}", `      version: "1.23.4"`, 1),
	} {
		if err := s.Validate(yamlToJSONValue(t, []byte(bad))); err == nil {
			t.Errorf("schema accepted:\n%s", bad)
		}
	}
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	props := root["$defs"].(map[string]any)["goModule"].(map[string]any)["properties"].(map[string]any)
	var fields, names []string
	typ := reflect.TypeOf(GoModule{})
	for i := 0; i < typ.NumField(); i++ {
		fields = append(fields, typ.Field(i).Tag.Get("yaml"))
	}
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(fields)
	sort.Strings(names)
	if !reflect.DeepEqual(fields, names) {
		t.Errorf("GoModule fields %v, schema properties %v", fields, names)
	}
}

// editCase is a recipe edited to be wrong, the line its error must name
// and what the message must say.
type editCase struct {
	name, old, new string
	line           int
	want           string
}

// checkEdits parses and plans src with each case's edit, and wants the
// located error it describes.
func checkEdits(t *testing.T, src string, cases []editCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.old) {
				t.Fatalf("recipe lacks %q", tc.old)
			}
			r, err := Parse("pallet.yaml", []byte(strings.Replace(src, tc.old, tc.new, 1)))
			if err == nil {
				_, err = r.Plan(Options{})
			}
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("got %v (%T), want a located error containing %q", err, err, tc.want)
			}
			if e.Line != tc.line || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("got %v (line %d), want line %d containing %q", e, e.Line, tc.line, tc.want)
			}
		})
	}
}

// pallet lock reads a recipe whose gomod sum is missing, as it is the pin
// lock writes; one that is written must still be well formed.
func TestGoModuleUnpinned(t *testing.T) {
	if _, err := ParseUnpinned("pallet.yaml", []byte(strings.Replace(gomodRecipe, "      sum: "+testSum+"\n", "", 1))); err != nil {
		t.Errorf("lock's reading of a recipe without a sum: %v", err)
	}
	_, err := ParseUnpinned("pallet.yaml", []byte(strings.Replace(gomodRecipe, "      sum: "+testSum, "      sum: h1:short", 1)))
	if err == nil || !strings.Contains(err.Error(), "gomod.sum must be the module's go.sum hash") {
		t.Errorf("lock's reading of a recipe with a malformed sum: %v", err)
	}
}

// Flags that change how the code is compiled, but read no file by path,
// are the recipe's to give: refusing them would refuse real builds.
func TestGoFlagsAllowed(t *testing.T) {
	for _, f := range [][2]string{
		{"-gcflags=all=-N -l", ""},
		{"-gcflags", "-d=checkptr"},
		{"-asmflags=-D=GOAMD64_v3", ""},
		{"-gcflags=all=-trimpath=/src -spectre=all", ""},
		{"-compiler=gc", ""},
		{"-buildmode=pie", ""},
		{"-race", ""},
		{"-pgo=off", ""},
		{"-buildvcs=false", ""},
	} {
		if why := refusedFlag(f[0], f[1]); why != "" {
			t.Errorf("%s %s refused: %s", f[0], f[1], why)
		}
	}
}
