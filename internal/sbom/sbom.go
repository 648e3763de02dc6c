// Package sbom writes, for one platform image, what the build knows of its
// content as an SPDX 2.3 document, a CycloneDX 1.6 BOM, and an in-toto
// Statement carrying SLSA Provenance v1: the artifacts placed (with their
// pins), every file placed (path in the image, digests), every Go module
// and toolchain inside every Go binary (read from the binary itself), and
// the base image.
//
// The documents are reproducible: the same inputs give the same bytes.
// Their names and serial numbers derive from the image's manifest digest,
// their times from the build's epoch, their element ids from what the
// elements are; everything is sorted, and nothing of the machine (paths
// outside the recipe's directory, host names, clocks, random ids) enters
// unless an option asks for timestamps.
package sbom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/record"
)

// Media types of the documents, as OCI artifacts and attestation layers
// name them.
const (
	MediaTypeSPDX      = "application/spdx+json"
	MediaTypeCycloneDX = "application/vnd.cyclonedx+json"
	MediaTypeInToto    = "application/vnd.in-toto+json"
)

// Predicate types, for wrapping a document in an in-toto Statement
// (Statement) and for the "in-toto.io/predicate-type" annotation of an
// attestation layer, as BuildKit writes them.
const (
	PredicateSPDX       = "https://spdx.dev/Document"
	PredicateCycloneDX  = "https://cyclonedx.org/bom"
	PredicateProvenance = "https://slsa.dev/provenance/v1"
)

// Annotations BuildKit writes on the attestation manifests it puts in an
// image index (the type and the image described) and on their layers
// (the predicate type), which registries, docker buildx imagetools and
// scanners read: pallet writes them (--attest-index) and reads them back.
const (
	RefTypeAnnotation       = "vnd.docker.reference.type"
	RefDigestAnnotation     = "vnd.docker.reference.digest"
	AttestationManifest     = "attestation-manifest"
	PredicateTypeAnnotation = "in-toto.io/predicate-type"
)

// BuildType is the SLSA buildType of a pallet build: what the external
// parameters of the provenance mean.
const BuildType = "https://pallet.dev/slsa/build/v1"

// DefaultBuilderID names the builder when Input.Builder.ID is empty: a
// pallet run on a machine nobody vouches for. A CI that runs pallet should
// give its own id.
const DefaultBuilderID = "https://pallet.dev/builder/local"

// Input is one platform image and what went into it.
type Input struct {
	// Image is the image's name in the recipe ("kind-base").
	Image string
	// Repository, when known, is where the image is pushed
	// ("registry.example.com/kind-base"); it becomes the provenance
	// subject's name and the purl's repository_url.
	Repository string
	// Platform is the image's platform ("linux/amd64").
	Platform string
	// Digest is the image manifest's digest ("sha256:<hex>").
	Digest string
	// Base is the image the layers went on.
	Base Base
	// Epoch is the build's time (SOURCE_DATE_EPOCH or the recipe's); the
	// zero time is the Unix epoch.
	Epoch time.Time
	// Recipe is the front end's input file; RecipeFile makes it.
	Recipe File
	// Dir is the recipe's directory: local paths under it are shown
	// relative to it, and any other local path by its base name only.
	Dir string
	// Args are the build arguments given on the command line (--arg);
	// the recipe's defaults are covered by its digest.
	Args map[string]string
	// Platforms are all the platforms the image was built for.
	Platforms []string
	// Artifacts are the build's artifacts (Describe makes each); those of
	// Platform that Placed names are described, the others ignored.
	Artifacts []Artifact
	// Placed says where each artifact went in this image.
	Placed []record.Placement
	// Builder is what ran the build.
	Builder Builder
	// StartedOn and FinishedOn, when not zero, are put in the
	// provenance's metadata. They make it differ from build to build, so
	// they are left zero unless asked for.
	StartedOn, FinishedOn time.Time
}

// Base is a base image by reference and manifest digest.
type Base struct {
	// Ref is the base as the recipe gives it: "scratch", a built-in
	// base, "oci:DIR[:TAG]", or a registry reference.
	Ref string
	// Digest is the manifest digest of the base image used for this
	// platform ("sha256:<hex>"); empty for scratch.
	Digest string
}

// File names a file by name and sha256.
type File struct {
	Name   string
	SHA256 string
}

