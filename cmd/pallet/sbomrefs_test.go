package main

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// pallet sbom takes an image's reference as pallet inspect does: oci:DIR
// and oci:DIR:TAG, registry:REF and a bare REF are read; docker:FILE is
// read as an archive, which carries no SBOM, and said so, not looked up
// as a registry host named docker; a bare path is refused with the
// prefix it lacks, not looked up on Docker Hub.
func TestSBOMReferenceForms(t *testing.T) {
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
    platforms: [linux/amd64]
    files: [{artifact: app, dest: /usr/bin/app}]
`)
	lay, archive := filepath.Join(dir, "lay"), filepath.Join(dir, "app.tar")
	mustPallet(t, "build", "-q", "-f", recipe, "--sbom", "-o", "oci:"+lay, "-o", "docker:"+archive, "-o", "registry:"+reg.Host+"/sbom/app")

	for _, src := range []string{"oci:" + lay, "oci:" + lay + ":latest", "registry:" + reg.Host + "/sbom/app:latest", reg.Host + "/sbom/app:latest"} {
		if doc := mustPallet(t, "sbom", src); !strings.Contains(doc, `"spdxVersion": "SPDX-2.3"`) {
			t.Errorf("sbom %s: not an SPDX document:\n%.300s", src, doc)
		}
	}

	_, err := pallet(t, "sbom", "docker:"+archive)
	if err == nil || !strings.Contains(err.Error(), "docker:"+archive+" carries no SBOM or provenance") {
		t.Errorf("sbom docker:%s: want it said the archive carries no SBOM, got %v", archive, err)
	}
	missing := filepath.Join(dir, "missing.tar")
	_, err = pallet(t, "sbom", "docker:"+missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sbom docker:%s: want the missing file named, got %v", missing, err)
	}

	for src, want := range map[string]string{
		lay:             "did you mean oci:" + lay + "?",
		lay + ":latest": "did you mean oci:" + lay + ":latest?",
		archive:         "did you mean docker:" + archive + "?",
		"./missing/dir": "./missing/dir: no such file or directory",
	} {
		_, err := pallet(t, "sbom", src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sbom %s: want %q, got %v", src, want, err)
		}
	}
}
