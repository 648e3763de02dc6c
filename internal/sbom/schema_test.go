package sbom

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemas are the official (or, for SLSA, spec-derived) JSON schemas in
// testdata, by the URL each is known by.
var schemaFiles = map[string]string{
	"http://cyclonedx.org/schema/bom-1.6.schema.json":            "bom-1.6.SNAPSHOT.schema.json",
	"http://cyclonedx.org/schema/spdx.SNAPSHOT.schema.json":      "spdx.SNAPSHOT.schema.json",
	"http://cyclonedx.org/schema/jsf-0.82.SNAPSHOT.schema.json":  "jsf-0.82.SNAPSHOT.schema.json",
	"http://spdx.org/rdf/terms/2.3":                              "spdx-2.3.schema.json",
	"https://pallet.dev/testdata/slsa-provenance-v1.schema.json": "slsa-provenance-v1.schema.json",
}

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

// schema returns the compiled schema known by url. Formats (date-time,
// iri-reference, uri) are asserted, not just annotations.
func schema(t *testing.T, url string) *jsonschema.Schema {
	t.Helper()
	compileOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		for u, f := range schemaFiles {
			file, err := os.Open(filepath.Join("testdata", f))
			if err != nil {
				compileErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(file)
			file.Close()
			if err != nil {
				compileErr = err
				return
			}
			if err := c.AddResource(u, doc); err != nil {
				compileErr = err
				return
			}
		}
		compiled = map[string]*jsonschema.Schema{}
		for _, u := range []string{"http://cyclonedx.org/schema/bom-1.6.schema.json", "http://spdx.org/rdf/terms/2.3", "https://pallet.dev/testdata/slsa-provenance-v1.schema.json"} {
			s, err := c.Compile(u)
			if err != nil {
				compileErr = err
				return
			}
			compiled[u] = s
		}
	})
	if compileErr != nil {
		t.Fatalf("compiling the schemas: %v", compileErr)
	}
	return compiled[url]
}

func validate(t *testing.T, url string, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema(t, url).Validate(inst); err != nil {
		t.Errorf("invalid against %s: %v", url, err)
	}
}

// The schemas catch what they are meant to catch: a document the
// generator would never write fails each of them.
func TestSchemasRefuseBadDocuments(t *testing.T) {
	in := sampleInput()
	for _, c := range []struct {
		url    string
		make   func(Input) ([]byte, error)
		break_ func(string) string
	}{
		{"http://spdx.org/rdf/terms/2.3", SPDX, func(s string) string {
			return strings.Replace(s, `"relationshipType": "DESCRIBES"`, `"relationshipType": "DESCRIBED"`, 1)
		}},
		{"http://cyclonedx.org/schema/bom-1.6.schema.json", CycloneDX, func(s string) string {
			return strings.Replace(s, `"serialNumber": "urn:uuid:`, `"serialNumber": "urn:uuid:x`, 1)
		}},
		{"https://pallet.dev/testdata/slsa-provenance-v1.schema.json", Provenance, func(s string) string {
			return strings.Replace(s, `"gitCommit": "`, `"gitCommit": "g`, 1)
		}},
	} {
		doc, err := c.make(in)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, c.url, doc)
		bad := c.break_(string(doc))
		if bad == string(doc) {
			t.Fatalf("%s: the breaking edit did not apply", c.url)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if schema(t, c.url).Validate(inst) == nil {
			t.Errorf("%s accepts a broken document", c.url)
		}
	}
}

var spdxIDRE = regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)

// TestSPDXValid checks the SPDX document against the SPDX 2.3 schema and
// the rules of the specification that the schema does not express.
func TestSPDXValid(t *testing.T) {
	in := sampleInput()
	doc, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "http://spdx.org/rdf/terms/2.3", doc)
	checkSPDX(t, doc)
	v := decode(t, doc)
	if v["spdxVersion"] != "SPDX-2.3" || v["dataLicense"] != "CC0-1.0" || v["SPDXID"] != "SPDXRef-DOCUMENT" {
		t.Errorf("header: %v %v %v", v["spdxVersion"], v["dataLicense"], v["SPDXID"])
	}
	if got, want := v["documentNamespace"], "https://pallet.dev/spdx/kind-base/"+in.Digest; got != want {
		t.Errorf("namespace %v, want %v", got, want)
	}
	ci := v["creationInfo"].(map[string]any)
	if ci["created"] != "2023-11-14T22:13:20Z" {
		t.Errorf("created %v, want the epoch 1700000000", ci["created"])
	}
	if c := ci["creators"].([]any); len(c) != 1 || c[0] != "Tool: pallet-v0.9.0" {
		t.Errorf("creators %v", c)
	}
}