// Builder identifies what ran the build, for the provenance.
type Builder struct {
	// ID is a URI; DefaultBuilderID when empty.
	ID string
	// Version is pallet's version ("v1.2.3", "(devel)").
	Version string
}

// Document is one of the documents of an image.
type Document struct {
	// Name is a file name for it ("sbom.spdx.json").
	Name      string
	MediaType string
	// PredicateType is the in-toto predicate type it goes by as an
	// attestation. The provenance is a Statement already; the SBOMs are
	// wrapped in one by Statement.
	PredicateType string
	Data          []byte
}

// All returns the image's SPDX document, CycloneDX BOM and provenance.
func All(in Input) ([]Document, error) {
	spdx, err := SPDX(in)
	if err != nil {
		return nil, err
	}
	cdx, err := CycloneDX(in)
	if err != nil {
		return nil, err
	}
	prov, err := Provenance(in)
	if err != nil {
		return nil, err
	}
	return []Document{
		{Name: "sbom.spdx.json", MediaType: MediaTypeSPDX, PredicateType: PredicateSPDX, Data: spdx},
		{Name: "sbom.cdx.json", MediaType: MediaTypeCycloneDX, PredicateType: PredicateCycloneDX, Data: cdx},
		{Name: "provenance.intoto.json", MediaType: MediaTypeInToto, PredicateType: PredicateProvenance, Data: prov},
	}, nil
}

// marshal is the one encoding of every document: indented, keys in a
// fixed order (struct fields, sorted map keys), no HTML escaping, one
// final newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var (
	hexRE    = lazyre.New(`^[0-9a-f]+$`)
	digestRE = lazyre.New(`^sha256:[0-9a-f]{64}$`)
)

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool { return len(s) == n && hexRE().MatchString(s) }

// sha256Hex is the hex of a sha256 given as hex or "sha256:<hex>", or
// empty when s is neither.
func sha256Hex(s string) string {
	s = strings.ToLower(strings.TrimPrefix(s, "sha256:"))
	if isHex(s, 64) {
		return s
	}
	return ""
}

// check refuses an input the documents could not describe truthfully.
func (in *Input) check() error {
	if in.Image == "" {
		return errors.New("sbom: no image name")
	}
	if in.Platform == "" {
		return fmt.Errorf("sbom: image %s: no platform", in.Image)
	}
	if !digestRE().MatchString(in.Digest) {
		return fmt.Errorf("sbom: image %s (%s): manifest digest %q is not sha256:<64 hex>", in.Image, in.Platform, in.Digest)
	}
	if in.Base.Digest != "" && !digestRE().MatchString(in.Base.Digest) {
		return fmt.Errorf("sbom: image %s (%s): base %s digest %q is not sha256:<64 hex>", in.Image, in.Platform, in.Base.Ref, in.Base.Digest)
	}
	if in.Recipe.SHA256 != "" && sha256Hex(in.Recipe.SHA256) == "" {
		return fmt.Errorf("sbom: recipe %s: sha256 %q is not 64 hex digits", in.Recipe.Name, in.Recipe.SHA256)
	}
	return nil
}

// epoch is the documents' time, to the second, in UTC.
func (in *Input) epoch() time.Time {
	if in.Epoch.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return in.Epoch.UTC().Truncate(time.Second)
}

// timestamp is t as SPDX, CycloneDX and SLSA all accept it.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// graph is what the three documents say, gathered once from an Input:
// every element with its id, and who contains or depends on whom.
type graph struct {
	in      *Input
	image   *imageNode
	base    *baseNode
	arts    []*artNode
	files   []*fileNode
	modules []*modNode
	stdlibs []*stdlibNode
	debs    []*debNode
	ids     map[string]string // id -> what it names, to catch collisions
	// modPurls are the purls of the modules in the document.
	modPurls map[string]bool
}

// artifactPurl is a's purl, or "" when a module of the document has it:
// a gomod artifact's binaries name their module at its version, and two
// elements with one purl (three for two artifacts of one module) had a
// scanner report each advisory as many times.
func (g *graph) artifactPurl(a *Artifact) string {
	if a.Module == "" {
		return ""
	}
	p := artifactPurl(a)
	if g.modPurls[p] {
		return ""
	}
	return p
}

