package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// On a merged-/usr base (/bin a link to usr/bin, /lib to /usr/lib), what
// is placed at /bin/ or under /lib/ lands where the links lead, as
// Docker's COPY puts it: a layer holding a bin/ directory would replace
// the base's link, and the container would have a /bin with the new file
// alone, and no shell. umoci, an outside importer, unpacks the image.
func TestPlacedThroughBaseLinks(t *testing.T) {
	umoci := needTool(t, "umoci")
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	writeFile(t, filepath.Join(root, "usr", "bin", "sh"), "#!shell\n")
	if err := os.MkdirAll(filepath.Join(root, "usr", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"bin": "usr/bin", "lib": "/usr/lib"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	writeFile(t, filepath.Join(dir, "unit", "lib", "systemd", "system", "app.service"), "[Service]\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
args:
  BASE: oci:base
artifacts:
  root:
    local: {path: root, links: keep}
    licenses: none
  app:
    local: {path: app}
    licenses: none
  unit:
    local: {path: unit}
    licenses: none
images:
  base:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: root, dest: /}
  app:
    tags: [v1]
    base: "{{BASE}}"
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /bin/, mode: "0755"}
      - {artifact: unit, dest: /}
`)
	recipe := filepath.Join(dir, "pallet.yaml")
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "base", "-o", "oci:"+filepath.Join(dir, "base"))
	reg := testregistry.Start(t, nil)
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "base", "-o", "registry:"+reg.Host+"/base:v1")

	cache := filepath.Join(dir, "cache")
	var digests []string
	for _, base := range []string{"oci:base", reg.Host + "/base:v1", "oci:base"} {
		out := filepath.Join(t.TempDir(), "out")
		digests = append(digests, strings.TrimSpace(mustPallet(t, "build", "-q", "-f", recipe, "--image", "app",
			"--arg", "BASE="+base, "--cache-dir", cache, "-o", "oci:"+out)))
		bundle := filepath.Join(t.TempDir(), "bundle")
		if b, err := exec.Command(umoci, "unpack", "--image", out+":v1", bundle).CombinedOutput(); err != nil {
			t.Fatalf("umoci unpack: %v\n%s", err, b)
		}
		rootfs := filepath.Join(bundle, "rootfs")
		for link, target := range map[string]string{"bin": "usr/bin", "lib": "/usr/lib"} {
			if got, err := os.Readlink(filepath.Join(rootfs, link)); err != nil || got != target {
				t.Errorf("base %s: /%s is no longer the base's link to %s: %q, %v", base, link, target, got, err)
			}
		}
		for _, f := range []string{"usr/bin/sh", "usr/bin/app", "usr/lib/systemd/system/app.service"} {
			if _, err := os.Stat(filepath.Join(rootfs, f)); err != nil {
				t.Errorf("base %s: %v", base, err)
			}
		}
	}
	// The third build read the links from the cache, not the base: the
	// same image.
	if digests[0] != digests[2] {
		t.Errorf("builds on one base differ: %s and %s", digests[0], digests[2])
	}

	// One file placed at two names for one path is refused, and said
	// (here, in two layers).
	writeFile(t, recipe, strings.Replace(readFileString(t, recipe), "      - {artifact: unit, dest: /}\n",
		"      - {artifact: unit, dest: /}\n      - {artifact: app, dest: /usr/bin/app}\n", 1))
	_, err := pallet(t, "build", "-q", "-f", recipe, "--image", "app", "-o", "oci:"+filepath.Join(dir, "x"))
	if err == nil || !strings.Contains(err.Error(), "/usr/bin/app is placed by layer") || !strings.Contains(err.Error(), "pallet.yaml:") {
		t.Errorf("two names for one path: %v", err)
	}
}

func readFileString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
