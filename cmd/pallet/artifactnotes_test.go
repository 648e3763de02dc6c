package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// An artifact's notes are said once all the platforms it is fetched for
// are checked, whichever images and placements ask for it: one placed on
// some of an image's platforms only, and used by two images of other
// platform sets, is warned of once, naming the platforms it is placed on
// and no other. A platform that fails ends the build with its own error,
// the others' notes left unsaid, and nothing waits for it.
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
		"artifact f (linux/amd64 and linux/arm64, local mode): no licence file found",
		"artifact g (linux/amd64, linux/arm64 and linux/s390x, local mode): no licence file found",
	} {
		if n := strings.Count(log, want); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", want, n, log)
		}
	}
	if n := strings.Count(log, "no licence file found"); n != 2 {
		t.Errorf("%d licence warnings, want 2:\n%s", n, log)
	}

	// g has no files for s390x: that platform fails, and the build with it.
	writeFile(t, filepath.Join(dir, "g", "amd64", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "g", "arm64", "g"), "g\n")
	writeFile(t, recipe, strings.Replace(readFileString(t, recipe), "local: {path: g}", `local: {path: "g/{{arch}}"}`, 1))
	_, err = pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out2"))
	if err == nil || !strings.Contains(err.Error(), "s390x") {
		t.Fatalf("want the s390x platform's failure, got %v", err)
	}
}
