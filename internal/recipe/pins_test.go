package recipe

import (
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

// unpinnedSrc lacks every pin lock can resolve: a release without sha256,
// a download pinned for one of its two platforms, a source with a tag but
// no commit.
const unpinnedSrc = `version: 1
artifacts:
  tool:
    version: "1.2"
    default: source
    modes:
      source:
        git: {repo: "https://example.com/tool.git", tag: "v{{version}}"}
        go:
          packages: .
          ldflags: ["-X main.commit={{commit}}", "-X main.tag={{tag}}"]
      release:
        url: https://example.com/tool-{{version}}-{{os}}-{{arch}}.tgz
        checksums: https://example.com/tool-{{version}}-SHA256SUMS
  data:
    url:
      url: https://example.com/data.tgz
  cni:
    url:
      url: https://example.com/cni-{{arch}}.tgz
      sha256:
        linux/amd64: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: tool, dest: /bin/}
      - {artifact: data, dest: /data/}
      - {artifact: cni, dest: /cni/}
      - {artifact: data, dest: /arm/, platforms: linux/arm64}
`

// A build refuses each missing pin at its line; lock reads the same
// recipe. A malformed pin is refused by both.
func TestParseUnpinned(t *testing.T) {
	pinData := func(s string) string {
		return strings.Replace(s, "      url: https://example.com/data.tgz\n", "      url: https://example.com/data.tgz\n      sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a\n", 1)
	}
	pinTool := func(s string) string {
		s = strings.Replace(s, `tag: "v{{version}}"`, `tag: "v{{version}}", commit: 0123456789abcdef0123456789abcdef01234567`, 1)
		return strings.Replace(s, "checksums: https://example.com/tool-{{version}}-SHA256SUMS", "sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", 1)
	}
	for _, tc := range []struct {
		name, src string
		line      int
		msg       string
	}{
		{"sha256", unpinnedSrc, 16, "sha256 is required"},
		{"commit", pinData(unpinnedSrc), 8, "a tag or short hash alone is not a pin"},
		{"release", pinData(strings.Replace(unpinnedSrc, `tag: "v{{version}}"`, `tag: "v{{version}}", commit: 0123456789abcdef0123456789abcdef01234567`, 1)), 12, "sha256 is required"},
		{"platform", pinData(pinTool(unpinnedSrc)), 22, "no sha256 pinned for linux/arm64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("pallet.yaml", []byte(tc.src))
			wantErrorAt(t, err, tc.line, tc.msg)
			if _, err := ParseUnpinned("pallet.yaml", []byte(tc.src)); err != nil {
				t.Errorf("ParseUnpinned: %v", err)
			}
		})
	}
	for _, bad := range []struct{ from, to, msg string }{
		{"linux/amd64: 0a0a", "linux/amd64: 0A0a", "64 lower-case hex digits"},
		{`tag: "v{{version}}"`, `commit: abc`, "full commit hash"},
		{`tag: "v{{version}}"`, `repo2: x`, "field repo2 not found"},
		{"checksums: https://", "checksums: ftp://", "checksums: url must be http"},
	} {
		_, err := ParseUnpinned("pallet.yaml", []byte(strings.Replace(unpinnedSrc, bad.from, bad.to, 1)))
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s → %s: err = %v, want %q", bad.from, bad.to, err, bad.msg)
		}
	}
}

