package recipe

import (
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
)

const goFlagsRecipe = `version: 1
args:
  V: "1.0"
  WHO: "ci"
  TAG: "netgo"
artifacts:
  app:
    go:
      packages: ./cmd/app
      ldflags: ["-s", "-X main.version={{V}}", "-X 'main.who={{WHO}}'"]
      tags: [osusergo, "{{TAG}}"]
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /bin/}
`

// A value given at build time goes into one linker or tag argument, as
// the recipe writes it: one with a space or a quote that would make the
// go command read more flags from it is refused at its line.
func TestGoFlagValuesStayOneArgument(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(goFlagsRecipe))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
		line int    // 0: the plan is made
		want string // the error, or the ldflags joined by |
	}{
		{"defaults", nil, 0, "-s|-X main.version=1.0|-X 'main.who=ci'"},
		{"a space where the recipe quotes", map[string]string{"WHO": "Jane Doe"}, 0, "-s|-X main.version=1.0|-X 'main.who=Jane Doe'"},
		{"a quote inside a word", map[string]string{"V": `1.0'"x`}, 0, `-s|-X main.version=1.0'"x|-X 'main.who=ci'`},
		{"a linker program", map[string]string{"V": "1.0 -linkmode=external -extld=/tmp/x"}, 10, "which the linker would read as other arguments"},
		{"a tab", map[string]string{"V": "1.0\t-s"}, 10, "a variable's value holds a space or a quote"},
		{"closing the recipe's quote", map[string]string{"WHO": "ci' -extld=/tmp/x '"}, 10, "which the linker would read as other arguments"},
		{"tags from a comma", map[string]string{"TAG": "netgo,evil"}, 11, `{{TAG}} is "netgo,evil": a build tag holds no comma`},
		{"tags from a space", map[string]string{"TAG": "netgo evil"}, 11, "go build would read more tags from it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := r.Plan(Options{Args: tc.args})
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				g := p.Artifacts["app@linux/amd64"].Kind.(*artifact.Go)
				if got := strings.Join(g.Ldflags, "|"); got != tc.want {
					t.Errorf("ldflags %q, want %q", got, tc.want)
				}
				return
			}
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("got %v (%T), want an error at line %d containing %q", err, err, tc.line, tc.want)
			}
			if e.Line != tc.line || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("got %v (line %d), want line %d containing %q", e, e.Line, tc.line, tc.want)
			}
		})
	}
}

// A word that is only a variable, left empty, is no word: the recipe
// builds as the go command would read it, with that argument gone. Given,
// it is still one word.
func TestLinkerWordLeftEmpty(t *testing.T) {
	for _, tc := range []struct {
		v    Vars
		ok   bool
		tmpl string
	}{
		{Vars{"EXTRA": ""}, true, "-s -w {{EXTRA}}"},
		{Vars{"EXTRA": ""}, true, "{{EXTRA}}"},
		{Vars{"EXTRA": "-linkmode=internal"}, true, "-s -w {{EXTRA}}"},
		{Vars{"EXTRA": "-s -extld=/tmp/x"}, false, "-s -w {{EXTRA}}"},
		{Vars{"EXTRA": " "}, false, "-X main.v={{EXTRA}}"},
	} {
		expanded := strings.ReplaceAll(tc.tmpl, "{{EXTRA}}", tc.v["EXTRA"])
		if err := checkLinkerWords(tc.tmpl, expanded, tc.v); (err == nil) != tc.ok {
			t.Errorf("%q with %q: %v, want accepted %t", tc.tmpl, tc.v["EXTRA"], err, tc.ok)
		}
	}
}

// -buildvcs turned on stamps the repository around the module, which no
// cache key covers: refused in flags and in GOFLAGS, at its line; false,
// pallet's own default, may be said again.
func TestBuildVCSRefused(t *testing.T) {
	const why = "it stamps the state of the repository around the module"
	checkEdits(t, goFlagsRecipe, []editCase{
		{"true", "      tags:", "      flags: [-buildvcs=true]\n      tags:", 11, "flag -buildvcs=true: " + why},
		{"auto", "      tags:", "      flags: [-v, --buildvcs=auto]\n      tags:", 11, "flag --buildvcs=auto: " + why},
		{"alone", "      tags:", "      flags: [-buildvcs]\n      tags:", 11, "flag -buildvcs: " + why},
		{"alone before a package", "      tags:", "      flags: [-buildvcs, ./cmd/other]\n      tags:", 11, "flag -buildvcs: " + why},
		{"in GOFLAGS", "      tags:", "      env: [\"GOFLAGS=-v -buildvcs=true\"]\n      tags:", 11, "GOFLAGS flag -buildvcs=true: " + why},
	})
	for _, flags := range []string{"[-buildvcs=false]", "[--buildvcs=false, -v]"} {
		r, err := Parse("pallet.yaml", []byte(strings.Replace(goFlagsRecipe, "      tags:", "      flags: "+flags+"\n      tags:", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Plan(Options{}); err != nil {
			t.Errorf("flags %s: %v", flags, err)
		}
	}
}
