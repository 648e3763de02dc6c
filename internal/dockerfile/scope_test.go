package dockerfile

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/plan"
)

// ARG scoping as BuildKit has it: a global ARG is seen by FROM lines only,
// until a stage declares it again; an override wins over every default.
func TestDockerfileArgScoping(t *testing.T) {
	tests := []struct {
		name string
		df   string
		args map[string]string
		want map[string]string
		err  string
	}{
		{"a global ARG names the base", "ARG BASE=scratch\nFROM $BASE\nLABEL ok=1", nil, map[string]string{"ok": "1"}, ""},
		{"redeclared without value, it takes the global value", "ARG V=1\nFROM scratch\nARG V\nLABEL v=$V", nil, map[string]string{"v": "1"}, ""},
		{"redeclared with a default, the stage's wins over the global", "ARG V=1\nFROM scratch\nARG V=2\nLABEL v=$V", nil, map[string]string{"v": "2"}, ""},
		{"an override wins over both", "ARG V=1\nFROM scratch\nARG V=2\nLABEL v=$V", map[string]string{"V": "3"}, map[string]string{"v": "3"}, ""},
		{"an override reaches a global ARG", "ARG V=1\nFROM scratch\nARG V\nLABEL v=$V", map[string]string{"V": "3"}, map[string]string{"v": "3"}, ""},
		{"not redeclared, it is not seen", "ARG V=1\nFROM scratch\nLABEL v=$V", nil, nil, "declare it in this stage too: ARG V"},
		{"a stage ARG is not seen by the next stage", "FROM scratch AS a\nARG W=1\nFROM scratch\nLABEL w=${W:-unset}", nil, map[string]string{"w": "unset"}, ""},
		{"a stage continuing another inherits its ARGs", "FROM scratch AS a\nARG W=1\nFROM a\nLABEL w=$W", nil, map[string]string{"w": "1"}, ""},
		{"declared without value, it is empty", "FROM scratch\nARG E\nLABEL e=[$E]", nil, map[string]string{"e": "[]"}, ""},
		{"defaults expand earlier ARGs", "ARG A=x\nARG B=${A}y\nFROM scratch\nARG B\nLABEL b=$B", nil, map[string]string{"b": "xy"}, ""},
		{"ENV overrides ARG for later lines", "FROM scratch\nARG X=arg\nENV X=env\nLABEL x=$X", nil, map[string]string{"x": "env"}, ""},
		{"ENV values expand with the previous values", "FROM scratch\nENV A=1\nENV A=2 B=$A\nLABEL b=$B", nil, map[string]string{"b": "1"}, ""},
		{"automatic platform ARGs, once declared", "FROM scratch\nARG TARGETOS TARGETARCH\nLABEL p=$TARGETOS-$TARGETARCH", nil, map[string]string{"p": "linux-amd64"}, ""},
		{"an override of an undeclared ARG names it", "FROM scratch", map[string]string{"NOPE": "1", "NADA": "2"}, nil, "--arg NADA, NOPE: "},
		{"SOURCE_DATE_EPOCH needs no ARG", "FROM scratch\nLABEL a=b", map[string]string{"SOURCE_DATE_EPOCH": "10"}, map[string]string{"a": "b"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planCase(t, map[string]string{"Dockerfile": tc.df + "\n"}, Options{Args: tc.args}, tc.err)
			if p == nil {
				return
			}
			if got := p.Images[0].Platforms[0].Config.Labels; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("labels %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDockerfileEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	df := map[string]string{"Dockerfile": "FROM scratch\n"}
	if p := mustPlan(t, df, Options{}); !p.Epoch.Equal(time.Unix(0, 0)) {
		t.Errorf("default epoch %v", p.Epoch)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if p := mustPlan(t, df, Options{}); p.Epoch.Unix() != 1700000000 {
		t.Errorf("epoch from the environment %v", p.Epoch)
	}
	if p := mustPlan(t, df, Options{Args: map[string]string{"SOURCE_DATE_EPOCH": "42"}}); p.Epoch.Unix() != 42 {
		t.Errorf("epoch from the build arg %v, want it to win over the environment", p.Epoch)
	}
	if _, err := planFiles(t, df, Options{Args: map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}}); err == nil || !strings.Contains(err.Error(), "Unix seconds") {
		t.Errorf("bad epoch: %v", err)
	}
	// An ARG of it takes the environment's value as buildx passes it on,
	// as a build arg; the build arg still wins.
	epoch7 := int64(7)
	declared := map[string]string{"Dockerfile": "FROM scratch\nARG SOURCE_DATE_EPOCH\nLABEL created=$SOURCE_DATE_EPOCH\n"}
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{}, "1700000000"},
		{Options{Args: map[string]string{"SOURCE_DATE_EPOCH": "42"}}, "42"},
		{Options{Epoch: &epoch7}, "7"},
	} {
		p := mustPlan(t, declared, c.opt)
		if got := p.Images[0].Platforms[0].Config.Labels["created"]; got != c.want {
			t.Errorf("ARG SOURCE_DATE_EPOCH with %v and SOURCE_DATE_EPOCH=1700000000 in the environment: label %q, want %q", c.opt.Args, got, c.want)
		}
	}
}

// The context's ignore file leaves files out of COPY sources, "!" takes
// some back, and the Dockerfile's own ignore file wins over the
// context's.
func TestDockerfileDockerignore(t *testing.T) {
	files := map[string]string{
		"app/main.go": "m", "app/README.md": "r", "app/docs/guide.md": "g", "app/docs/keep.md": "k",
		"app/.git/HEAD": "h", "app/bin/app": "a", "top.md": "t", "top.txt": "x",
	}
	tests := []struct {
		name    string
		ignore  map[string]string
		df      string
		want    []string
		filters map[string]bool
	}{
		{"nothing ignored: a plain local directory", nil, "COPY app /app/", []string{"/app/<-local:app"}, nil},
		{"exclusions inside a copied directory", map[string]string{".dockerignore": "**/*.md\napp/.git\n"}, "COPY app /app/", []string{"/app/<-filtered:app"},
			map[string]bool{"main.go": true, "bin/app": true, "README.md": false, "docs/guide.md": false, ".git/HEAD": false}},
		{"! takes a file back", map[string]string{".dockerignore": "**/*.md\n!app/docs/keep.md\n"}, "COPY app /app/", []string{"/app/<-filtered:app"},
			map[string]bool{"main.go": true, "docs/keep.md": true, "docs/guide.md": false, "README.md": false}},
		{"an excluded directory with a file taken back", map[string]string{".dockerignore": "app/docs\n!app/docs/keep.md\n"}, "COPY app/docs /docs/", []string{"/docs/<-filtered:app/docs"},
			map[string]bool{"keep.md": true, "guide.md": false}},
		{"patterns skip ignored matches", map[string]string{".dockerignore": "top.md\n"}, "COPY top.* /t/", []string{"/t/<-local:top.txt"}, nil},
		{"the Dockerfile's own ignore file wins", map[string]string{".dockerignore": "**/*.go\n", "Dockerfile.dockerignore": "app/bin\n"}, "COPY app /app/", []string{"/app/<-filtered:app"},
			map[string]bool{"main.go": true, "bin/app": false}},
		{"--exclude, relative to the source", nil, "COPY --exclude=*.md --exclude=.git app /app/", []string{"/app/<-filtered:app"},
			map[string]bool{"main.go": true, "README.md": false, "docs/guide.md": true, ".git/HEAD": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": "FROM scratch\n" + tc.df + "\n"}
			for k, v := range files {
				fs[k] = v
			}
			for k, v := range tc.ignore {
				fs[k] = v
			}
			p := mustPlan(t, fs, Options{})
			if got := placements(t, p); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("layers\n got %q\nwant %q", got, tc.want)
			}
			if tc.filters == nil {
				return
			}
			k := p.Artifacts[p.Images[0].Platforms[0].Layers[0].Placements[0].Artifact].Kind.(*localDir)
			entries, _, err := scan(k.Path, k.filter)
			if err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			for _, e := range entries {
				kept[e.rel] = true
			}
			for f, want := range tc.filters {
				if kept[f] != want {
					t.Errorf("%s kept=%v, want %v (kept: %v)", f, kept[f], want, kept)
				}
			}
		})
	}
}

// Every planned thing has a position: the image at the target's FROM,
// the base at its name, each placement and artifact at its source word.
func TestDockerfilePositions(t *testing.T) {
	df := "# syntax=docker/dockerfile:1\nARG BASE=scratch\n\nFROM   ${BASE} AS final\nCOPY --chmod=0755 bin/hello \\\n     etc/ /opt/\n"
	p := mustPlan(t, map[string]string{"Dockerfile": df, "bin/hello": "h", "etc/a": "a"}, Options{})
	im := p.Images[0]
	pi := im.Platforms[0]
	check := func(what string, got plan.Pos, line, col int) {
		t.Helper()
		if !strings.HasSuffix(got.File, "Dockerfile") || got.Line != line || got.Col != col {
			t.Errorf("%s at %s, want %d:%d", what, got, line, col)
		}
	}
	check("image", im.Pos, 4, 1)
	check("base", pi.BasePos, 4, 8)
	ps := pi.Layers[0].Placements
	check("first placement", ps[0].Pos, 5, 19)
	check("second placement", ps[1].Pos, 6, 6)
	check("first artifact", p.Artifacts[ps[0].Artifact].Pos, 5, 19)
	check("second artifact", p.Artifacts[ps[1].Artifact].Pos, 6, 6)
	if pi.Bases[0] != "scratch" {
		t.Errorf("bases %v", pi.Bases)
	}
}

// An ARG given a value after an ENV of the same name is what the words
// after it see, while the config keeps the ENV; a stage continuing
// another sees the parent's ENV again but keeps its other ARGs. Labels
// and env checked against BuildKit v0.29.0 (buildctl, dockerfile.v0) on
// this Dockerfile, with --build-arg O=cli.
func TestDockerfileArgAfterEnv(t *testing.T) {
	df := `ARG G=global
ARG H=hglobal
FROM scratch AS a
ENV X=1 G=envg N=envn O=envo H=envh
ARG X=argval
ARG G
ARG N
ARG O
ARG Q=qa
ENV Y=$X GG=$G NN=$N OO=$O
LABEL x=$X g=$G n=$N o=$O
ARG H
LABEL h=$H
FROM a AS b
LABEL q=$Q
ENV Z=$X
ARG X=again
LABEL x2=$X
ENV X=envlast
LABEL x3=$X
`
	p := mustPlan(t, map[string]string{"Dockerfile": df}, Options{Args: map[string]string{"O": "cli"}})
	cfg := p.Images[0].Platforms[0].Config
	wantLabels := map[string]string{"g": "global", "h": "hglobal", "n": "envn", "o": "cli", "q": "qa", "x": "argval", "x2": "again", "x3": "envlast"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", cfg.Labels, wantLabels)
	}
	wantEnv := []string{"PATH=" + defaultPath, "X=envlast", "G=envg", "N=envn", "O=envo", "H=envh", "Y=argval", "GG=global", "NN=envn", "OO=cli", "Z=1"}
	if !reflect.DeepEqual(cfg.Env, wantEnv) {
		t.Errorf("env %q, want %q", cfg.Env, wantEnv)
	}
}
