package recipe

import (
	"github.com/pallet-dev/pallet/internal/platform"
	"strings"
	"testing"
)

const good = `version: 1
args:
  VERSION: "1.0"
artifacts:
  app:
    go:
      packages: ./cmd/app
  cni:
    url:
      url: https://example.com/cni-{{os}}-{{arch}}-{{VERSION}}.tgz
      sha256:
        linux/amd64: a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90011
      extract:
        include: [host-local]
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: app
        dest: /bin/
        mode: "0755"
        owner: "1000:1000"
`

func TestParseGood(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Artifacts["app"].Go.Packages; len(got) != 1 || got[0] != "./cmd/app" {
		t.Errorf("packages = %q", got)
	}
	if got := r.Images["app"].Platforms; len(got) != 1 || got[0] != "linux/amd64" {
		t.Errorf("platforms = %q", got)
	}
	if got, _ := r.Artifacts["cni"].URL.SHA256.For(platform.Platform{OS: "linux", Arch: "amd64"}); !strings.HasPrefix(got, "a0b1") {
		t.Errorf("sha256 = %q", got)
	}
	if _, ok := r.Artifacts["cni"].URL.SHA256.For(platform.Platform{OS: "linux", Arch: "arm64"}); ok {
		t.Error("sha256 for an unpinned platform")
	}
	if l := r.Line("images.app.files.0.dest"); l != 21 {
		t.Errorf("line of dest = %d, want 21", l)
	}
}

