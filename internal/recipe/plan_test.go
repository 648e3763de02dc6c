package recipe

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

const src = `version: 1
args:
  V: "1"
artifacts:
  tool:
    version: "{{V}}.0"
    default: release
    modes:
      source:
        git: {repo: "https://example.com/tool.git", commit: 0123456789abcdef0123456789abcdef01234567}
        go: {packages: ., version: "1.23.4"}
      release:
        url: https://example.com/tool-{{version}}-{{os}}-{{arch}}.tgz
        sha256: {linux/amd64: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a, linux/arm64: 0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b}
      local: {}
images:
  keep:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: tool, dest: /bin/}
      - {artifact: tool, dest: /opt/bin/, platforms: linux/arm64}
  clear:
    base: scratch
    platforms: linux/amd64
    config:
      cmd: []
`

func parse(t *testing.T) *Recipe {
	t.Helper()
	r, err := Parse("pallet.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestModesExpandOnlyTheChosen(t *testing.T) {
	r := parse(t)
	p, err := r.Plan(Options{Images: []string{"keep"}})
	if err != nil {
		t.Fatal(err)
	}
	a := p.Artifacts["tool@linux/arm64"]
	if u, ok := a.Kind.(*artifact.URL); a.Mode != "release" || !ok || u.URL != "https://example.com/tool-1.0-linux-arm64.tgz" || a.Version != "1.0" {
		t.Errorf("default mode request: %+v %+v", a, a.Kind)
	}
	p, err = r.Plan(Options{Images: []string{"keep"}, Args: map[string]string{"V": "2"}, Modes: map[string]Choice{"tool": {Mode: "source"}}})
	if err != nil {
		t.Fatal(err)
	}
	a = p.Artifacts["tool@linux/amd64"]
	if g, ok := a.Kind.(*artifact.Git); !ok || g.Go.Version != "1.23.4" || a.Version != "2.0" {
		t.Errorf("source mode request: %+v", a)
	}
	// One artifact placed twice carries its licences once per image.
	var withLicences int
	for _, pi := range p.Images[0].Platforms {
		for _, l := range pi.Layers {
			for _, pm := range l.Placements {
				if pm.Licenses {
					withLicences++
				}
			}
		}
	}
	if withLicences != 2 {
		t.Errorf("%d placements carry licences, want one per platform image", withLicences)
	}
}

func TestPlacementPlatformsAndConfig(t *testing.T) {
	p, err := parse(t).Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var clear, keep *plan.Image
	for _, im := range p.Images {
		switch im.Name {
		case "clear":
			clear = im
		case "keep":
			keep = im
		}
	}
	if n := len(keep.Platforms[0].Layers); n != 1 {
		t.Errorf("linux/amd64 has %d layers; the arm64-only placement leaked", n)
	}
	if n := len(keep.Platforms[1].Layers); n != 2 {
		t.Errorf("linux/arm64 has %d layers, want 2", n)
	}
	if c := keep.Platforms[0].Config; c.Cmd != nil || c.Entrypoint != nil {
		t.Errorf("unset config lists must stay nil (inherit): %+v", c)
	}
	if c := clear.Platforms[0].Config; c.Cmd == nil || len(c.Cmd) != 0 {
		t.Errorf("cmd: [] must clear the base's cmd: %#v", c.Cmd)
	}
}

// A path given when building takes the platform's variables, as the
// recipe's paths do: one choice serves every platform.
func TestLocalChoiceExpands(t *testing.T) {
	p, err := parse(t).Plan(Options{Images: []string{"keep"}, Modes: map[string]Choice{"tool": {Mode: "local", Path: "/patched/{{os}}-{{arch}}/tool-{{version}}"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pf := range []string{"linux/amd64", "linux/arm64"} {
		want := "/patched/" + strings.ReplaceAll(pf, "/", "-") + "/tool-1.0"
		if got := p.Artifacts["tool@"+pf].Kind.Origin().Path; got != want {
			t.Errorf("%s: local path %s, want %s", pf, got, want)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	r := parse(t)
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Platforms: []string{"linux/s390x"}}, "no image is built for platform"},
		{Options{Platforms: []string{"linux/amd46"}}, `unknown platform "linux/amd46"`},
		{Options{Images: []string{"nope"}}, "image nope: not in pallet.yaml"},
		{Options{Args: map[string]string{"W": "1"}}, "arg W: not declared"},
		{Options{Modes: map[string]Choice{"tool": {Mode: "local"}}}, "the local mode needs a path"},
		{Options{Modes: map[string]Choice{"tool": {Mode: "local", Path: "/x/{{cpu}}/tool"}}}, "the mode choice tool=local:PATH: pallet.yaml:"},
	} {
		_, err := r.Plan(tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opt, err, tc.want)
		}
	}
}

// --image narrows the build; the images come in name order, once each,
// whatever order or repetitions the flags have.
func TestImageSelectionOrder(t *testing.T) {
	r := parse(t)
	p, err := r.Plan(Options{Images: []string{"keep", "clear", "keep"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, im := range p.Images {
		names = append(names, im.Name)
	}
	if strings.Join(names, ",") != "clear,keep" {
		t.Errorf("images %v, want [clear keep]", names)
	}
}

// Two images may not end up under one repository and tag.
func TestImagesShareAName(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(`version: 1
args:
  V: "1"
images:
  a:
    repository: example.com/app
    tags: ["{{V}}", latest]
    base: scratch
    platforms: linux/amd64
  b:
    repository: example.com/app
    tags: ["{{V}}-debug", latest]
    base: scratch
    platforms: linux/amd64
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Plan(Options{})
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml:12: images a and b are both named example.com/app:latest") {
		t.Errorf("got %v", err)
	}
}

// A tag that repeats once expanded is one tag, not a clash with itself.
func TestRepeatedTagIsOneTag(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(`version: 1
args:
  V: "1"
images:
  a:
    tags: ["{{V}}", latest]
    base: scratch
    platforms: linux/amd64
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{Args: map[string]string{"V": "latest"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Images[0].Tags, ","); got != "latest" {
		t.Errorf("tags %s, want latest", got)
	}
}

// path: and link: reach the plan's placement, path with variables
// expanded; a link other than dir or file is refused where it is written.
func TestPlacementPathAndLink(t *testing.T) {
	src := `version: 1
args:
  NAME: antrea-cni
artifacts:
  antrea:
    url:
      url: https://example.com/antrea.tgz
      sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a
      extract: {}
images:
  agent:
    base: scratch
    platforms: windows/amd64
    files:
      - {artifact: antrea, dest: /k/antrea/cni/antrea.exe, path: "bin/{{NAME}}.exe"}
      - artifact: antrea
        dest: /k/antrea/share/
        path: share
        link: dir
`
	r, err := Parse("pallet.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	layers := p.Images[0].Platforms[0].Layers
	if got := layers[0].Placements[0]; got.Path != "bin/antrea-cni.exe" || got.LinkAs != tree.LinkUnknown {
		t.Errorf("first placement: %+v", got)
	}
	if got := layers[1].Placements[0]; got.Path != "share" || got.LinkAs != tree.LinkDir {
		t.Errorf("second placement: %+v", got)
	}
	_, err = Parse("pallet.yaml", []byte(strings.Replace(src, "link: dir", "link: junction", 1)))
	if err == nil || !strings.Contains(err.Error(), `link "junction": want dir or file`) || !strings.Contains(err.Error(), "pallet.yaml:19") {
		t.Errorf("got %v, want link: junction refused at its line", err)
	}
}

// Tags and repositories, once expanded, are names by the distribution
// grammar, or refused at their line before any output is written: an
// oci: layout would hold a name no tool resolves.
func TestNamesCheckedAtTheirLine(t *testing.T) {
	const names = `version: 1
args:
  V: "1"
images:
  app:
    repository: "{{R}}"
    tags:
      - "{{V}}"
      - latest
    base: scratch
    platforms: linux/amd64
  "a.":
    base: scratch
    platforms: linux/amd64
`
	for _, tc := range []struct {
		tag, repo string
		images    []string
		line      int
		want      string
	}{
		{"-x", "example.com/app", nil, 8, `image app: tag "-x" is not an image tag`},
		{".", "app", nil, 8, `tag "."`},
		{"ü", "app", nil, 8, `tag "ü"`},
		{"a:b", "app", nil, 8, `tag "a:b"`},
		{"a/b", "app", nil, 8, `tag "a/b"`},
		{strings.Repeat("y", 129), "app", nil, 8, "up to 128"},
		{"1", "App", nil, 6, `image app: repository "App" is not an image name: it must be lower-case`},
		{"1", "a..b", nil, 6, `repository "a..b"`},
		{"1", "app", []string{"a."}, 12, `image a.: repository "a." is not an image name`},
	} {
		if tc.images == nil {
			tc.images = []string{"app"}
		}
		src := strings.Replace(names, `"{{R}}"`, `"`+tc.repo+`"`, 1)
		r, err := Parse("pallet.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Plan(Options{Args: map[string]string{"V": tc.tag}, Images: tc.images})
		var re *Error
		if !errors.As(err, &re) || re.Line != tc.line || !strings.Contains(re.Msg, tc.want) {
			t.Errorf("tag %q repository %q: got %v, want line %d mentioning %q", tc.tag, tc.repo, err, tc.line, tc.want)
		}
	}
	r, err := Parse("pallet.yaml", []byte(strings.Replace(names, `"{{R}}"`, "localhost:5000/team/app", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(Options{Args: map[string]string{"V": "v1.2.3_rc.1"}, Images: []string{"app"}}); err != nil {
		t.Errorf("valid names: %v", err)
	}
}

// A local section's filename names a file placed as it is: a name, not a
// path, and not with extract.
func TestLocalFilename(t *testing.T) {
	recipe := func(local string) string {
		return "version: 1\nartifacts:\n  tool:\n    local: " + local + "\n    licenses: none\nimages:\n  app:\n    base: scratch\n    platforms: linux/amd64\n    files:\n      - artifact: tool\n        dest: /bin/\n"
	}
	r, err := Parse("pallet.yaml", []byte(recipe(`{path: "tool.{{arch}}", filename: tool}`)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Artifacts["tool@linux/amd64"].Kind.(*artifact.Local); l.Filename != "tool" || !strings.HasSuffix(l.Path, "/tool.amd64") {
		t.Errorf("local %+v", l)
	}
	for local, want := range map[string]string{
		"{path: t, filename: a/b}":                "pallet.yaml:4: artifact tool: filename \"a/b\": want a file name",
		"{path: t, filename: ..}":                 "want a file name",
		"{path: t.tgz, filename: t, extract: {}}": "pallet.yaml:4: artifact tool: filename names a file placed as it is, and extract unpacks it",
	} {
		r, err := Parse("pallet.yaml", []byte(recipe(local)))
		if err == nil {
			_, err = r.Plan(Options{})
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", local, err, want)
		}
	}
}

// {{multiarch}} is the platform's Debian multiarch tuple, for a cgo cross
// build's environment; a platform without one fails at the line that
// uses it.
func TestMultiarchVar(t *testing.T) {
	recipe := func(platforms string) string {
		return "version: 1\nartifacts:\n  tool:\n    go:\n      packages: .\n      env: [\"PKG_CONFIG_LIBDIR=/usr/lib/{{multiarch}}/pkgconfig\"]\n    licenses: none\nimages:\n  app:\n    base: scratch\n    platforms: " + platforms + "\n    files:\n      - artifact: tool\n        dest: /bin/\n"
	}
	r, err := Parse("pallet.yaml", []byte(recipe("[linux/arm64, linux/386]")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"tool@linux/arm64": "aarch64-linux-gnu", "tool@linux/386": "i386-linux-gnu"} {
		if env := p.Artifacts[key].Kind.(*artifact.Go).Env; len(env) != 1 || env[0] != "PKG_CONFIG_LIBDIR=/usr/lib/"+want+"/pkgconfig" {
			t.Errorf("%s: env %q", key, env)
		}
	}
	r, err = Parse("pallet.yaml", []byte(recipe("windows/amd64")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(Options{}); err == nil || !strings.Contains(err.Error(), "pallet.yaml:6: {{multiarch}} is Debian's multiarch tuple of a Linux platform") {
		t.Errorf("windows: %v", err)
	}
}

// The names the recipe reserves per platform are those the planner sets.
func TestPlatformVarNames(t *testing.T) {
	got := slices.Sorted(maps.Keys(platformVars(platform.Platform{OS: "linux", Arch: "arm64"})))
	if want := slices.Sorted(slices.Values(platformVarNames)); !slices.Equal(got, want) {
		t.Errorf("platformVars sets %v, platformVarNames lists %v", got, want)
	}
}

// A local path given by a --mode flag that fails is said at the flag,
// not at the recipe's own path, which names another file; one given in a
// --modes file is said at that file's line.
func TestLocalChoicePathBlamedWhereGiven(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(`version: 1
artifacts:
  tool:
    default: local
    modes:
      release:
        url: https://example.com/tool
        sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a
      local:
        path: ./tool
images:
  keep:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: tool, dest: /bin/}
`))
	if err != nil {
		t.Fatal(err)
	}
	missing := &artifact.FieldError{Field: "path", Err: errors.New("local path: stat /patched/tool: no such file or directory")}
	for _, c := range []struct {
		choice Choice
		want   string
	}{
		{Choice{}, "pallet.yaml:10:9"},
		{Choice{Mode: "local", Path: "/patched/tool"}, "--mode tool=local:/patched/tool"},
		{Choice{Mode: "local", Path: "/patched/tool", From: plan.Pos{File: "modes.yaml", Line: 2}}, "modes.yaml:2"},
	} {
		opt := Options{}
		if c.choice.Mode != "" {
			opt.Modes = map[string]Choice{"tool": c.choice}
		}
		p, err := r.Plan(opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Artifacts["tool@linux/amd64"].At(missing).String(); got != c.want {
			t.Errorf("choice %+v: a missing local path said at %s, want %s", c.choice, got, c.want)
		}
	}
}

// An epoch a Windows layer cannot carry is refused before any work, where
// it was given: the recipe's epoch line, or SOURCE_DATE_EPOCH; a Linux
// image takes it.
func TestWindowsEpochSaidWhereGiven(t *testing.T) {
	const src = `version: 1
epoch: 9999999999
images:
  lin:
    base: scratch
    platforms: [linux/amd64]
  win:
    base: windows-hostprocess-scratch
    platforms: [linux/amd64, windows/amd64]
`
	r, err := Parse("pallet.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if _, err := r.Plan(Options{Images: []string{"lin"}}); err != nil {
		t.Errorf("a Linux image: %v", err)
	}
	const why = "epoch 9999999999 (2286-11-20T17:46:39Z) is after 2262-04-11T23:47:16Z, the last time Windows' layer importer reads"
	_, err = r.Plan(Options{})
	if e, ok := err.(*Error); !ok || e.Line != 2 || !strings.Contains(e.Msg, "image win (windows/amd64): "+why) {
		t.Errorf("got %v, want line 2: image win (windows/amd64): %s", err, why)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "9999999999")
	_, err = r.Plan(Options{})
	if _, located := err.(*Error); located || err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH=9999999999: image win (windows/amd64): "+why) {
		t.Errorf("got %v, want SOURCE_DATE_EPOCH named, not the recipe's line", err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if _, err := r.Plan(Options{}); err != nil {
		t.Errorf("SOURCE_DATE_EPOCH within Windows' times: %v", err)
	}
}

// Include patterns that a name would be matched against one by one, past
// archive.MaxGlobsPerName, are refused at the pattern that makes one too
// many, once expanded ({{P}} here), before anything is fetched.
func TestIncludeGlobsBoundedAtTheirLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`version: 1
args:
  P: "*"
artifacts:
  tools:
    licenses: [none]
    url:
      url: https://example.com/tools.tgz
      sha256: a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90011
      extract:
        include:
`)
	for i := range archive.MaxGlobsPerName {
		fmt.Fprintf(&b, "          - \"x%d\"\n", i)
		fmt.Fprintf(&b, "          - \"{{P}}x%d\"\n", i)
	}
	b.WriteString(`images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: tools
        dest: /bin/
`)
	r, err := Parse("pallet.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(Options{}); err != nil {
		t.Fatalf("%d globs beginning with a wildcard: %v", archive.MaxGlobsPerName, err)
	}

	r, err = Parse("pallet.yaml", []byte(strings.Replace(b.String(), "images:", "          - \"x\"\n          - \"?y\"\nimages:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Plan(Options{})
	want := fmt.Sprintf(`pallet.yaml:%d: include pattern "?y" makes %d that begin with a wildcard`, 12+2*archive.MaxGlobsPerName+1, archive.MaxGlobsPerName+1)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
}

// An archive artifact naming no licences has its extraction add the
// licence globs to its include patterns, each tried on every name: the
// plan counts them as extraction does, refusing at the include line
// that makes one too many before anything is downloaded, and not for an
// artifact declared licence-free or one naming its licences.
func TestIncludeGlobsCountLicenceGlobsAtPlan(t *testing.T) {
	extra := len(artifact.ExtraPatterns(nil, false))
	recipe := func(licenses string) string {
		var b strings.Builder
		b.WriteString("version: 1\nartifacts:\n  tools:\n" + licenses + `    url:
      url: https://example.com/tools.tgz
      sha256: a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90011
      extract:
        include:
`)
		for i := range archive.MaxGlobsPerName - 15 {
			fmt.Fprintf(&b, "          - \"*x%d\"\n", i)
		}
		b.WriteString(`images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: tools
        dest: /bin/
`)
		return b.String()
	}
	r, err := Parse("pallet.yaml", []byte(recipe("")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Plan(Options{})
	// The include pattern that makes MaxGlobsPerName+1 with the extra
	// ones, on its line: the first is on line 9.
	first := archive.MaxGlobsPerName - extra
	want := fmt.Sprintf(`pallet.yaml:%d: include pattern "*x%d" makes %d that begin with a wildcard`, 9+first, first, archive.MaxGlobsPerName+1)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), artifact.ExtraGlobsHint) {
		t.Errorf("got %v, want %s ...; %s", err, want, artifact.ExtraGlobsHint)
	}
	for _, licenses := range []string{"    licenses: [none]\n", "    licenses: [LICENSE, docs/NOTICE]\n"} {
		r, err := Parse("pallet.yaml", []byte(recipe(licenses)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Plan(Options{}); err != nil {
			t.Errorf("%s: %v", strings.TrimSpace(licenses), err)
		}
	}
}