type imageNode struct {
	id, name, digest string
}

type baseNode struct {
	id, name, digest, purl string
}

type artNode struct {
	id string
	a  *Artifact
	// files are the image files placed from the artifact, licences
	// included, by path.
	files []*fileNode
}

type fileNode struct {
	id string
	// path is the absolute path in the image.
	path         string
	sha1, sha256 string
	size         int64
	art          *artNode
	// license marks a licence file, placed under /LICENSES/<artifact>/.
	license bool
	bin     *GoBinary
	main    *modNode
	deps    []*modNode
	stdlib  *stdlibNode
	// debs are the Debian packages of the C libraries a cgo binary
	// contains.
	debs []*debNode
}

type modNode struct {
	id            string
	path, version string
	sum           string
	// replaced is the module path@version the build asked for, when a
	// replace directive put this one in its place; local says the
	// replacement was a directory, whose path is not shown.
	replaced string
	local    bool
	// main says the module is a binary's main module: an artifact's own
	// source, which the artifact's pins cover.
	main bool
	// licenses are the SPDX identifiers its licence files were classified
	// as, when module licences were collected (the record's); sorted.
	licenses []string
}

// concluded is the licence pallet concluded for the module from its
// files: every identifier found, joined by AND (a module shipping an MIT
// root and an Apache-2.0 fork is under both), or "" when none was found
// or one is not on the SPDX list (a LicenseRef- would need the text
// extracted into the document).
func (m *modNode) concluded() string { return concludedOf(m.licenses) }

// concludedOf is the licence of ids: every one, joined by AND, or "" when
// there are none or one is not on the SPDX list (a LicenseRef- would need
// the text extracted into the document).
func concludedOf(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	for _, id := range ids {
		if strings.Contains(id, "LicenseRef-") {
			return ""
		}
	}
	expr := strings.Join(ids, " AND ")
	if checkLicenseExpression(expr) != nil {
		return ""
	}
	return expr
}

type stdlibNode struct {
	id, goVersion string
	// licenseRead says pallet shipped the LICENSE of this toolchain
	// beside a binary it built, after checking it is Go's BSD-3-Clause
	// text: the licence is then concluded, not only declared.
	licenseRead bool
}

// concluded is the stdlib's licence as pallet concluded it, or "".
func (s *stdlibNode) concluded() string {
	if s.licenseRead {
		return "BSD-3-Clause"
	}
	return ""
}

// build gathers the graph of in.
func build(in *Input) (*graph, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	g := &graph{in: in, ids: map[string]string{}}
	g.image = &imageNode{name: in.Image, digest: in.Digest}
	g.image.id = g.newID("Image", in.Image, "image "+in.Digest)
	if b := newBase(in); b != nil {
		b.id = g.newID("Base", b.name, "base "+in.Base.Ref+" "+in.Base.Digest)
		g.base = b
	}
	byName, err := in.placedArtifacts()
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		a := byName[name]
		an := &artNode{a: a, id: g.newID("Artifact", a.Name, "artifact "+a.Name+" "+a.Platform)}
		g.arts = append(g.arts, an)
	}
	if err := g.placeFiles(byName); err != nil {
		return nil, err
	}
	if err := g.goModules(); err != nil {
		return nil, err
	}
	g.cLibraries()
	for id, what := range g.ids {
		if id == "" {
			return nil, fmt.Errorf("sbom: empty id for %s", what)
		}
	}
	return g, nil
}

// placedArtifacts returns the artifacts of the image's platform that are
// placed in it, by name, each once.
func (in *Input) placedArtifacts() (map[string]*Artifact, error) {
	all := map[string]*Artifact{}
	for i := range in.Artifacts {
		a := &in.Artifacts[i]
		if a.Platform != in.Platform {
			continue
		}
		if _, dup := all[a.Name]; dup {
			return nil, fmt.Errorf("sbom: image %s (%s): artifact %s given twice", in.Image, in.Platform, a.Name)
		}
		all[a.Name] = a
	}
	placed := map[string]*Artifact{}
	for _, p := range in.Placed {
		a, ok := all[p.Artifact]
		if !ok {
			return nil, fmt.Errorf("sbom: image %s (%s): artifact %s is placed at %s but not given", in.Image, in.Platform, p.Artifact, p.Dest)
		}
		if err := a.check(); err != nil {
			return nil, err
		}
		placed[p.Artifact] = a
	}
	return placed, nil
}

