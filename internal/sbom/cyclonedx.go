package sbom

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
)

type cdxBOM struct {
	Schema       string          `json:"$schema"`
	BOMFormat    string          `json:"bomFormat"`
	SpecVersion  string          `json:"specVersion"`
	SerialNumber string          `json:"serialNumber"`
	Version      int             `json:"version"`
	Metadata     cdxMetadata     `json:"metadata"`
	Components   []cdxComponent  `json:"components"`
	Dependencies []cdxDependency `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp  string         `json:"timestamp"`
	Lifecycles []cdxLifecycle `json:"lifecycles"`
	Tools      cdxTools       `json:"tools"`
	Component  cdxComponent   `json:"component"`
}

type cdxLifecycle struct {
	Phase string `json:"phase"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	BOMRef             string                 `json:"bom-ref,omitempty"`
	Type               string                 `json:"type"`
	Name               string                 `json:"name"`
	Version            string                 `json:"version,omitempty"`
	Description        string                 `json:"description,omitempty"`
	Hashes             []cdxHash              `json:"hashes,omitempty"`
	Licenses           []cdxLicense           `json:"licenses,omitempty"`
	Purl               string                 `json:"purl,omitempty"`
	Pedigree           *cdxPedigree           `json:"pedigree,omitempty"`
	ExternalReferences []cdxExternalReference `json:"externalReferences,omitempty"`
	Components         []cdxComponent         `json:"components,omitempty"`
	Properties         []cdxProperty          `json:"properties,omitempty"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxLicense struct {
	Expression      string `json:"expression"`
	Acknowledgement string `json:"acknowledgement"`
}

type cdxPedigree struct {
	Ancestors []cdxComponent `json:"ancestors"`
}

type cdxExternalReference struct {
	Type    string    `json:"type"`
	URL     string    `json:"url"`
	Comment string    `json:"comment,omitempty"`
	Hashes  []cdxHash `json:"hashes,omitempty"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// serialNumber is the BOM's serial number: a name-based (version 5) UUID
// of the image's name and manifest digest, the same at every rebuild of
// the same image and different for any other.
func serialNumber(image, digest string) string {
	return "urn:uuid:" + uuidV5(nameSpaceURL, namespace("cyclonedx", image, digest))
}

// nameSpaceURL is RFC 9562's name space of URLs for name-based UUIDs
// (6ba7b811-9dad-11d1-80b4-00c04fd430c8).
var nameSpaceURL = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// uuidV5 is the name-based UUID, version 5 (SHA-1), of name in space
// (RFC 9562, 5.5), in its text form. Written here rather than taken from
// github.com/google/uuid, whose import brought database/sql/driver and
// its init into every pallet command for this one call.
func uuidV5(space [16]byte, name string) string {
	h := sha1.New()
	h.Write(space[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // the RFC's variant
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// ref is an element's bom-ref: its SPDX id without the SPDX prefix.
func ref(id string) string { return strings.TrimPrefix(id, "SPDXRef-") }

// CycloneDX returns the image's CycloneDX 1.6 JSON BOM.
func CycloneDX(in Input) ([]byte, error) {
	g, err := build(&in)
	if err != nil {
		return nil, err
	}
	bom := cdxBOM{
		Schema:       "http://cyclonedx.org/schema/bom-1.6.schema.json",
		BOMFormat:    "CycloneDX",
		SpecVersion:  "1.6",
		SerialNumber: serialNumber(in.Image, in.Digest),
		Version:      1,
		Metadata: cdxMetadata{
			Timestamp:  timestamp(in.epoch()),
			Lifecycles: []cdxLifecycle{{Phase: "build"}},
			Tools:      cdxTools{Components: []cdxComponent{{Type: "application", Name: "pallet", Version: in.Builder.Version}}},
			Component:  g.cdxImage(),
		},
		Components:   []cdxComponent{},
		Dependencies: []cdxDependency{},
	}
	image := cdxDependency{Ref: ref(g.image.id), DependsOn: []string{}}
	for _, an := range g.arts {
		bom.Components = append(bom.Components, g.cdxArtifact(an))
		image.DependsOn = append(image.DependsOn, ref(an.id))
	}
	bom.Dependencies = append(bom.Dependencies, image)
	for _, s := range g.stdlibs {
		c := cdxComponent{
			BOMRef: ref(s.id), Type: "library", Name: "stdlib", Version: s.goVersion,
			Description: "The Go standard library and runtime, linked into the binaries that depend on it by the toolchain " + s.goVersion + ".",
			Licenses:    []cdxLicense{{Expression: "BSD-3-Clause", Acknowledgement: "declared"}},
			Purl:        stdlibPurl(s.goVersion),
		}
		// CycloneDX holds one licence expression at most: concluded
		// where pallet read the text it shipped, which says the same.
		if lic := s.concluded(); lic != "" {
			c.Licenses = []cdxLicense{{Expression: lic, Acknowledgement: "concluded"}}
		}
		bom.Components = append(bom.Components, c)
	}
	for _, m := range g.modules {
		bom.Components = append(bom.Components, cdxModule(m))
	}
	for _, d := range g.debs {
		bom.Components = append(bom.Components, cdxDeb(d))
	}
	for _, f := range g.files {
		if f.bin == nil {
			continue
		}
		d := cdxDependency{Ref: ref(f.id), DependsOn: []string{}}
		if f.main != nil {
			d.DependsOn = append(d.DependsOn, ref(f.main.id))
		}
		for _, m := range f.deps {
			d.DependsOn = append(d.DependsOn, ref(m.id))
		}
		if f.stdlib != nil {
			d.DependsOn = append(d.DependsOn, ref(f.stdlib.id))
		}
		for _, n := range f.debs {
			d.DependsOn = append(d.DependsOn, ref(n.id))
		}
		slices.Sort(d.DependsOn)
		d.DependsOn = slices.Compact(d.DependsOn)
		bom.Dependencies = append(bom.Dependencies, d)
	}
	slices.SortFunc(bom.Dependencies, func(a, b cdxDependency) int { return strings.Compare(a.Ref, b.Ref) })
	return marshal(bom)
}

func (g *graph) cdxImage() cdxComponent {
	c := cdxContainer(g.image.id, g.image.name, g.image.digest, g.imagePurl())
	c.Properties = []cdxProperty{{Name: "pallet:platform", Value: g.in.Platform}}
	if b := g.base; b != nil {
		base := cdxContainer(b.id, b.name, b.digest, b.purl)
		base.Description = "The base image, as the recipe names it."
		c.Pedigree = &cdxPedigree{Ancestors: []cdxComponent{base}}
	}
	return c
}

func cdxContainer(id, name, digest, purl string) cdxComponent {
	c := cdxComponent{BOMRef: ref(id), Type: "container", Name: name, Version: digest, Purl: purl}
	if h := sha256Hex(digest); h != "" {
		c.Hashes = []cdxHash{{Alg: "SHA-256", Content: h}}
	}
	return c
}

func (g *graph) cdxArtifact(an *artNode) cdxComponent {
	a := an.a
	c := cdxComponent{
		BOMRef: ref(an.id), Type: "application", Name: a.Name, Version: a.version(),
		Description: g.in.origin(a),
	}
	if h := a.fileDigest(); h != "" {
		c.Hashes = []cdxHash{{Alg: "SHA-256", Content: h}}
	}
	if a.License != "" {
		c.Licenses = []cdxLicense{{Expression: a.License, Acknowledgement: "declared"}}
	}
	c.Purl = g.artifactPurl(a)
	if u := remote(a.URL); u != "" {
		c.ExternalReferences = append(c.ExternalReferences, cdxExternalReference{Type: "distribution", URL: u, Hashes: c.Hashes})
	}
	if r := remote(a.Repo); r != "" {
		c.ExternalReferences = append(c.ExternalReferences, cdxExternalReference{Type: "vcs", URL: r, Comment: "commit " + a.Commit})
	}
	props := [][2]string{
		{"pallet:kind", a.Kind}, {"pallet:mode", a.Mode}, {"pallet:platform", a.Platform},
		{"pallet:git:commit", a.Commit}, {"pallet:git:path", a.GitPath}, {"pallet:go:toolchain", a.GoVersion},
	}
	if a.Module != "" {
		props = append(props, [2]string{"pallet:go:sum", a.SHA256}, [2]string{"pallet:gomod:path", a.InModule})
	}
	if a.isLocal() {
		props = append(props, [2]string{"pallet:local:path", g.in.localPath(a.Path)})
		if a.LocalDir {
			props = append(props, [2]string{"pallet:local:tree-digest", a.SHA256})
		}
	}
	c.Properties = properties(props)
	for _, f := range an.files {
		c.Components = append(c.Components, cdxFile(f))
	}
	return c
}

func cdxFile(f *fileNode) cdxComponent {
	c := cdxComponent{
		BOMRef: ref(f.id), Type: "file", Name: f.path,
		Hashes: []cdxHash{{Alg: "SHA-1", Content: f.sha1}, {Alg: "SHA-256", Content: f.sha256}},
	}
	if f.license {
		c.Description = "A licence file of artifact " + f.art.a.Name + "."
	}
	if b := f.bin; b != nil {
		c.Description = "Go binary built with " + b.GoVersion + "."
		props := [][2]string{{"pallet:go:toolchain", b.GoVersion}}
		for _, s := range b.Settings {
			props = append(props, [2]string{"pallet:go:setting:" + s.Key, s.Value})
		}
		c.Properties = properties(props)
	}
	return c
}

func cdxModule(m *modNode) cdxComponent {
	c := cdxComponent{
		BOMRef: ref(m.id), Type: "library", Name: m.path, Version: m.version,
		Description: m.origin(), Purl: goPurl(m.path, m.version),
	}
	// The h1 hash is the SHA-256 of the module's file list (dirhash), as
	// cyclonedx-gomod gives it too; the property keeps the go.sum form.
	if h := h1Hex(m.sum); h != "" {
		c.Hashes = []cdxHash{{Alg: "SHA-256", Content: h}}
	}
	c.Properties = properties([][2]string{{"pallet:go:sum", m.sum}, {"pallet:go:replaces", m.replaced}})
	if lic := m.concluded(); lic != "" {
		c.Licenses = []cdxLicense{{Expression: lic, Acknowledgement: "concluded"}}
	}
	return c
}

// properties drops the empty ones and sorts the rest by name.
func properties(kv [][2]string) []cdxProperty {
	var out []cdxProperty
	for _, p := range kv {
		if p[1] != "" {
			out = append(out, cdxProperty{Name: p[0], Value: p[1]})
		}
	}
	slices.SortFunc(out, func(a, b cdxProperty) int { return strings.Compare(a.Name+"\x00"+a.Value, b.Name+"\x00"+b.Value) })
	return out
}
