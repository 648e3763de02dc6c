package recipe

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
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
		strings.Replace(good, "version: 1", "version: 2", 1),
	} {
		if err := s.Validate(yamlToJSONValue(t, []byte(bad))); err == nil {
			t.Errorf("schema accepted:\n%s", bad)
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