// placeFiles lists every file each placement puts in the image, and the
// licence files that go with the artifact.
func (g *graph) placeFiles(byName map[string]*Artifact) error {
	arts := map[string]*artNode{}
	for _, an := range g.arts {
		arts[an.a.Name] = an
	}
	byPath := map[string]*fileNode{}
	add := func(an *artNode, p string, f record.File, sha1 string, license bool) error {
		if old, ok := byPath[p]; ok {
			if old.art == an && old.sha256 == f.SHA256 {
				return nil // the same artifact placed over itself
			}
			return fmt.Errorf("sbom: image %s (%s): %s placed twice (artifacts %s and %s)", g.in.Image, g.in.Platform, p, old.art.a.Name, an.a.Name)
		}
		fn := &fileNode{path: p, sha1: sha1, sha256: f.SHA256, size: f.Size, art: an, license: license}
		fn.id = g.newID("File", p, "file "+p)
		byPath[p] = fn
		an.files = append(an.files, fn)
		if !license {
			fn.bin = an.a.goBinary(f.Path)
		}
		return nil
	}
	placements := slices.Clone(g.in.Placed)
	slices.SortFunc(placements, func(a, b record.Placement) int {
		return strings.Compare(a.Artifact+"\x00"+a.Dest+"\x00"+a.Path, b.Artifact+"\x00"+b.Dest+"\x00"+b.Path)
	})
	// Which licence files of each artifact the image's placements of it
	// ship: all, or those some placement's path keeps.
	shipsAll := map[*artNode]bool{}
	keeps := map[*artNode][]func(string) bool{}
	for _, pl := range placements {
		an := arts[pl.Artifact]
		if k := an.a.LicenceKept(pl.Path); k == nil {
			shipsAll[an] = true
		} else {
			keeps[an] = append(keeps[an], k)
		}
		for _, f := range an.a.Files {
			rel, single, ok := fromPath(pl.Path, f.Path, an.a.Single)
			if !ok {
				continue
			}
			p, err := placedPath(pl.Dest, rel, single)
			if err != nil {
				return fmt.Errorf("sbom: image %s (%s): artifact %s at %s: %w", g.in.Image, g.in.Platform, pl.Artifact, pl.Dest, err)
			}
			if err := add(an, p, f, an.a.SHA1[f.Path], false); err != nil {
				return err
			}
		}
	}
	// Licence files land once per image, under /LICENSES/<artifact>/,
	// for every artifact placed (plan.Placement.Licenses).
	for _, an := range g.arts {
		for _, f := range an.a.LicenseFiles {
			if !shipsAll[an] && !slices.ContainsFunc(keeps[an], func(k func(string) bool) bool { return k(f.Path) }) {
				continue
			}
			if err := add(an, "/LICENSES/"+an.a.Name+"/"+f.Path, f.File, f.SHA1, true); err != nil {
				return err
			}
		}
	}
	for _, fn := range byPath {
		g.files = append(g.files, fn)
	}
	slices.SortFunc(g.files, func(a, b *fileNode) int { return strings.Compare(a.path, b.path) })
	for _, an := range g.arts {
		slices.SortFunc(an.files, func(a, b *fileNode) int { return strings.Compare(a.path, b.path) })
	}
	return nil
}

// fromPath is the path of the artifact's file p in the tree a placement
// that takes the artifact's path from (clean; "" for all of it) places,
// and whether that tree is this file alone, by tree.Place's rule: the
// file named is placed alone, a directory's contents go where it is
// placed. Not ok when the placement does not take p (record.PlacesPath,
// the one rule of what a path takes).
func fromPath(from, p string, single bool) (rel string, one, ok bool) {
	switch {
	case !record.PlacesPath(from, p):
		return "", false, false
	case from == "":
		return p, single, true
	case p == from:
		return path.Base(p), true, true
	}
	return strings.TrimPrefix(p, from+"/"), false, true
}

// placedPath is where a file at p in an artifact's tree lands when the
// artifact is placed at dest, by tree.Place's rule: a tree of one file
// placed at a dest without a trailing slash takes the dest's name;
// anything else goes into dest as a directory.
func placedPath(dest, p string, single bool) (string, error) {
	d, err := cleanTreePath(dest)
	if err != nil {
		return "", err
	}
	if single && !strings.HasSuffix(dest, "/") && d != "." {
		return "/" + d, nil
	}
	return "/" + strings.TrimPrefix(path.Join(d, p), "./"), nil
}

