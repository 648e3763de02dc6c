package recipe

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("recipe.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("recipe.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func yamlToJSONValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every bundled example recipe is valid for both the parser and the schema.
func TestExamplesMatchSchema(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob("../../examples/*/pallet.yaml")
	if len(files) == 0 {
		t.Fatal("no example recipes found")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, data); err != nil {
			t.Errorf("parse: %v", err)
		}
		if err := s.Validate(yamlToJSONValue(t, data)); err != nil {
			t.Errorf("%s: schema: %v", f, err)
		}
	}
	if err := s.Validate(yamlToJSONValue(t, []byte(good))); err != nil {
		t.Errorf("test recipe: %v", err)
	}
}

// The schema rejects what the parser rejects, for shape errors.
func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	for _, bad := range []string{
		strings.Replace(good, "      packages: ./cmd/app", "      packages: ./cmd/app\n      pakages: x", 1),
		strings.Replace(good, "platforms: linux/amd64", "platforms: linux/amd46", 1),
		strings.Replace(good, "dest: /bin/", "dest: bin/", 1),
		strings.Replace(good, "dest: /bin/", "dest: /bin/\n        link: junction", 1),
		strings.Replace(good, "version: 1", "version: 2", 1),
	} {
		if err := s.Validate(yamlToJSONValue(t, []byte(bad))); err == nil {
			t.Errorf("schema accepted:\n%s", bad)
		}
	}
}

// An image's tag written twice is refused by the schema as the parser
// refuses it; tags written differently pass both, though a variable may
// make them equal (the image is then named once).
func TestSchemaRefusesTagTwice(t *testing.T) {
	s := compileSchema(t)
	for _, tc := range []struct {
		tags string
		ok   bool
	}{
		{`[latest, "{{VERSION}}"]`, true},
		{`latest`, true},
		{`[latest, latest]`, false},
		{`[v1, latest, v1]`, false},
	} {
		data := []byte(strings.Replace(good, "    base: scratch", "    tags: "+tc.tags+"\n    base: scratch", 1))
		_, perr := Parse("pallet.yaml", data)
		serr := s.Validate(yamlToJSONValue(t, data))
		if (perr == nil) != tc.ok || (serr == nil) != tc.ok {
			t.Errorf("tags: %s: parser %v, schema %v; want ok %v from both", tc.tags, perr, serr, tc.ok)
		}
	}
}

// The schema names exactly the fields the Go types decode, so editors and
// the parser never disagree on what a key means.
func TestSchemaFollowsTypes(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	defs := root["$defs"].(map[string]any)
	get := func(m map[string]any, path ...string) map[string]any {
		for _, p := range path {
			m = m[p].(map[string]any)
		}
		return m
	}
	artifact := get(defs, "artifact", "properties")
	image := get(defs, "image", "properties")
	for _, tc := range []struct {
		typ    any
		schema map[string]any
	}{
		{Recipe{}, root},
		{Artifact{}, get(defs, "artifact")},
		{Local{}, get(defs, "local")},
		// A local mode decodes into Local too (its path usually given
		// at build time): the same keys.
		{Local{}, get(defs, "localMode")},
		{URL{}, get(defs, "download")},
		{GoBuild{}, get(defs, "goBuild")},
		{Modes{}, get(artifact, "modes")},
		{Source{}, get(artifact, "modes", "properties", "source")},
		{Git{}, get(artifact, "modes", "properties", "source", "properties", "git")},
		{Extract{}, get(defs, "extract")},
		{Image{}, get(defs, "image")},
		{Place{}, get(image, "files", "items")},
		{Config{}, get(image, "config")},
	} {
		typ := reflect.TypeOf(tc.typ)
		var fields []string
		for i := 0; i < typ.NumField(); i++ {
			tag := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]
			if tag != "" && tag != "-" {
				fields = append(fields, tag)
			}
		}
		var props []string
		for k := range tc.schema["properties"].(map[string]any) {
			props = append(props, k)
		}
		sort.Strings(fields)
		sort.Strings(props)
		if !reflect.DeepEqual(fields, props) {
			t.Errorf("%s: Go fields %v, schema properties %v", typ.Name(), fields, props)
		}
	}
}

