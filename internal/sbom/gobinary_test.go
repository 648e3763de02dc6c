package sbom

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// proxyModule writes module path@version made of files into a GOPROXY
// directory, and returns its zip's go.sum hash, its go.mod's, and the
// in-toto dirHash of the zip computed the way that spec describes it
// (sha256 over "sha256sum" lines of the sorted files), independently of
// the h1 encoding.
func proxyModule(t *testing.T, proxy, path, version string, files map[string]string) (zipSum, modSum, dirHashHex string) {
	t.Helper()
	src := t.TempDir()
	for name, c := range files {
		writeFile(t, filepath.Join(src, name), c)
	}
	dir := filepath.Join(proxy, path, "@v")
	var zb bytes.Buffer
	if err := modzip.CreateFromDir(&zb, module.Version{Path: path, Version: version}, src); err != nil {
		t.Fatal(err)
	}
	zipFile := filepath.Join(dir, version+".zip")
	writeFile(t, zipFile, zb.String())
	writeFile(t, filepath.Join(dir, version+".mod"), files["go.mod"])
	writeFile(t, filepath.Join(dir, version+".info"), fmt.Sprintf(`{"Version":%q,"Time":"2024-01-02T03:04:05Z"}`, version))
	writeFile(t, filepath.Join(dir, "list"), version+"\n")
	var err error
	if zipSum, err = dirhash.HashZip(zipFile, dirhash.Hash1); err != nil {
		t.Fatal(err)
	}
	if modSum, err = dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(files["go.mod"])), nil
	}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zb.Bytes()), int64(zb.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, rc)
		rc.Close()
		lines = append(lines, fmt.Sprintf("%x  %s\n", h.Sum(nil), f.Name))
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	listing := sha256.Sum256([]byte(strings.Join(lines, "")))
	return zipSum, modSum, hex.EncodeToString(listing[:])
}

// buildHello builds, with the host's Go, a program of module
// example.com/hello that uses example.com/greet v1.2.3 from a file-based
// module proxy; it returns the binary, its module directory, and greet's
// hashes.
func buildHello(t *testing.T) (bin, dir, greetSum, greetDirHash string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	work := t.TempDir()
	proxy := filepath.Join(work, "proxy")
	greetSum, greetMod, greetDirHash := proxyModule(t, proxy, "example.com/greet", "v1.2.3", map[string]string{
		"go.mod":   "module example.com/greet\n\ngo 1.21\n",
		"greet.go": "package greet\n\nfunc Hello() string { return \"hello from greet\" }\n",
		"LICENSE":  "MIT License, for the test\n",
	})
	dir = filepath.Join(work, "hello")
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/hello\n\ngo 1.21\n\nrequire example.com/greet v1.2.3\n")
	writeFile(t, filepath.Join(dir, "go.sum"), fmt.Sprintf("example.com/greet v1.2.3 %s\nexample.com/greet v1.2.3/go.mod %s\n", greetSum, greetMod))
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nimport \"example.com/greet\"\n\nfunc main() { println(greet.Hello()) }\n")
	writeFile(t, filepath.Join(dir, "LICENSE"), "Apache License 2.0, for the test\n")
	bin = filepath.Join(work, "out", "hello")
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off", "GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=",
		"GOFLAGS=-modcacherw -buildvcs=false -mod=readonly", "GOMODCACHE="+filepath.Join(work, "modcache"),
		"GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOWORK=off", "GOOS=", "GOARCH=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, dir, greetSum, greetDirHash
}

// countingMemo remembers facts by path and counts how many were derived.
type countingMemo struct {
	facts   map[string]string
	derived int
}

func (m *countingMemo) memo(path string, _ tree.Stamp, fact string, derive func(string) (string, error)) (string, error) {
	if v, ok := m.facts[path+"\x00"+fact]; ok {
		return v, nil
	}
	m.derived++
	v, err := derive(path)
	if err == nil {
		m.facts[path+"\x00"+fact] = v
	}
	return v, err
}

