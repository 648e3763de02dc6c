package main

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A name longer than NTFS holds (255 UTF-16 units), which no Linux file
// has but a destination may give, is refused at the line of the
// placement that names it, and no output is written; before, the layer
// was written and hcsshim's importer failed on it where it was pulled.
// A base whose layer holds one, which fails to import alike, is refused
// at the base's line, naming the layer and the entry.
func TestWindowsLongNamesRefused(t *testing.T) {
	d := t.TempDir()
	long := strings.Repeat("y", 252) + ".exe"
	writeFile(t, filepath.Join(d, "app"), "app\n")
	writeFile(t, filepath.Join(d, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: app, dest: /k/ok.exe}
      - {artifact: app, dest: /k/%s}
`, long))
	out := filepath.Join(d, "out")
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(d, "pallet.yaml"), "-o", "oci:"+out)
	for _, want := range []string{filepath.Join(d, "pallet.yaml") + ":12: ", "k/" + long + ": ", "is a name of 256 UTF-16 units, and NTFS holds at most 255"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to say %q", err, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("the failed build left %s: %v", out, err)
	}

	base := append(winBaseFirst(), &tar.Header{Name: "Files/app/" + long, Typeflag: tar.TypeReg})
	digests := windowsLayeredBase(t, filepath.Join(d, "base"), [][]byte{rawTar(t, base...)})
	writeFile(t, filepath.Join(d, "pallet.yaml"), winBaseRecipe)
	_, err = pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(d, "pallet.yaml"), "-o", "oci:"+out)
	for _, want := range []string{"pallet.yaml:8: image app (windows/amd64): base oci:base", fmt.Sprintf("base layer 1 (%s)", digests[0]), `entry "Files/app/yyyy`, "NTFS holds at most 255"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to say %q", err, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("the failed build left %s: %v", out, err)
	}
}