// The schema's patterns are the Go checks' patterns, written once in Go:
// each regular expression recipe.go checks with appears in the schema as
// it is (or with the {{variable}} alternative), and the schema's platform
// pattern accepts exactly the platforms the platform package knows.
func TestSchemaPatternsFollowGo(t *testing.T) {
	var patterns []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && k == "pattern" {
					patterns = append(patterns, s)
				}
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	var root map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	walk(root)
	for _, re := range []*regexp.Regexp{nameRE(), argRE(), sha256RE(), commitRE(), goVersionRE()} {
		src := strings.TrimSuffix(strings.TrimPrefix(re.String(), "^"), "$")
		found := false
		for _, p := range patterns {
			found = found || p == re.String() || strings.HasPrefix(p, "^("+src+"|")
		}
		if !found {
			t.Errorf("no schema pattern is %s", re)
		}
	}
	platformRE := regexp.MustCompile(root["$defs"].(map[string]any)["platform"].(map[string]any)["pattern"].(string))
	for _, p := range platform.Known() {
		if !platformRE.MatchString(p) {
			t.Errorf("the schema refuses platform %s, which pallet builds", p)
		}
	}
	for _, p := range []string{"linux/amd46", "windows/386", "darwin/arm64", "linux", "linux/arm/v8"} {
		if platformRE.MatchString(p) {
			if _, err := platform.Parse(p); err != nil {
				t.Errorf("the schema accepts %s, which pallet refuses: %v", p, err)
			}
		}
	}
}

// planValid parses src, which the schema must accept too, and plans it
// with the default options.
func planValid(t *testing.T, src string) (*Recipe, *plan.Plan) {
	t.Helper()
	r, err := Parse("pallet.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t).Validate(yamlToJSONValue(t, []byte(src))); err != nil {
		t.Errorf("schema: %v", err)
	}
	p, err := r.Plan(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r, p
}

// The reference recipe at the head of docs/recipe.md, its placeholder
// pins filled in, parses, meets the schema and plans for every platform
// and mode it names: it once placed an artifact it never declared and a
// Windows setting on a Linux-only image, and no test read it.
func TestDocsSampleRecipePlans(t *testing.T) {
	doc, err := os.ReadFile("../../docs/recipe.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(version: 1.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/recipe.md has no yaml block starting with version: 1")
	}
	hex := strings.Repeat("ab", 32)
	sample := regexp.MustCompile(`\b[0-9a-f]{4}\.\.\.`).ReplaceAllString(string(m[1]), hex)
	sample = strings.ReplaceAll(sample, "h1:...", "h1:"+strings.Repeat("A", 43)+"=")
	sample = strings.ReplaceAll(sample, ": ...", ": "+hex)
	if regexp.MustCompile(`(?m)^[^#]*\.\.\.`).MatchString(sample) {
		t.Fatalf("a placeholder is left outside comments:\n%s", sample)
	}
	r, err := Parse("docs/recipe.md sample", []byte(sample)) // lines counted from its version line
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := compileSchema(t).Validate(yamlToJSONValue(t, []byte(sample))); err != nil {
		t.Errorf("schema: %v", err)
	}
	for _, mode := range []string{"source", "release"} {
		p, err := r.Plan(Options{Modes: map[string]Choice{"containerd": {Mode: mode}}})
		if err != nil {
			t.Errorf("plan with containerd=%s: %v", mode, err)
			continue
		}
		if len(p.Images) != 1 || len(p.Images[0].Platforms) != 3 {
			t.Errorf("plan with containerd=%s: %d images, want the agent on three platforms", mode, len(p.Images))
		}
	}
}

// A dest written with backslashes (docs/recipe.md: a path you write
// takes \ as a separator, as on Windows) is accepted by the parser and
// the schema alike, and planned slash-separated, its trailing \ kept as
// the / that places into a directory.
func TestDestWithBackslashes(t *testing.T) {
	src := strings.Replace(good, "dest: /bin/", `dest: '\usr\local\bin\'`, 1)
	_, p := planValid(t, src)
	if got := p.Images[0].Platforms[0].Layers[0].Placements[0].Dest; got != "/usr/local/bin/" {
		t.Errorf("dest planned as %q, want /usr/local/bin/", got)
	}
}
