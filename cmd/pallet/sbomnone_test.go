package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// pallet sbom of an image built without --sbom or --provenance says
// which flag attaches the document asked for, where it said only that
// the image had none, as if one had been lost.
func TestSBOMOfImageBuiltWithoutOneSaysHow(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", "x\n"), "--no-cache", "-o", "oci:"+out)
	for format, flag := range map[string]string{"spdx-json": "--sbom", "cyclonedx-json": "--sbom=cyclonedx", "provenance": "--provenance"} {
		_, _, err := palletOut(t, "sbom", "oci:"+out, "--format", format)
		if err == nil || !strings.Contains(err.Error(), "attached (pallet build "+flag+" attaches one") {
			t.Errorf("sbom --format %s: %v; want it to name %s", format, err, flag)
		}
	}
}
