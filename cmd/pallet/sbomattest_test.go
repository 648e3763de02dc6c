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

// An index of one Windows platform rebased on several Windows versions
// (a recipe's base list) holds an image per os.version: pallet sbom
// --platform names one as windows/amd64:OSVERSION, as crane and
// containerd name it, and says so when it is not given; --platform
// windows/amd64 matched both, and nothing told them apart.
func TestSBOMOfOneWindowsVersion(t *testing.T) {
	dir := t.TempDir()
	windowsBase(t, filepath.Join(dir, "ltsc2019"), "10.0.17763.6054")
	windowsBase(t, filepath.Join(dir, "ltsc2022"), "10.0.20348.2582")
	writeFile(t, filepath.Join(dir, "f.txt"), "f\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  f: {local: {path: ./f.txt}, licenses: none}
images:
  app:
    base: {linux: scratch, windows: [oci:ltsc2019, oci:ltsc2022]}
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: f, dest: /app/}
`)
	out := filepath.Join(t.TempDir(), "out")
	docs := filepath.Join(t.TempDir(), "docs")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "--sbom=spdx", "--sbom-dir", docs, "-o", "oci:"+out)
	idx, err := layoutIndexAt(t, out, layoutIndex(t, out).Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	versions := 0
	for _, d := range idx.Manifests {
		if d.Platform == nil || d.Platform.OSVersion == "" {
			continue
		}
		versions++
		want, err := os.ReadFile(filepath.Join(docs, "app_windows-amd64_"+d.Digest.Hex[:12]+".sbom.spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		p := "windows/amd64:" + d.Platform.OSVersion
		if got := mustPallet(t, "sbom", "oci:"+out, "--platform", p); got != string(want) {
			t.Errorf("pallet sbom --platform %s printed %.200s\nwant the image %s's, %.200s", p, got, d.Digest, want)
		}
	}
	if versions != 2 {
		t.Fatalf("the index holds %d images with an os.version, want 2", versions)
	}
	_, err = pallet(t, "sbom", "oci:"+out, "--platform", "windows/amd64")
	if want := "has 2 images for windows/amd64, one per os.version (linux/amd64, windows/amd64:10.0.17763.6054, windows/amd64:10.0.20348.2582); name one with --platform windows/amd64:OSVERSION"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--platform windows/amd64: %v, want an error saying %q", err, want)
	}
	_, err = pallet(t, "sbom", "oci:"+out, "--platform", "windows/amd64:10.0.26100.1")
	if want := "has no image for windows/amd64:10.0.26100.1"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("another version: %v, want an error saying %q", err, want)
	}
}