func TestDownloadsAndGitPins(t *testing.T) {
	r, err := ParseUnpinned("pallet.yaml", []byte(unpinnedSrc))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := r.Downloads(PinSelection{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Download{}
	for _, d := range ds {
		got[d.Artifact] = d
	}
	if d := got["data"]; d == nil || d.PerPlatform || len(d.Targets) != 2 || d.Targets[0].Pinned || Path(d.Keys...) != "artifacts.data.url" {
		t.Errorf("data: %+v", d)
	}
	if d := got["cni"]; d == nil || !d.PerPlatform || !d.Targets[0].Pinned || d.Targets[0].Selector != "linux/amd64" || d.Targets[1].Pinned {
		t.Errorf("cni: %+v", d)
	}
	d := got["tool"]
	if d == nil || Path(d.Keys...) != "artifacts.tool.modes.release" || !d.PerPlatform {
		t.Fatalf("tool: %+v", d)
	}
	if tg := d.Targets[1]; tg.Platform.String() != "linux/arm64" || tg.URL != "https://example.com/tool-1.2-linux-arm64.tgz" || tg.Checksums != "https://example.com/tool-1.2-SHA256SUMS" {
		t.Errorf("tool arm64: %+v", tg)
	}

	ds, err = r.Downloads(PinSelection{Platforms: []string{"linux/arm64"}, Artifacts: []string{"cni"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Targets[0].Selected || !ds[0].Targets[1].Selected {
		t.Errorf("selection: %+v", ds)
	}
	if _, err := r.Downloads(PinSelection{Artifacts: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "artifact nope: not in") {
		t.Errorf("unknown artifact: %v", err)
	}

	gs, err := r.GitPins(PinSelection{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].Tag != "v1.2" || gs[0].Repo != "https://example.com/tool.git" || gs[0].Commit != "" || Path(gs[0].Keys...) != "artifacts.tool.modes.source.git" {
		t.Errorf("git pins: %+v", gs)
	}
}

// {{commit}} and {{tag}} are the git source's pins wherever {{version}}
// is expanded; without a git source they are an error at their line.
func TestCommitAndTagVariables(t *testing.T) {
	src := strings.Replace(unpinnedSrc, `tag: "v{{version}}"`, `tag: "v{{version}}", commit: 0123456789abcdef0123456789abcdef01234567`, 1)
	src = strings.Replace(src, "checksums: https://example.com/tool-{{version}}-SHA256SUMS", "sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", 1)
	src = strings.Replace(src, "  data:\n    url:\n      url: https://example.com/data.tgz\n", "  data:\n    url:\n      url: https://example.com/data.tgz\n      sha256: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a\n", 1)
	src = strings.Replace(src, "linux/amd64: 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", 1)
	r, err := Parse("pallet.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{Platforms: []string{"linux/amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := p.Artifacts["tool@linux/amd64"].Kind.(*artifact.Git)
	if !ok {
		t.Fatalf("kind %T", p.Artifacts["tool@linux/amd64"].Kind)
	}
	want := []string{"-X main.commit=0123456789abcdef0123456789abcdef01234567", "-X main.tag=v1.2"}
	if strings.Join(g.Go.Ldflags, " ") != strings.Join(want, " ") || g.Tag != "v1.2" {
		t.Errorf("ldflags %q, tag %q", g.Go.Ldflags, g.Tag)
	}
	// The cache key is made of the expanded ldflags: a new commit is a
	// new key even if nothing else in the recipe changes.
	k1, _, err := g.Key(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Parse("pallet.yaml", []byte(strings.Replace(src, "0123456789abcdef0123456789abcdef01234567", "1123456789abcdef0123456789abcdef01234567", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := r2.Plan(Options{Platforms: []string{"linux/amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	k2, _, _ := p2.Artifacts["tool@linux/amd64"].Kind.(*artifact.Git).Key(nil, nil)
	if strings.Join(k1, "\x00") == strings.Join(k2, "\x00") {
		t.Error("the cache key does not change with the commit {{commit}} expands to")
	}

	bad := strings.Replace(src, "      url: https://example.com/data.tgz\n", "      url: https://example.com/data-{{commit}}.tgz\n", 1)
	r3, err := Parse("pallet.yaml", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r3.Plan(Options{})
	wantErrorAt(t, err, 17, "{{commit}} is the commit of the artifact's git source")

	if _, err := Parse("pallet.yaml", []byte(strings.Replace(src, "version: 1\n", "version: 1\nargs: {commit: x}\n", 1))); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("an arg named commit: %v", err)
	}
}
