package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// pallet sbom reads back the documents --attest-index attaches in the
// index, as BuildKit does, from a layout and a registry, each byte for
// byte the file --sbom-dir writes: it looked for OCI 1.1 referrers only,
// and said the image had none attached.
func TestSBOMReadsAttestationManifests(t *testing.T) {
	reg := testregistry.Start(t, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  f: {local: {path: ./f.txt}, licenses: none}
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: f, dest: /f.txt}
`)
	out := filepath.Join(t.TempDir(), "out")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", recipe, "--no-cache", "--sbom", "--provenance", "--attest-index", "--sbom-dir", docs,
		"-o", "oci:"+out, "-o", "registry:"+reg.Host+"/att/app")
	files := map[string]string{"spdx-json": "sbom.spdx.json", "cyclonedx-json": "sbom.cdx.json", "provenance": "provenance.intoto.json"}
	for _, src := range []string{"oci:" + out, "oci:" + out + ":latest", reg.Host + "/att/app:latest"} {
		for _, p := range []string{"linux/amd64", "linux/arm64"} {
			for format, file := range files {
				want, err := os.ReadFile(filepath.Join(docs, "app_"+strings.ReplaceAll(p, "/", "-")+"."+file))
				if err != nil {
					t.Fatal(err)
				}
				got, err := pallet(t, "sbom", src, "--platform", p, "--format", format)
				if err != nil {
					t.Errorf("pallet sbom %s --platform %s --format %s: %v", src, p, format, err)
					continue
				}
				if got != string(want) {
					t.Errorf("pallet sbom %s --platform %s --format %s printed %.300s\nwant the file --sbom-dir wrote, %.300s", src, p, format, got, want)
				}
			}
		}
	}
}