// checkSPDX checks SPDX 2.3 rules beyond the schema: id syntax and
// uniqueness, relationships between existing elements, SHA-1 on every
// file (clause 8.4), a correct verification code on every package whose
// files were analyzed (clause 7.9), an absolute namespace URI.
func checkSPDX(t *testing.T, doc []byte) {
	t.Helper()
	v := decode(t, doc)
	ns, err := url.Parse(v["documentNamespace"].(string))
	if err != nil || !ns.IsAbs() || ns.Fragment != "" {
		t.Errorf("namespace %v is not an absolute URI without fragment", v["documentNamespace"])
	}
	ids := map[string]bool{"SPDXRef-DOCUMENT": true}
	fileSHA1 := map[string]string{}
	for _, f := range v["files"].([]any) {
		f := f.(map[string]any)
		id := f["SPDXID"].(string)
		if !spdxIDRE.MatchString(id) || ids[id] {
			t.Errorf("file id %q: bad or repeated", id)
		}
		ids[id] = true
		if name := f["fileName"].(string); !strings.HasPrefix(name, "./") {
			t.Errorf("file name %q does not start with ./", name)
		}
		algs := map[string]string{}
		for _, c := range f["checksums"].([]any) {
			c := c.(map[string]any)
			algs[c["algorithm"].(string)] = c["checksumValue"].(string)
		}
		if !isHex(algs["SHA1"], 40) || !isHex(algs["SHA256"], 64) {
			t.Errorf("file %s: checksums %v, want SHA1 and SHA256 in lowercase hex", id, algs)
		}
		fileSHA1[id] = algs["SHA1"]
	}
	contains := map[string][]string{}
	for _, r := range v["relationships"].([]any) {
		r := r.(map[string]any)
		if r["relationshipType"] == "CONTAINS" {
			contains[r["spdxElementId"].(string)] = append(contains[r["spdxElementId"].(string)], r["relatedSpdxElement"].(string))
		}
	}
	for _, p := range v["packages"].([]any) {
		p := p.(map[string]any)
		id := p["SPDXID"].(string)
		if !spdxIDRE.MatchString(id) || ids[id] {
			t.Errorf("package id %q: bad or repeated", id)
		}
		ids[id] = true
		if p["filesAnalyzed"] == true {
			var sums []string
			for _, f := range contains[id] {
				sums = append(sums, fileSHA1[f])
			}
			slices.Sort(sums)
			h := sha1.Sum([]byte(strings.Join(sums, "")))
			code, _ := p["packageVerificationCode"].(map[string]any)
			if code == nil || code["packageVerificationCodeValue"] != hex.EncodeToString(h[:]) {
				t.Errorf("package %s: verification code %v, want %x over %d files", id, code, h, len(sums))
			}
		} else if len(contains[id]) > 0 && p["primaryPackagePurpose"] != "CONTAINER" {
			t.Errorf("package %s contains files but says they were not analyzed", id)
		}
		for _, field := range []string{"licenseConcluded", "licenseDeclared"} {
			if l, _ := p[field].(string); l == "" {
				t.Errorf("package %s: no %s", id, field)
			} else if l != noAssertion && l != none && checkLicenseExpression(l) != nil {
				t.Errorf("package %s: %s %q is not an SPDX expression", id, field, l)
			}
		}
	}
	describes := 0
	for _, r := range v["relationships"].([]any) {
		r := r.(map[string]any)
		a, b := r["spdxElementId"].(string), r["relatedSpdxElement"].(string)
		if !ids[a] || !ids[b] {
			t.Errorf("relationship %s %s %s names an element not in the document", a, r["relationshipType"], b)
		}
		if r["relationshipType"] == "DESCRIBES" && a == "SPDXRef-DOCUMENT" {
			describes++
		}
	}
	if describes != 1 {
		t.Errorf("the document describes %d elements, want the image alone", describes)
	}
}

// TestCycloneDXValid checks the BOM against the CycloneDX 1.6 schema, and
// that every reference in its dependency graph names a component.
func TestCycloneDXValid(t *testing.T) {
	in := sampleInput()
	doc, err := CycloneDX(in)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "http://cyclonedx.org/schema/bom-1.6.schema.json", doc)
	v := decode(t, doc)
	refs := map[string]bool{}
	var walk func(cs []any)
	walk = func(cs []any) {
		for _, c := range cs {
			c := c.(map[string]any)
			ref, _ := c["bom-ref"].(string)
			if ref == "" || refs[ref] {
				t.Errorf("component %v: bom-ref %q missing or repeated", c["name"], ref)
			}
			refs[ref] = true
			if sub, ok := c["components"].([]any); ok {
				walk(sub)
			}
		}
	}
	meta := v["metadata"].(map[string]any)
	walk([]any{meta["component"]})
	walk(v["components"].([]any))
	if meta["timestamp"] != "2023-11-14T22:13:20Z" {
		t.Errorf("timestamp %v, want the epoch", meta["timestamp"])
	}
	for _, d := range v["dependencies"].([]any) {
		d := d.(map[string]any)
		if !refs[d["ref"].(string)] {
			t.Errorf("dependency of unknown %v", d["ref"])
		}
		for _, on := range d["dependsOn"].([]any) {
			if !refs[on.(string)] {
				t.Errorf("%v depends on unknown %v", d["ref"], on)
			}
		}
	}
}

// TestProvenanceValid checks the provenance against the in-toto Statement
// v1 and SLSA Provenance v1 structure.
func TestProvenanceValid(t *testing.T) {
	doc, err := Provenance(sampleInput())
	if err != nil {
		t.Fatal(err)
	}
	validate(t, "https://pallet.dev/testdata/slsa-provenance-v1.schema.json", doc)
}