// TestRealGoBinary builds a Go program with one dependency and describes
// it: the module list is the binary's own, the dependency's go.sum hash
// becomes an in-toto dirHash equal to the one computed from the module's
// files, and the documents stay valid and free of the build's paths.
func TestRealGoBinary(t *testing.T) {
	bin, dir, greetSum, greetDirHash := buildHello(t)
	ft, err := tree.FromFile(bin, "hello")
	if err != nil {
		t.Fatal(err)
	}
	lic := tree.New()
	licInfo, err := os.Stat(filepath.Join(dir, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lic.Add(tree.Entry{Path: "LICENSE", Kind: tree.File, Mode: 0o644, Source: filepath.Join(dir, "LICENSE"), Size: licInfo.Size()}); err != nil {
		t.Fatal(err)
	}
	plat := runtime.GOOS + "/" + runtime.GOARCH
	res := &artifact.Result{Tree: ft, Licenses: lic, Record: artifact.Record{
		Name: "hello", Kind: "go", Platform: plat, GoVersion: runtime.Version(), Origin: artifact.Origin{Path: dir},
	}}
	m := &countingMemo{facts: map[string]string{}}
	rec, err := record.Scan(res, m.memo)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Describe(rec, res, m.memo)
	if err != nil {
		t.Fatal(err)
	}
	derived := m.derived
	if again, err := Describe(rec, res, m.memo); err != nil || derived != m.derived {
		t.Errorf("describing again derived %d more facts (err %v); the memo should have them", m.derived-derived, err)
	} else if fmt.Sprint(again) != fmt.Sprint(a) {
		t.Error("describing again gave another result")
	}

	if len(a.Go) != 1 || !a.Single {
		t.Fatalf("Go binaries %+v, single %v; want the one binary", a.Go, a.Single)
	}
	b := a.Go[0]
	if b.Path != "hello" || b.GoVersion != runtime.Version() || b.Main.Path != "example.com/hello" {
		t.Errorf("binary %s built by %s from %s", b.Path, b.GoVersion, b.Main.Path)
	}
	if len(b.Deps) != 1 || b.Deps[0].Path != "example.com/greet" || b.Deps[0].Version != "v1.2.3" || b.Deps[0].Sum != greetSum {
		t.Errorf("deps %+v, want example.com/greet v1.2.3 %s", b.Deps, greetSum)
	}
	var keys []string
	for _, s := range b.Settings {
		keys = append(keys, s.Key)
	}
	if !slices.Contains(keys, "GOOS") || !slices.Contains(keys, "-trimpath") || slices.Contains(keys, "-ldflags") {
		t.Errorf("settings %v", keys)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha1.Sum(data); a.SHA1["hello"] != hex.EncodeToString(sum[:]) {
		t.Errorf("sha1 %s, want %x", a.SHA1["hello"], sum)
	}
	if len(a.LicenseFiles) != 1 || a.LicenseFiles[0].Path != "LICENSE" {
		t.Errorf("licence files %+v", a.LicenseFiles)
	}

	// Module licences as the build collects them: greet's file was
	// classified as MIT; hello's main module shows one not on the SPDX
	// list, which leaves its conclusion NOASSERTION.
	if len(a.GoBinaries) != 1 {
		t.Fatalf("record Go binaries %+v", a.GoBinaries)
	}
	a.GoBinaries[0].Modules = []record.Module{
		{Path: "example.com/greet", Version: "v1.2.3", Sum: greetSum, Licenses: []string{"MIT"}, Files: []string{"example.com/greet/LICENSE"}},
		{Path: "example.com/hello", Licenses: []string{"Apache-2.0", "LicenseRef-Custom"}},
	}

	in := Input{
		Image: "hello", Platform: plat, Digest: "sha256:" + hexSHA256("hello manifest"),
		Base: Base{Ref: "scratch"}, Recipe: File{Name: "pallet.yaml", SHA256: hexSHA256("r")},
		Dir: filepath.Dir(dir), Artifacts: []Artifact{a},
		Placed: []record.Placement{{Artifact: "hello", Dest: "/usr/bin/hello"}},
	}
	docs, err := All(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if bytes.Contains(d.Data, []byte(filepath.Dir(dir))) {
			t.Errorf("%s holds the build's directory %s", d.Name, filepath.Dir(dir))
		}
	}
	spdx, cdx, prov := docs[0].Data, docs[1].Data, docs[2].Data
	validate(t, "http://spdx.org/rdf/terms/2.3", spdx)
	checkSPDX(t, spdx)
	validate(t, "http://cyclonedx.org/schema/bom-1.6.schema.json", cdx)
	validate(t, "https://pallet.dev/testdata/slsa-provenance-v1.schema.json", prov)

	// SPDX: /usr/bin/hello depends on greet and on the stdlib of the Go
	// that built it, and was generated from example.com/hello.
	v := decode(t, spdx)
	names := map[string]string{}
	for _, p := range v["packages"].([]any) {
		p := p.(map[string]any)
		names[p["SPDXID"].(string)] = p["name"].(string) + "@" + fmt.Sprint(p["versionInfo"])
	}
	for _, f := range v["files"].([]any) {
		f := f.(map[string]any)
		names[f["SPDXID"].(string)] = f["fileName"].(string)
	}
	var rels []string
	for _, r := range v["relationships"].([]any) {
		r := r.(map[string]any)
		rels = append(rels, names[r["spdxElementId"].(string)]+" "+r["relationshipType"].(string)+" "+names[r["relatedSpdxElement"].(string)])
	}
	for _, want := range []string{
		"./usr/bin/hello DEPENDS_ON example.com/greet@v1.2.3",
		"./usr/bin/hello DEPENDS_ON stdlib@" + runtime.Version(),
		"./usr/bin/hello GENERATED_FROM example.com/hello@<nil>",
		"hello@<nil> CONTAINS ./usr/bin/hello",
		"hello@<nil> CONTAINS ./LICENSES/hello/LICENSE",
	} {
		if !slices.Contains(rels, want) {
			t.Errorf("no relationship %q in %q", want, rels)
		}
	}
	if !bytes.Contains(spdx, []byte(`"referenceLocator": "pkg:golang/example.com/greet@v1.2.3"`)) {
		t.Error("SPDX: no purl for greet")
	}
	concluded := map[string]any{}
	for _, p := range v["packages"].([]any) {
		p := p.(map[string]any)
		concluded[p["name"].(string)] = p["licenseConcluded"]
	}
	if concluded["example.com/greet"] != "MIT" || concluded["example.com/hello"] != "NOASSERTION" {
		t.Errorf("SPDX module licences concluded: greet %v, hello %v", concluded["example.com/greet"], concluded["example.com/hello"])
	}
	// No Go LICENSE was shipped with this binary: the stdlib's licence
	// is declared, not concluded (below, with it shipped).
	if concluded["stdlib"] != "NOASSERTION" {
		t.Errorf("SPDX stdlib licence concluded %v without Go's LICENSE shipped", concluded["stdlib"])
	}

	// CycloneDX: greet's hash is its dirHash, as cyclonedx-gomod gives it.
	var greet map[string]any
	for _, c := range decode(t, cdx)["components"].([]any) {
		if c := c.(map[string]any); c["purl"] == "pkg:golang/example.com/greet@v1.2.3" {
			greet = c
		}
	}
	if greet == nil {
		t.Fatal("CycloneDX: no component for greet")
	}
	if h := greet["hashes"].([]any)[0].(map[string]any); h["alg"] != "SHA-256" || h["content"] != greetDirHash {
		t.Errorf("CycloneDX greet hash %v, want SHA-256 %s", h, greetDirHash)
	}
	if l, _ := greet["licenses"].([]any); len(l) != 1 || fmt.Sprint(l[0]) != "map[acknowledgement:concluded expression:MIT]" {
		t.Errorf("CycloneDX greet licences %v, want MIT, concluded", greet["licenses"])
	}

	// Provenance: greet by dirHash, the toolchain, the local module by
	// its path relative to the recipe's directory.
	deps := decode(t, prov)["predicate"].(map[string]any)["buildDefinition"].(map[string]any)["resolvedDependencies"].([]any)
	found := map[string]map[string]any{}
	for _, d := range deps {
		d := d.(map[string]any)
		found[fmt.Sprint(d["uri"])] = d
	}
	if d := found["pkg:golang/example.com/greet@v1.2.3"]; d == nil || d["digest"].(map[string]any)["dirHash"] != greetDirHash {
		t.Errorf("provenance: greet %v, want dirHash %s", d, greetDirHash)
	}
	if found[stdlibPurl(runtime.Version())] == nil {
		t.Errorf("provenance: no toolchain %s in %v", runtime.Version(), found)
	}
	if d := found["pkg:golang/example.com/hello"]; d == nil || d["annotations"].(map[string]any)["path"] != "hello" {
		t.Errorf("provenance: local module %v, want path hello", d)
	}

	// With the toolchain's LICENSE shipped beside the binary (the build
	// checked it is Go's BSD text), the stdlib's licence is concluded.
	a.GoBinaries[0].GoLicense = "std@" + runtime.Version() + "/LICENSE"
	if docs, err = All(in); err != nil {
		t.Fatal(err)
	}
	spdx, cdx = docs[0].Data, docs[1].Data
	validate(t, "http://spdx.org/rdf/terms/2.3", spdx)
	validate(t, "http://cyclonedx.org/schema/bom-1.6.schema.json", cdx)
	for _, p := range decode(t, spdx)["packages"].([]any) {
		if p := p.(map[string]any); p["name"] == "stdlib" && (p["licenseConcluded"] != "BSD-3-Clause" || p["licenseDeclared"] != "BSD-3-Clause") {
			t.Errorf("SPDX stdlib licence concluded %v, declared %v; want BSD-3-Clause for both", p["licenseConcluded"], p["licenseDeclared"])
		}
	}
	for _, c := range decode(t, cdx)["components"].([]any) {
		if c := c.(map[string]any); c["name"] == "stdlib" {
			if l, _ := c["licenses"].([]any); len(l) != 1 || fmt.Sprint(l[0]) != "map[acknowledgement:concluded expression:BSD-3-Clause]" {
				t.Errorf("CycloneDX stdlib licences %v, want BSD-3-Clause, concluded", c["licenses"])
			}
		}
	}
}

// ReadGoBinary tells a file that is not a Go binary (nil, no error) from
// one that cannot be read (an error).
func TestReadGoBinaryNotGo(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script.sh"), "#!/bin/sh\necho hi\n")
	b, err := ReadGoBinary(filepath.Join(dir, "script.sh"))
	if b != nil || err != nil {
		t.Errorf("a shell script: %v, %v; want nil, nil", b, err)
	}
	if _, err := ReadGoBinary(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}