// cleanTreePath is tree.CleanPath's form of a destination: slashes,
// no "..", relative to the root ("." for the root itself).
func cleanTreePath(p string) (string, error) {
	p = strings.ReplaceAll(p, "\\", "/")
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("path %q leaves the tree (contains ..)", p)
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	if c == "" {
		c = "."
	}
	return c, nil
}

// goModules links each Go binary to its main module, its dependencies and
// the toolchain's standard library, each one element however many
// binaries share it.
func (g *graph) goModules() error {
	mods := map[string]*modNode{}
	stdlibs := map[string]*stdlibNode{}
	module := func(m Module) *modNode {
		n := &modNode{path: m.Path, version: m.Version, sum: m.Sum}
		if r := m.Replace; r != nil {
			n.replaced = m.Path
			if m.Version != "" {
				n.replaced += "@" + m.Version
			}
			if r.Version == "" {
				// A directory: its path is the builder's.
				n.version, n.sum, n.local = "", "", true
			} else {
				n.path, n.version, n.sum = r.Path, r.Version, r.Sum
			}
		}
		if n.version == "(devel)" {
			n.version = ""
		}
		key := n.path + "@" + n.version + " " + n.sum + " " + n.replaced
		if old, ok := mods[key]; ok {
			return old
		}
		n.id = g.newID("Go", n.path+"-"+n.version, "module "+key)
		mods[key] = n
		return n
	}
	// The licences collected for each module, by the path it was linked
	// as, from the record of the binary's artifact.
	withLicenses := func(n *modNode, fn *fileNode, path string) *modNode {
		for _, gb := range fn.art.a.GoBinaries {
			if gb.Path != fn.bin.Path {
				continue
			}
			for _, rm := range gb.Modules {
				if rm.Path != path {
					continue
				}
				for _, id := range rm.Licenses {
					if !slices.Contains(n.licenses, id) {
						n.licenses = append(n.licenses, id)
					}
				}
				slices.Sort(n.licenses)
			}
		}
		return n
	}
	for _, fn := range g.files {
		b := fn.bin
		if b == nil {
			continue
		}
		if b.Main.Path != "" {
			fn.main = withLicenses(module(b.Main), fn, b.Main.Path)
			fn.main.main = true
		}
		for _, d := range b.Deps {
			fn.deps = append(fn.deps, withLicenses(module(d), fn, d.Path))
		}
		slices.SortFunc(fn.deps, func(a, b *modNode) int { return strings.Compare(a.id, b.id) })
		fn.deps = slices.Compact(fn.deps)
		if b.GoVersion != "" {
			s, ok := stdlibs[b.GoVersion]
			if !ok {
				s = &stdlibNode{goVersion: b.GoVersion, id: g.newID("Go-stdlib", b.GoVersion, "stdlib "+b.GoVersion)}
				stdlibs[b.GoVersion] = s
			}
			fn.stdlib = s
			for _, gb := range fn.art.a.GoBinaries {
				if gb.Path == b.Path && gb.GoLicense != "" {
					s.licenseRead = true
				}
			}
		}
	}
	g.modPurls = map[string]bool{}
	for _, m := range mods {
		g.modules = append(g.modules, m)
		g.modPurls[goPurl(m.path, m.version)] = true
	}
	slices.SortFunc(g.modules, func(a, b *modNode) int {
		return strings.Compare(a.path+"\x00"+a.version+"\x00"+a.id, b.path+"\x00"+b.version+"\x00"+b.id)
	})
	for _, s := range stdlibs {
		g.stdlibs = append(g.stdlibs, s)
	}
	slices.SortFunc(g.stdlibs, func(a, b *stdlibNode) int { return strings.Compare(a.goVersion, b.goVersion) })
	return nil
}

// modes are the modes chosen for the image's artifacts, by artifact name.
func (g *graph) modes() map[string]string {
	m := map[string]string{}
	for _, an := range g.arts {
		if an.a.Mode != "" {
			m[an.a.Name] = an.a.Mode
		}
	}
	return m
}
