package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Bases that differ only in a directory's descriptor the layer does not
// list (System32, where the files go to C:\app) share one layer: the
// per-base layers are for directories the layer lists again.
func TestReview184WindowsBasesApartOnlyElsewhereShareLayer(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "app.dll"), "MZ\n")
	writeSDBase(t, filepath.Join(dir, "ltsc2019"), sdBaseImage(t, sdWindows, sdSystem32, 0x10, "10.0.17763.6054"))
	writeSDBase(t, filepath.Join(dir, "ltsc2022"), sdBaseImage(t, sdWindows, sdOther, 0x2010, "10.0.20348.2582"))
	recipe := strings.Replace(fmt.Sprintf(sdRecipe, "[oci:ltsc2019, oci:ltsc2022]"), "dest: /Windows/System32/", "dest: /app/", 1)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), recipe)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	imgs := windowsImages(t, out)
	if len(imgs) != 2 {
		t.Fatalf("%d Windows images, want 2", len(imgs))
	}
	a, b := digestOf(t, topLayer(t, imgs[0])), digestOf(t, topLayer(t, imgs[1]))
	if a != b {
		t.Errorf("the layer is %s on one base and %s on the other, which differ only in System32, which it does not list", a, b)
	}
	if _, ok := winDirRecords(t, topLayer(t, imgs[0]))["Files/Windows/System32"]; ok {
		t.Error("the layer lists System32")
	}
}
