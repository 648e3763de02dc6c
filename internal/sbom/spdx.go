package sbom

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
)

// SPDX 2.3 values that say nothing is known, or that nothing exists.
const (
	noAssertion = "NOASSERTION"
	none        = "NONE"
)

type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Files             []spdxFile         `json:"files,omitempty"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

type spdxPackage struct {
	SPDXID                  string                  `json:"SPDXID"`
	Name                    string                  `json:"name"`
	VersionInfo             string                  `json:"versionInfo,omitempty"`
	DownloadLocation        string                  `json:"downloadLocation"`
	FilesAnalyzed           bool                    `json:"filesAnalyzed"`
	PackageVerificationCode *spdxVerificationCode   `json:"packageVerificationCode,omitempty"`
	Checksums               []spdxChecksum          `json:"checksums,omitempty"`
	SourceInfo              string                  `json:"sourceInfo,omitempty"`
	LicenseConcluded        string                  `json:"licenseConcluded"`
	LicenseDeclared         string                  `json:"licenseDeclared"`
	Comment                 string                  `json:"comment,omitempty"`
	ExternalRefs            []spdxExternalReference `json:"externalRefs,omitempty"`
	PrimaryPackagePurpose   string                  `json:"primaryPackagePurpose,omitempty"`
}

type spdxVerificationCode struct {
	Value string `json:"packageVerificationCodeValue"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalReference struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxFile struct {
	SPDXID           string         `json:"SPDXID"`
	FileName         string         `json:"fileName"`
	FileTypes        []string       `json:"fileTypes,omitempty"`
	Checksums        []spdxChecksum `json:"checksums"`
	LicenseConcluded string         `json:"licenseConcluded"`
	Comment          string         `json:"comment,omitempty"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// SPDX returns the image's SPDX 2.3 JSON document.
func SPDX(in Input) ([]byte, error) {
	g, err := build(&in)
	if err != nil {
		return nil, err
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              in.Image + " (" + in.Platform + ")",
		DocumentNamespace: namespace("spdx", in.Image, in.Digest),
		CreationInfo: spdxCreationInfo{
			Created:  timestamp(in.epoch()),
			Creators: []string{"Tool: " + toolName(in.Builder.Version)},
			Comment:  "Made by pallet from its build record; created is the build's epoch, not the time of writing.",
		},
		Packages:      []spdxPackage{},
		Relationships: []spdxRelationship{},
	}
	rel := func(a, typ, b string) {
		doc.Relationships = append(doc.Relationships, spdxRelationship{Element: a, Type: typ, Related: b})
	}
	doc.Packages = append(doc.Packages, g.spdxImage())
	rel(doc.SPDXID, "DESCRIBES", g.image.id)
	if b := g.base; b != nil {
		doc.Packages = append(doc.Packages, spdxContainer(b.id, b.name, b.digest, b.purl, "The base image, as the recipe names it."))
		rel(g.image.id, "DESCENDANT_OF", b.id)
	}
	for _, an := range g.arts {
		doc.Packages = append(doc.Packages, g.spdxArtifact(an))
		rel(g.image.id, "CONTAINS", an.id)
	}
	for _, s := range g.stdlibs {
		doc.Packages = append(doc.Packages, spdxPackage{
			SPDXID: s.id, Name: "stdlib", VersionInfo: s.goVersion, DownloadLocation: noAssertion,
			LicenseConcluded: cmp.Or(s.concluded(), noAssertion), LicenseDeclared: "BSD-3-Clause",
			Comment:      "The Go standard library and runtime, linked into the binaries that depend on it by the toolchain " + s.goVersion + ".",
			ExternalRefs: []spdxExternalReference{purlRef(stdlibPurl(s.goVersion))},
		})
	}
	for _, m := range g.modules {
		doc.Packages = append(doc.Packages, spdxModule(m))
	}
	for _, d := range g.debs {
		doc.Packages = append(doc.Packages, spdxDeb(d))
	}
	for _, an := range g.arts {
		for _, f := range an.files {
			rel(an.id, "CONTAINS", f.id)
		}
	}
	for _, f := range g.files {
		doc.Files = append(doc.Files, spdxFileOf(f))
	}
	for _, f := range g.files {
		if f.main != nil {
			rel(f.id, "GENERATED_FROM", f.main.id)
		}
		for _, d := range f.deps {
			rel(f.id, "DEPENDS_ON", d.id)
		}
		if f.stdlib != nil {
			rel(f.id, "DEPENDS_ON", f.stdlib.id)
		}
		for _, d := range f.debs {
			rel(f.id, "DEPENDS_ON", d.id)
		}
	}
	return marshal(doc)
}

// namespace is a document's unique URI: the image's name and manifest
// digest say which document it is.
func namespace(format, image, digest string) string {
	segs := strings.Split(image, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "https://pallet.dev/" + format + "/" + strings.Join(segs, "/") + "/" + digest
}

func toolName(version string) string {
	if version == "" {
		return "pallet"
	}
	return "pallet-" + version
}

func (g *graph) spdxImage() spdxPackage {
	p := spdxContainer(g.image.id, g.image.name, g.image.digest, g.imagePurl(), "The image manifest for "+g.in.Platform+".")
	return p
}

// imagePurl is the image's purl, with its repository when known.
func (g *graph) imagePurl() string {
	repo := g.in.Repository
	if repo == "" {
		repo = g.in.Image
	}
	return ociPurl(repo, g.in.Digest, arch(g.in.Platform), "")
}

// spdxContainer is the package of an image by manifest digest.
func spdxContainer(id, name, digest, purl, comment string) spdxPackage {
	p := spdxPackage{
		SPDXID: id, Name: name, VersionInfo: digest, DownloadLocation: noAssertion,
		LicenseConcluded: noAssertion, LicenseDeclared: noAssertion,
		PrimaryPackagePurpose: "CONTAINER", Comment: comment,
	}
	if h := sha256Hex(digest); h != "" {
		p.Checksums = []spdxChecksum{{Algorithm: "SHA256", Value: h}}
	}
	if purl != "" {
		p.ExternalRefs = []spdxExternalReference{purlRef(purl)}
	}
	return p
}

func purlRef(p string) spdxExternalReference {
	return spdxExternalReference{Category: "PACKAGE-MANAGER", Type: "purl", Locator: p}
}

func (g *graph) spdxArtifact(an *artNode) spdxPackage {
	a := an.a
	lic := noAssertion
	if a.License != "" {
		lic = a.License
	}
	p := spdxPackage{
		SPDXID: an.id, Name: a.Name, VersionInfo: a.version(),
		DownloadLocation: g.in.downloadLocation(a),
		SourceInfo:       g.in.origin(a),
		LicenseConcluded: lic, LicenseDeclared: lic,
	}
	if h := a.fileDigest(); h != "" {
		p.Checksums = []spdxChecksum{{Algorithm: "SHA256", Value: h}}
	}
	if purl := g.artifactPurl(a); purl != "" {
		p.ExternalRefs = []spdxExternalReference{purlRef(purl)}
	}
	if len(a.Go) > 0 {
		p.PrimaryPackagePurpose = "APPLICATION"
	}
	if len(an.files) > 0 {
		p.FilesAnalyzed = true
		p.PackageVerificationCode = &spdxVerificationCode{Value: verificationCode(an.files)}
	}
	return p
}

// verificationCode is SPDX's package verification code: the SHA-1 of the
// sorted SHA-1s of the package's files.
func verificationCode(files []*fileNode) string {
	sums := make([]string, len(files))
	for i, f := range files {
		sums[i] = f.sha1
	}
	slices.Sort(sums)
	h := sha1.Sum([]byte(strings.Join(sums, "")))
	return hex.EncodeToString(h[:])
}

func spdxModule(m *modNode) spdxPackage {
	p := spdxPackage{
		SPDXID: m.id, Name: m.path, VersionInfo: m.version, DownloadLocation: noAssertion,
		LicenseConcluded: noAssertion, LicenseDeclared: noAssertion,
		SourceInfo:   m.origin(),
		ExternalRefs: []spdxExternalReference{purlRef(goPurl(m.path, m.version))},
	}
	if m.local {
		p.DownloadLocation = none
	}
	if lic := m.concluded(); lic != "" {
		p.LicenseConcluded = lic
	}
	return p
}

func spdxFileOf(f *fileNode) spdxFile {
	sf := spdxFile{
		SPDXID: f.id, FileName: "." + f.path,
		Checksums:        []spdxChecksum{{Algorithm: "SHA1", Value: f.sha1}, {Algorithm: "SHA256", Value: f.sha256}},
		LicenseConcluded: noAssertion,
	}
	if f.bin != nil {
		sf.FileTypes = []string{"BINARY"}
		sf.Comment = "Go binary built with " + f.bin.GoVersion + "."
	}
	if f.license {
		sf.Comment = "A licence file of artifact " + f.art.a.Name + "."
	}
	return sf
}
