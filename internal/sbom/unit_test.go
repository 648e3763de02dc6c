package sbom

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// placedPath follows tree.Place: the test places real trees and compares.
func TestPlacedPathIsTreePlace(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "one"), "x")
	writeFile(t, filepath.Join(dir, "nested", "bin", "tool"), "x")
	writeFile(t, filepath.Join(dir, "nested", "README"), "x")
	one, err := tree.FromFile(filepath.Join(dir, "one"), "tool.amd64")
	if err != nil {
		t.Fatal(err)
	}
	nested, err := tree.FromDir(filepath.Join(dir, "nested"))
	if err != nil {
		t.Fatal(err)
	}
	deep := tree.New()
	if err := deep.Add(tree.Entry{Path: "bin/only", Kind: tree.File, Source: filepath.Join(dir, "one")}); err != nil {
		t.Fatal(err)
	}
	for _, src := range []*tree.Tree{one, nested, deep} {
		es := src.Entries()
		single := len(es) == 1 && es[0].Kind == tree.File
		for _, dest := range []string{"/usr/local/bin/tool", "/usr/local/bin/", "/", "opt//x/./y", `\k\bin\`} {
			img := tree.New()
			if err := img.Place(src, tree.Placement{Dest: dest}); err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, e := range img.Entries() {
				if e.Kind == tree.File {
					want["/"+e.Path] = true
				}
			}
			for _, e := range es {
				if e.Kind != tree.File {
					continue
				}
				got, err := placedPath(dest, e.Path, single)
				if err != nil {
					t.Fatal(err)
				}
				if !want[got] {
					t.Errorf("%s placed at %q: got %s, tree.Place has %v", e.Path, dest, got, want)
				}
			}
		}
	}
	if _, err := placedPath("/a/../../etc", "x", false); err == nil {
		t.Error("a destination leaving the root was accepted")
	}
}

func TestLicenseExpressions(t *testing.T) {
	for _, ok := range []string{
		"MIT", "Apache-2.0", "GPL-2.0-or-later", "GPL-2.0+", "MIT OR Apache-2.0",
		"(MIT OR Apache-2.0) AND BSD-3-Clause", "GPL-2.0-only WITH Classpath-exception-2.0",
		"LicenseRef-pallet-custom", "DocumentRef-other:LicenseRef-x", "((MIT))",
	} {
		if err := checkLicenseExpression(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "MIT OR", "AND MIT", "(MIT", "MIT)", "MIT Apache-2.0", "MIT WITH", "Apache 2.0 license",
		"MIT/Apache-2.0", "WITH MIT", "MIT OR OR Apache-2.0", "NOASSERTION OR",
	} {
		if checkLicenseExpression(bad) == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// What the documents could not say truthfully is refused, with the
// reason and the element named.
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, want string
		edit       func(*Input)
	}{
		{"no image", "no image name", func(in *Input) { in.Image = "" }},
		{"short digest", "manifest digest", func(in *Input) { in.Digest = "sha256:abc" }},
		{"bad base digest", "base docker.io/library/debian:bookworm-slim digest", func(in *Input) { in.Base.Digest = "latest" }},
		{"placed, not given", "artifact ghost is placed at /x but not given", func(in *Input) {
			in.Placed = append(in.Placed, record.Placement{Artifact: "ghost", Dest: "/x"})
		}},
		{"not described", "has no SHA-1 (make the artifact with Describe)", func(in *Input) { in.Artifacts[0].SHA1 = nil }},
		{"bad licence", `licence "Apache 2"`, func(in *Input) { in.Artifacts[0].License = "Apache 2" }},
		{"bad pin", "not a sha256", func(in *Input) { in.Artifacts[0].SHA256 = "md5:abc" }},
		{"short commit", "not a full commit hash", func(in *Input) { in.Artifacts[1].Commit = "abc123" }},
		{"two at one path", "/usr/local/sbin/runc placed twice", func(in *Input) {
			in.Placed = append(in.Placed, record.Placement{Artifact: "entrypoint", Dest: "/usr/local/sbin/runc"})
		}},
	} {
		in := sampleInput()
		c.edit(&in)
		for name, make := range map[string]func(Input) ([]byte, error){"spdx": SPDX, "cyclonedx": CycloneDX, "provenance": Provenance} {
			_, err := make(in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: error %v, want one saying %q", c.name, name, err, c.want)
			}
		}
	}
	in := sampleInput()
	in.Recipe = File{}
	if _, err := Provenance(in); err == nil {
		t.Error("a provenance without the recipe's digest was written")
	}
	if _, err := SPDX(in); err != nil {
		t.Errorf("an SBOM needs no recipe: %v", err)
	}
}

func TestBases(t *testing.T) {
	digest := "sha256:" + hexSHA256("base")
	for _, c := range []struct {
		ref, name, purl string
	}{
		{"scratch", "", ""},
		{"windows-hostprocess-scratch", "windows-hostprocess-scratch", "pkg:oci/windows-hostprocess-scratch@sha256%3A" + hexSHA256("base") + "?arch=amd64"},
		{"oci:" + recipeDir + "/base:v1", "oci:base:v1", "pkg:oci/base@sha256%3A" + hexSHA256("base") + "?arch=amd64&tag=v1"},
		{"oci:layouts/base:v1", "oci:layouts/base:v1", "pkg:oci/base@sha256%3A" + hexSHA256("base") + "?arch=amd64&tag=v1"},
		{"oci:/elsewhere/layouts/debian", "oci:debian", "pkg:oci/debian@sha256%3A" + hexSHA256("base") + "?arch=amd64"},
		{"ghcr.io/org/base@" + digest, "ghcr.io/org/base@" + digest, "pkg:oci/base@sha256%3A" + hexSHA256("base") + "?arch=amd64&repository_url=ghcr.io/org/base"},
		{"debian", "debian", "pkg:oci/debian@sha256%3A" + hexSHA256("base") + "?arch=amd64&repository_url=docker.io/library/debian&tag=latest"},
	} {
		in := sampleInput()
		in.Base = Base{Ref: c.ref, Digest: digest}
		b := newBase(&in)
		if c.name == "" {
			if b != nil {
				t.Errorf("%s: a base %+v", c.ref, b)
			}
			continue
		}
		if b == nil || b.name != c.name || b.purl != c.purl {
			t.Errorf("%s: %+v, want name %s purl %s", c.ref, b, c.name, c.purl)
		}
		spdx, err := SPDX(in)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, "http://spdx.org/rdf/terms/2.3", spdx)
		checkSPDX(t, spdx)
	}
}

func TestLocations(t *testing.T) {
	for u, want := range map[string]string{
		"https://user:tok@example.com/a/b.tgz?x=1": "https://example.com/a/b.tgz?x=1",
		"git@github.com:org/repo.git":              "ssh://github.com/org/repo.git",
		"file:///srv/repo":                         "",
		"/srv/repo":                                "",
		"./repo":                                   "",
	} {
		if got := remote(u); got != want {
			t.Errorf("remote(%q) = %q, want %q", u, got, want)
		}
	}
	in := Input{Dir: "/home/b/recipe"}
	for p, want := range map[string]string{
		"/home/b/recipe/files/etc": "files/etc",
		"/home/b/recipe":           ".",
		"/home/b/other/x.sh":       "x.sh",
		"files/etc":                "files/etc",
		"../outside/y":             "y",
	} {
		if got := in.localPath(p); got != want {
			t.Errorf("localPath(%q) = %q, want %q", p, got, want)
		}
	}
	// Files of a commit: SPDX's #path after the commit, and said as
	// taken, not built.
	files := &Artifact{}
	files.Repo, files.Commit, files.GitPath = "https://github.com/antrea-io/antrea", strings.Repeat("a", 40), "hack/windows"
	if got, want := in.downloadLocation(files), "git+https://github.com/antrea-io/antrea@"+files.Commit+"#hack/windows"; got != want {
		t.Errorf("download location of files of a commit: %s, want %s", got, want)
	}
	if got := in.origin(files); !strings.HasPrefix(got, "Taken as it is from hack/windows at commit "+files.Commit) {
		t.Errorf("origin of files of a commit: %s", got)
	}
	// Files of a module version: said as taken, with the path, and the
	// provenance annotates the module with it.
	mod := &Artifact{}
	mod.Name, mod.Kind, mod.Module, mod.SHA256, mod.InModule = "scripts", "gomod-files", "antrea.io/antrea/v2@v2.4.0", "h1:"+strings.Repeat("A", 43)+"=", "hack/windows"
	if got := in.origin(mod); !strings.HasPrefix(got, "Taken as it is from hack/windows of Go module antrea.io/antrea/v2@v2.4.0 (go.sum "+mod.SHA256+")") {
		t.Errorf("origin of files of a module: %s", got)
	}
	if rds := in.artifactDependency(mod); len(rds) != 1 || rds[0].Annotations["inModule"] != "hack/windows" || rds[0].URI != "pkg:golang/antrea.io/antrea/v2@v2.4.0" {
		t.Errorf("provenance of files of a module: %+v", rds)
	}
	c := (&graph{in: &in}).cdxArtifact(&artNode{a: mod})
	if !slices.Contains(c.Properties, cdxProperty{Name: "pallet:gomod:path", Value: "hack/windows"}) {
		t.Errorf("CycloneDX properties of files of a module: %+v", c.Properties)
	}
	// The component is the files, not the module: the purl's subpath.
	if want := "pkg:golang/antrea.io/antrea/v2@v2.4.0#hack/windows"; c.Purl != want {
		t.Errorf("CycloneDX purl of files of a module: %s, want %s", c.Purl, want)
	}
	mod.InModule = "hack/win dows/Install-OVS.ps1"
	if got, want := artifactPurl(mod), "pkg:golang/antrea.io/antrea/v2@v2.4.0#hack/win%20dows/Install-OVS.ps1"; got != want {
		t.Errorf("purl %s, want %s", got, want)
	}
	if got := goPurl("github.com/docker/docker", "v24.0.7+incompatible"); got != "pkg:golang/github.com/docker/docker@v24.0.7%2Bincompatible" {
		t.Errorf("purl %s", got)
	}
	if got := stdlibPurl("go1.22.0 X:boringcrypto"); got != "pkg:golang/stdlib@1.22.0" {
		t.Errorf("stdlib purl %s", got)
	}
}

// Statement wraps an SBOM as attestation layers carry it, about the image.
func TestStatement(t *testing.T) {
	in, spdx, st := spdxStatement(t)
	v := decode(t, st)
	if v["_type"] != StatementType || v["predicateType"] != PredicateSPDX {
		t.Errorf("statement %v %v", v["_type"], v["predicateType"])
	}
	subj := v["subject"].([]any)[0].(map[string]any)
	if subj["name"] != "kind-base" || subj["digest"].(map[string]any)["sha256"] != strings.TrimPrefix(in.Digest, "sha256:") {
		t.Errorf("subject %v", subj)
	}
	if v["predicate"].(map[string]any)["documentNamespace"] != decode(t, spdx)["documentNamespace"] {
		t.Error("the predicate is not the document")
	}
	if _, err := Statement(in, PredicateSPDX, []byte(`["not an object"]`)); err == nil {
		t.Error("a non-object predicate was wrapped")
	}
}

// PredicateAbout reads back what Statement wrote, and only about the
// subject and of the predicate type asked for.
func TestPredicateAbout(t *testing.T) {
	in, spdx, st := spdxStatement(t)
	hex := strings.TrimPrefix(in.Digest, "sha256:")
	got, err := PredicateAbout(st, "sha256", hex, PredicateSPDX)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := json.Compact(&a, got); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&b, spdx); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("predicate read back is not the document written:\n%s", got)
	}
	other := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, data, hex, predicate, want string
	}{
		{"another subject", string(st), other, PredicateSPDX, "the statement is about sha256:" + hex + ", not sha256:" + other},
		{"another predicate type", string(st), hex, PredicateCycloneDX, "holds a statement of predicate type " + PredicateSPDX + ", not " + PredicateCycloneDX},
		{"no subject", `{"predicateType":"` + PredicateSPDX + `","predicate":{}}`, hex, PredicateSPDX, "the statement is about nothing, not sha256:" + hex},
		{"no predicate", `{"predicateType":"` + PredicateSPDX + `","subject":[{"digest":{"sha256":"` + hex + `"}}]}`, hex, PredicateSPDX, "the statement holds no predicate"},
		{"not JSON", "{", hex, PredicateSPDX, "not an in-toto statement: unexpected end of JSON input"},
	} {
		if _, err := PredicateAbout([]byte(tc.data), "sha256", tc.hex, tc.predicate); err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
}

// RecipeFile names the recipe by base name and pins its bytes.
func TestRecipeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "pallet.yaml")
	writeFile(t, p, "images: {}\n")
	f, err := RecipeFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "pallet.yaml" || f.SHA256 != hexSHA256("images: {}\n") {
		t.Errorf("%+v", f)
	}
	if _, err := RecipeFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing recipe: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// A gomod artifact's binaries name their module at its version: the
// module's element carries the purl, and the artifacts built from it do
// not repeat it, so that a scanner reports an advisory once.
func TestModulePurlOnce(t *testing.T) {
	in := sampleInput()
	var crictl Artifact
	for _, a := range in.Artifacts {
		if a.Name == "crictl" {
			crictl = a
		}
	}
	// A second artifact of the same module version, as containerd's shim
	// is built apart from containerd.
	second := crictl
	second.Name = "critest"
	in.Artifacts = append(in.Artifacts, second)
	in.Placed = append(in.Placed, record.Placement{Artifact: "critest", Dest: "/usr/local/bin/critest"})
	const purl = `"pkg:golang/sigs.k8s.io/cri-tools@v1.30.0"`
	for name, gen := range map[string]func(Input) ([]byte, error){"SPDX": SPDX, "CycloneDX": CycloneDX} {
		doc, err := gen(in)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(doc), purl); n != 1 {
			t.Errorf("%s: %s %d times, want once", name, purl, n)
		}
	}
}

// The Debian packages of the C libraries a cgo binary contains are
// packages of the documents, one each however many of their files are
// linked, by pkg:deb purl, with the licence their copyright file
// declares, depended on by that binary alone; no build-machine path of a
// library shows.
func TestCLibraryPackages(t *testing.T) {
	in := sampleInput()
	spdx, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []struct {
			SPDXID           string
			Name             string `json:"name"`
			LicenseConcluded string `json:"licenseConcluded"`
			ExternalRefs     []struct {
				Locator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
		Files []struct {
			SPDXID   string
			FileName string `json:"fileName"`
		} `json:"files"`
		Relationships []struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
			Related string `json:"relatedSpdxElement"`
		} `json:"relationships"`
	}
	if err := json.Unmarshal(spdx, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"libseccomp-dev": {"pkg:deb/debian/libseccomp-dev@2.5.4-1%2Bdeb12u1?arch=amd64&distro=debian-12&upstream=libseccomp", "LGPL-2.1-only"},
		"libc6-dev":      {"pkg:deb/debian/libc6-dev@2.36-9%2Bdeb12u14?arch=amd64&distro=debian-12&upstream=glibc", "NOASSERTION"},
	}
	ids := map[string]string{}
	for _, p := range doc.Packages {
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		if _, dup := ids[p.Name]; dup {
			t.Errorf("%s is two packages", p.Name)
		}
		ids[p.Name] = p.SPDXID
		if len(p.ExternalRefs) != 1 || p.ExternalRefs[0].Locator != w[0] || p.LicenseConcluded != w[1] {
			t.Errorf("%s: %+v, want %s under %s", p.Name, p, w[0], w[1])
		}
	}
	if len(ids) != len(want) {
		t.Fatalf("packages %v, want %v", ids, want)
	}
	files := map[string]string{}
	for _, f := range doc.Files {
		files[f.SPDXID] = f.FileName
	}
	for _, r := range doc.Relationships {
		for name, id := range ids {
			if r.Related == id && (r.Type != "DEPENDS_ON" || !strings.HasSuffix(files[r.Element], "/bin/ctr")) {
				t.Errorf("%s: %s %s %s", name, files[r.Element], r.Type, name)
			}
		}
	}
	cdx, err := CycloneDX(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{spdx, cdx} {
		for _, leak := range []string{"/usr/lib/x86_64-linux-gnu", "libfoo", "-lseccomp"} {
			if strings.Contains(string(b), leak) {
				t.Errorf("a document holds %q", leak)
			}
		}
		if !strings.Contains(string(b), want["libseccomp-dev"][0]) {
			t.Errorf("a document has no %s", want["libseccomp-dev"][0])
		}
	}
}

// The CycloneDX serial number is RFC 9562's name-based UUID (version 5)
// of the image's namespace URL, as github.com/google/uuid's NewSHA1 made
// it before pallet wrote its own: every BOM keeps its serial number.
// The values are Python's uuid.uuid5(uuid.NAMESPACE_URL, name).
func TestSerialNumberIsUUIDv5(t *testing.T) {
	digest := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if got, want := serialNumber("registry.example:5000/team/hello", digest), "urn:uuid:d0f00a22-3284-513e-a0a1-853420a5b5e2"; got != want {
		t.Errorf("serial number %s, want %s", got, want)
	}
	if got, want := uuidV5(nameSpaceURL, "https://example.com/x"), "49517db3-5541-5e91-9cd4-395dd68a97ac"; got != want {
		t.Errorf("uuidV5 %s, want %s", got, want)
	}
}