func TestParseErrors(t *testing.T) {
	// Each case replaces one line of the good recipe (or appends) and
	// expects an error at a given line mentioning a phrase.
	tests := []struct {
		name     string
		old, new string
		line     int
		want     string
	}{
		{"unknown field", "      packages: ./cmd/app", "      packages: ./cmd/app\n      pakages: x", 8, "field pakages not found"},
		{"bad version", "version: 1", "version: 2", 1, "version must be 1"},
		{"no version", "version: 1", "", 0, "version must be 1, and is missing"},
		{"missing sha256", "      sha256:\n        linux/amd64: a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90011\n", "", 9, "sha256 is required"},
		{"short sha256", "linux/amd64: a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90011", "linux/amd64: abc", 12, "64 lower-case hex"},
		{"unknown sha platform", "linux/amd64: a0b1", "linux/amd46: a0b1", 12, `unknown platform "linux/amd46"`},
		{"unknown platform", "platforms: linux/amd64", "platforms: [linux/amd64, plan9/mips]", 18, `unknown platform "plan9/mips"`},
		// A go section's version is the same pin as a gomod toolchain.
		{"go version before 1.21", "      packages: ./cmd/app", "      packages: ./cmd/app\n      version: \"1.20.3\"", 8, `go version "1.20.3": GOTOOLCHAIN selects only Go 1.21.0 and later`},
		{"go version with its go", "      packages: ./cmd/app", "      packages: ./cmd/app\n      version: go1.26.8", 8, `write the release without go, "1.26.8"`},
		{"platform by another name", "platforms: linux/amd64", "platforms: [linux/aarch64]", 18, `unknown platform "linux/aarch64" (did you mean linux/arm64?)`},
		// A placement's platforms entry that names none of the image's
		// would place the file nowhere: refused, as a config.for key is.
		{"placement on no platform of the image", "        owner: \"1000:1000\"\n", "        owner: \"1000:1000\"\n        platforms: [windows]\n", 24, "image app: files[0] (app): platforms entry windows names none of the image's platforms (linux/amd64)"},
		{"placement on a slip", "platforms: linux/amd64\n    files:\n", "platforms: [linux/amd64, linux/arm64]\n    files:\n      - {artifact: cni, dest: /opt/, platforms: [linux/arm]}\n", 20, "platforms entry linux/arm names none of the image's platforms (linux/amd64, linux/arm64) (did you mean linux/arm64?)"},
		{"placement entry on no platform, at its line", "        owner: \"1000:1000\"\n", "        owner: \"1000:1000\"\n        platforms:\n          - linux\n          - windows/amd64\n", 26, "platforms entry windows/amd64 names none"},
		{"duplicate platform", "platforms: linux/amd64", "platforms: [linux/amd64, linux/amd64]", 18, "listed twice"},
		{"duplicate tag", "    base: scratch", "    tags: [latest, latest]\n    base: scratch", 17, `tag "latest" listed twice (first at line 17)`},
		{"duplicate tag, lines apart", "    base: scratch", "    tags:\n      - latest\n      - \"{{VERSION}}\"\n      - latest\n    base: scratch", 20, `tag "latest" listed twice (first at line 18)`},
		{"unknown artifact", "      - artifact: app", "      - artifact: ap", 20, `unknown artifact "ap"`},
		{"relative dest", "dest: /bin/", "dest: bin/", 21, "absolute path"},
		{"dest on a drive", "dest: /bin/", `dest: 'C:\k\bin\'`, 21, `names a drive: a dest is a path from the image's root, which is C:\ on Windows: write "/k/bin/"`},
		{"bad mode", `mode: "0755"`, `mode: "0985"`, 22, "octal mode"},
		{"bad owner", `owner: "1000:1000"`, `owner: "root"`, 23, "numeric uid:gid"},
		{"git outside modes", "    go:\n      packages: ./cmd/app", "    git: {repo: https://example.com/x.git, commit: 0123456789abcdef0123456789abcdef01234567}\n    go:\n      packages: ./cmd/app", 6, "field git not found; a git source is an artifact's source mode"},
		{"two kinds", "    go:\n      packages: ./cmd/app", "    go:\n      packages: ./cmd/app\n    local:\n      path: x", 5, "exactly one of"},
		{"no base", "    base: scratch\n", "", 16, "base is required"},
		{"bad url", "url: https://example.com", "url: ftp://example.com", 10, "http:// or https://"},
		{"wrong type", "    platforms: linux/amd64", "    platforms: {a: b}", 18, "cannot unmarshal"},
		{"syntax", "    base: scratch", "    base: scratch\n     x: y", 18, "mapping values are not allowed"},
		// yaml.v3 puts these at the start of the enclosing block (line 16).
		{"mis-indented key", "    platforms: linux/amd64", "   platforms: linux/amd64", 18, "did not find expected key"},
		{"unclosed list", "    platforms: linux/amd64", "    platforms: [linux/amd64", 18, "did not find expected ',' or ']'"},
		{"negative strip", "        include: [host-local]", "        strip: -1", 14, "must not be negative"},
		{"two unknown fields", "        include: [host-local]", "        includ: [host-local]\n    licenses: none\n    mdoe: x", 14, "field includ not found; did you mean include?; line 16: field mdoe not found"},
		{"empty include pattern", "        include: [host-local]", "        include: [host-local, \"\"]", 14, `include pattern "" is empty`},
		{"include pattern of a dot", "        include: [host-local]", "        include: [host-local, ./]", 14, `include pattern "./" is empty`},
		{"bad include pattern", "        include: [host-local]", "        include: [host-local, \"[x\"]", 14, `include pattern "[x": syntax error in pattern`},
		{"second document", "version: 1", "version: 1\n---\nimages: {}\n---\nx: y", 2, "one YAML document"},
		{"variable in an arg", `  VERSION: "1.0"`, `  VERSION: "1.0-{{arch}}"`, 3, "arg VERSION: an arg's value is taken as written"},
		{"negative epoch", "version: 1", "version: 1\nepoch: -5", 2, "epoch must be Unix seconds from 0"},
		{"epoch past year 9999", "version: 1", "version: 1\nepoch: 253402300800", 2, "the end of year 9999 (got 253402300800)"},
		{"epoch as a date", "version: 1", "version: 1\nepoch: 2024-01-01", 2, `epoch: want Unix seconds, a whole number from 0 to 253402300799, as SOURCE_DATE_EPOCH takes it (epoch: 1700000000); got "2024-01-01", which is epoch: 1704067200`},
		{"epoch as a quoted date", "version: 1", "version: 1\nepoch: '2024-01-01'", 2, `got "2024-01-01", which is epoch: 1704067200`},
		{"epoch as a time", "version: 1", "version: 1\nepoch: 2024-01-01T12:00:00Z", 2, `got "2024-01-01T12:00:00Z", which is epoch: 1704110400`},
		{"epoch as quoted seconds", "version: 1", "version: 1\nepoch: \"1700000000\"", 2, `epoch: want Unix seconds, a whole number from 0 to 253402300799, as SOURCE_DATE_EPOCH takes it (epoch: 1700000000); got "1700000000"`},
		{"epoch with a fraction", "version: 1", "version: 1\nepoch: 1.5", 2, `a whole number from 0 to 253402300799, as SOURCE_DATE_EPOCH takes it (epoch: 1700000000); got "1.5"`},
		{"epoch as a list", "version: 1", "version: 1\nepoch: [1]", 2, `epoch: want Unix seconds, a whole number`},
		{"epoch through an alias", "args:\n  VERSION: \"1.0\"", "args:\n  VERSION: &v \"1.0\"\nepoch: *v", 4, `epoch: want Unix seconds, a whole number from 0 to 253402300799, as SOURCE_DATE_EPOCH takes it (epoch: 1700000000); got "1.0"`},
		{"merge key panic in yaml.v3", "images:", "images: {<<: {}, [a]: c}\nimagez:", 0, "unhashable"},
		{"unquoted variable as a value", "      packages: ./cmd/app", "      packages: ./cmd/app\n      env: {{VERSION}}", 8, `quote a value that starts with {{ ("{{VERSION}}")`},
		{"unquoted variable in a flow list", "      packages: ./cmd/app", "      packages: ./cmd/app\n      env: [V={{VERSION}}]", 8, "YAML reads { inside [...] or {...} as a mapping"},
		{"bad port", "        owner: \"1000:1000\"", "        owner: \"1000:1000\"\n    config:\n      ports: [http]", 25, `port "http"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, tc.old, tc.new, 1)
			if src == good {
				t.Fatalf("test case did not change the recipe")
			}
			_, err := Parse("dir/pallet.yaml", []byte(src))
			if err == nil {
				t.Fatalf("no error")
			}
			re, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %T %v is not a *recipe.Error", err, err)
			}
			if re.File != "dir/pallet.yaml" || re.Line != tc.line {
				t.Errorf("at %s:%d, want line %d (%v)", re.File, re.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "recipe.") {
				t.Errorf("error %q leaks Go type names", err)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Vars(map[string]string{"VERSION": "2.0"})
	if err != nil {
		t.Fatal(err)
	}
	v = v.With(map[string]string{"os": "linux", "arch": "arm64"})
	got, err := r.Expand("artifacts.cni.url.url", r.Artifacts["cni"].URL.URL, v)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://example.com/cni-linux-arm64-2.0.tgz"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := r.Expand("artifacts.cni.url.url", "x-{{ NOPE }}", v); err == nil || !strings.Contains(err.Error(), "pallet.yaml:10: unknown variable {{NOPE}}") {
		t.Errorf("unknown variable: %v", err)
	}
	if _, err := r.Vars(map[string]string{"VERSON": "x"}); err == nil || !strings.Contains(err.Error(), "arg VERSON: not declared") {
		t.Errorf("unknown arg: %v", err)
	}
}

func TestParseModeOwner(t *testing.T) {
	for s, want := range map[string]uint32{"0755": 0o755, "644": 0o644, "0o600": 0o600} {
		m, err := ParseMode(s)
		if err != nil || uint32(m.Perm()) != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if m, _ := ParseMode("4755"); m&(1<<23) == 0 && m.String()[0] != 'u' {
		t.Errorf("setuid lost: %v", m)
	}
	if u, g, err := ParseOwner("5"); u != 5 || g != 5 || err != nil {
		t.Errorf("ParseOwner(5) = %d %d %v", u, g, err)
	}
}

// A Dockerfile under another name is said to be one, not a YAML error.
func TestDockerfileGivenAsRecipe(t *testing.T) {
	for _, df := range []string{"FROM scratch\nCOPY x /\n", "# syntax=docker/dockerfile:1\n\narg BASE=scratch\nFROM $BASE\nCOPY a: /b\n"} {
		_, err := Parse("Dockerfile-prod", []byte(df))
		if err == nil || !strings.Contains(err.Error(), "this is a Dockerfile, not a recipe") {
			t.Errorf("%q: %v", df, err)
		}
	}
}

// Owner and mode on a placement made only on Windows are refused at their
// line: Windows reads neither. One also made on Linux keeps them.
func TestWindowsOwnerAndMode(t *testing.T) {
	const recipe = `version: 1
artifacts:
  app: {local: {path: ./app}, licenses: none}
images:
  app:
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: PLATFORMS
    files:
      - artifact: app
        dest: /k/
        FIELD
`
	for _, tc := range []struct {
		name, platforms, field string
		line                   int
		want                   string
	}{
		{"owner on windows", "[windows/amd64]", `owner: "1000:1000"`, 11, "image app: owner 1000:1000 on windows/amd64: Windows reads no owner or mode"},
		{"mode on windows", "[windows/amd64, windows/arm64]", `mode: "0600"`, 11, "image app: mode 0600 on windows/amd64, windows/arm64: Windows reads no owner or mode"},
		{"a placement only for windows", "[linux/amd64, windows/amd64]", "owner: \"1:1\"\n        platforms: [windows]", 11, "owner 1:1 on windows/amd64"},
		{"owner 0:0 on windows, what pallet writes anyway", "[windows/amd64]", `owner: "0:0"`, 0, ""},
		{"linux and windows", "[linux/amd64, windows/amd64]", `owner: "1000:1000"`, 0, ""},
		{"a placement only for linux", "[linux/amd64, windows/amd64]", "mode: \"0600\"\n        platforms: [linux]", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.NewReplacer("PLATFORMS", tc.platforms, "FIELD", tc.field).Replace(recipe)
			_, err := Parse("pallet.yaml", []byte(src))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			re, ok := err.(*Error)
			if !ok || re.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q at line %d", err, tc.want, tc.line)
			}
		})
	}
}

// An error listing a recipe's names says when it has none, rather than
// ending in an empty list.
func TestNoNamesSaidAsNone(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(`version: 1
artifacts:
  a: {local: {path: a}, licenses: none}
images:
  app: {base: scratch, platforms: [linux/amd64], files: [{artifact: a, dest: /a}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Vars(map[string]string{"X": "1"}); err == nil || !strings.Contains(err.Error(), "arg X: not declared in pallet.yaml (declared: none)") {
		t.Errorf("--arg of a recipe without args: %v", err)
	}
	v, err := r.Vars(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Expand("images.app.files.0.dest", "/{{NOPE}}", v); err == nil || !strings.Contains(err.Error(), "unknown variable {{NOPE}} (args: none;") {
		t.Errorf("unknown variable in a recipe without args: %v", err)
	}
}

// A tag written twice is refused; the same tag reached through a
// variable is not a slip, and names the image once.
func TestTagRepeatedByVariable(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(strings.Replace(good, "    base: scratch", "    tags: [\"{{VERSION}}\", latest]\n    base: scratch", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(Options{Args: map[string]string{"VERSION": "latest"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Images[0].Tags; strings.Join(got, ",") != "latest" {
		t.Errorf("tags %q, want [latest]", got)
	}
}

// A value or name from the command line is said up to 80 bytes, with its
// length: --arg takes a megabyte, which an error repeated whole.
func TestArgErrorsQuoteLongValuesShort(t *testing.T) {
	r, err := Parse("pallet.yaml", []byte(`version: 1
args: {V: "1"}
artifacts:
  a: {local: {path: a}, licenses: none}
images:
  app: {base: scratch, platforms: [linux/amd64], files: [{artifact: a, dest: /a}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	long := "{{" + strings.Repeat("é", 1<<18)
	_, err = r.Vars(map[string]string{"V": long})
	want := `arg V="{{` + strings.Repeat("é", 39) + `"... (524290 bytes): an arg's value is taken as written`
	if err == nil || !strings.Contains(err.Error(), want) || len(err.Error()) > 300 {
		t.Errorf("a long value with {{: %.300v", err)
	}
	name := strings.Repeat("N", 1<<20)
	_, err = r.Vars(map[string]string{name: "1", "X": "2"})
	want = `arg "` + strings.Repeat("N", 80) + `"... (1048576 bytes), X: not declared in pallet.yaml (declared: V)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a long undeclared name: %.300v", err)
	}
	if got := Quote("ab\n"); got != `"ab\n"` {
		t.Errorf("Quote of a short value: %s", got)
	}
}
