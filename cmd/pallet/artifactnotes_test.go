package main

import (
	"archive/tar"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An artifact's notes are said once all the platforms it is fetched for
// are checked, whichever images and placements ask for it: one placed on
// some of an image's platforms only, and used by two images of other
// platform sets, is warned of once, naming the platforms it is placed on
// and no other. A platform that fails ends the build with its own error,
// nothing waiting for it, and the notes of the platforms checked before
// it are said, naming them: they were left unsaid.
func TestArtifactNotesAcrossImages(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "g", "g"), "g\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  f:
    local: {path: f}
  g:
    local: {path: g}
images:
  one:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: f, dest: /etc/}
  two:
    base: scratch
    platforms: [linux/s390x, linux/arm64, linux/amd64]
    files:
      - {artifact: f, dest: /etc/, platforms: [linux/arm64, linux/amd64]}
      - {artifact: g, dest: /opt/}
`)
	log, err := pallet(t, "build", "--progress", "plain", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"artifact f (linux/amd64 and linux/arm64, local): no licence file found",
		"artifact g (linux/amd64, linux/arm64 and linux/s390x, local): no licence file found",
	} {
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", want, n, log)
		}
	}
	if n := strings.Count(log, "no licence file found"); n != 2 {
		t.Errorf("%d licence warnings, want 2:\n%s", n, log)
	}

	// g has no files for s390x: that platform fails, and the build with
	// it. One at a time, it is g's last (the artifacts go in the order
	// of name@platform), so the others are checked before it.
	writeFile(t, filepath.Join(dir, "g", "amd64", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "g", "arm64", "g"), "g\n")
	writeFile(t, recipe, strings.Replace(readFileString(t, recipe), "local: {path: g}", `local: {path: "g/{{arch}}"}`, 1))
	log, err = pallet(t, "build", "--jobs", "1", "--progress", "plain", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out2"))
	if err == nil || !strings.Contains(err.Error(), "s390x") {
		t.Fatalf("want the s390x platform's failure, got %v", err)
	}
	for _, want := range []string{
		"artifact f (linux/amd64 and linux/arm64, local): no licence file found",
		"artifact g (linux/amd64 and linux/arm64, local): no licence file found",
	} {
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", want, n, log)
		}
	}
	if n := strings.Count(log, "no licence file found"); n != 2 {
		t.Errorf("%d licence warnings, want 2:\n%s", n, log)
	}
}

// The archive entries left out on the platforms of an artifact that were
// checked before another failed are warned of, naming those platforms,
// as the build ends with the failure: they were not said, as the
// platforms were never all checked.
func TestArchiveSkippedWarnedOnFailure(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		writeFile(t, filepath.Join(dir, "r-"+arch+".tar"), string(rawTar(t,
			&tar.Header{Name: "bin/app", Typeflag: tar.TypeReg, Mode: 0o755},
			&tar.Header{Name: "run/initctl", Typeflag: tar.TypeFifo, Mode: 0o600},
		)))
	}
	recipe := perArchRecipe(t, dir)
	// No r-riscv64.tar: that platform fails, the last of the three when
	// they go one at a time.
	log, err := pallet(t, "build", "--jobs", "1", "--progress", "plain", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if err == nil || !strings.Contains(err.Error(), "r-riscv64.tar") {
		t.Fatalf("want the riscv64 platform's failure, got %v\n%s", err, log)
	}
	var got []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "does not place") {
			got = append(got, l)
		}
	}
	want := []string{"warning: " + recipe + ":4:5: artifact r (linux/amd64 and linux/arm64, local): the archive holds 1 entry pallet does not place, which the image will not have: run/initctl (named pipe)"}
	if !slices.Equal(got, want) {
		t.Errorf("the build warned\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// perArchRecipe writes into dir a recipe extracting ./r-ARCH.tar onto
// scratch for linux/riscv64, linux/arm64 and linux/amd64, in that order,
// and gives its path.
func perArchRecipe(t *testing.T, dir string) string {
	t.Helper()
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  r:
    local: {path: "./r-{{arch}}.tar", extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/riscv64, linux/arm64, linux/amd64]
    files:
      - {artifact: r, dest: /}
`)
	return recipe
}
