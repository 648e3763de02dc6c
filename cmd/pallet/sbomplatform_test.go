package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// pallet sbom --platform names the platform whose document is printed: of
// a single-platform image it is refused for another platform, not answered
// with the one image's document, in a layout and in a registry (where the
// manifest's descriptor names no platform and the config says it); of an
// index, a platform it lacks or no --platform among several is said with
// the platforms it has.
func TestSBOMPlatformAsked(t *testing.T) {
	reg := testregistry.Start(t, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  app: {local: {path: app}, licenses: none}
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files: [{artifact: app, dest: /usr/bin/app}]
`)
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	mustPallet(t, "build", "-q", "-f", recipe, "--sbom", "--platform", "linux/amd64", "-o", "oci:"+one, "-o", "registry:"+reg.Host+"/sbom/one")
	mustPallet(t, "build", "-q", "-f", recipe, "--sbom", "-o", "oci:"+two, "-o", "registry:"+reg.Host+"/sbom/two")

	for _, src := range []string{"oci:" + one, reg.Host + "/sbom/one:latest"} {
		if doc := mustPallet(t, "sbom", "--platform", "linux/amd64", src); !strings.Contains(doc, `"name": "app (linux/amd64)"`) {
			t.Errorf("sbom --platform linux/amd64 %s: not the amd64 image's SBOM:\n%.300s", src, doc)
		}
		doc, err := pallet(t, "sbom", "--platform", "linux/arm64", src)
		if err == nil || !strings.Contains(err.Error(), "no image for linux/arm64") || !strings.Contains(err.Error(), "linux/amd64") {
			t.Errorf("sbom --platform linux/arm64 %s of an amd64 image: want an error naming both platforms, got %v:\n%.300s", src, err, doc)
		}
	}
	for _, src := range []string{"oci:" + two, reg.Host + "/sbom/two:latest"} {
		_, err := pallet(t, "sbom", "--platform", "linux/s390x", src)
		if err == nil || !strings.Contains(err.Error(), "no image for linux/s390x (it has linux/amd64, linux/arm64)") {
			t.Errorf("sbom --platform linux/s390x %s: want an error naming the platforms it has, got %v", src, err)
		}
		_, err = pallet(t, "sbom", src)
		if err == nil || !strings.Contains(err.Error(), "2 images (linux/amd64, linux/arm64); name one with --platform") {
			t.Errorf("sbom %s of two platforms: want an error naming them, got %v", src, err)
		}
		// A slip in the flag is said as the flag's, as build says it.
		_, err = pallet(t, "sbom", "--platform", "linux/aarch64", src)
		if err == nil || !strings.HasPrefix(err.Error(), "--platform: unknown platform \"linux/aarch64\" (did you mean linux/arm64?)") {
			t.Errorf("sbom --platform linux/aarch64 %s: want the flag named with the suggestion, got %v", src, err)
		}
	}
}
