package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/fixture"
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
	// A merged-/usr base with a sticky /tmp; var/run leads nowhere yet: a
	// placement through it makes /run.
	baseFiles := []fixture.File{
		{Name: "usr/", Dir: true, Mode: 0o755},
		{Name: "usr/bin/", Dir: true, Mode: 0o755},
		{Name: "usr/bin/sh", Content: "#!shell\n", Mode: 0o755},
		{Name: "usr/lib/", Dir: true, Mode: 0o755},
		{Name: "tmp/", Dir: true, Mode: 0o1777},
		{Name: "var/", Dir: true, Mode: 0o755},
		{Name: "bin", Link: "usr/bin"},
		{Name: "lib", Link: "/usr/lib"},
		{Name: "var/tmp", Link: "/tmp"},
		{Name: "var/run", Link: "/run"},
	}
	baseImg, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		&v1.ConfigFile{OS: "linux", Architecture: "amd64", RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if baseImg, err = mutate.AppendLayers(baseImg, static.NewLayer(fixture.Tar(baseFiles), types.OCIUncompressedLayer)); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.Write(filepath.Join(dir, "base"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(baseImg, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "latest"})); err != nil {
		t.Fatal(err)
	}
	reg := testregistry.Start(t, nil)
	baseRef, err := name.ParseReference(reg.Host + "/base:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(baseRef, baseImg); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	writeFile(t, filepath.Join(dir, "unit", "lib", "systemd", "system", "app.service"), "[Service]\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
args:
  BASE: oci:base
artifacts:
  app:
    local: {path: app}
    licenses: none
  unit:
    local: {path: unit}
    licenses: none
images:
  app:
    tags: [v1]
    base: "{{BASE}}"
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /bin/, mode: "0755"}
      - {artifact: unit, dest: /}
      - {artifact: app, dest: /var/tmp/}
      - {artifact: app, dest: /var/run/app/}
`)
	recipe := filepath.Join(dir, "pallet.yaml")

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
		for link, target := range map[string]string{"bin": "usr/bin", "lib": "/usr/lib", "var/tmp": "/tmp", "var/run": "/run"} {
			if got, err := os.Readlink(filepath.Join(rootfs, link)); err != nil || got != target {
				t.Errorf("base %s: /%s is no longer the base's link to %s: %q, %v", base, link, target, got, err)
			}
		}
		for _, f := range []string{"usr/bin/sh", "usr/bin/app", "usr/lib/systemd/system/app.service", "tmp/app", "run/app/app"} {
			if _, err := os.Stat(filepath.Join(rootfs, f)); err != nil {
				t.Errorf("base %s: %v", base, err)
			}
		}
		if info, err := os.Stat(filepath.Join(rootfs, "tmp")); err != nil || info.Mode()&(os.ModeSticky|os.ModePerm) != os.ModeSticky|0o777 {
			t.Errorf("base %s: /tmp lost its mode: %v, %v", base, info.Mode(), err)
		}
	}
	// The third build read the links from the cache, not the base: the
	// same image.
	if digests[0] != digests[2] {
		t.Errorf("builds on one base differ: %s and %s", digests[0], digests[2])
	}

	// A Dockerfile's COPY goes through the base's links too, and a file
	// copied without a trailing slash to a directory of the base, or to a
	// link to one, goes into it, as Docker copies it.
	writeFile(t, filepath.Join(dir, "note"), "note\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY note /bin\nCOPY app /usr/bin/\nCOPY app /bin/app2\nCOPY app /sbin\nCOPY note /tmp\nCOPY note /usr/lib\n")
	dout := filepath.Join(t.TempDir(), "dout")
	first := strings.TrimSpace(mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+dout))
	dbundle := filepath.Join(t.TempDir(), "dbundle")
	if b, err := exec.Command(umoci, "unpack", "--image", dout+":latest", dbundle).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, b)
	}
	drootfs := filepath.Join(dbundle, "rootfs")
	for _, f := range []string{"usr/bin/sh", "usr/bin/app", "usr/bin/app2", "usr/bin/note", "tmp/note", "usr/lib/note"} {
		if info, err := os.Lstat(filepath.Join(drootfs, f)); err != nil || !info.Mode().IsRegular() {
			t.Errorf("Dockerfile: /%s is not a file: %v", f, err)
		}
	}
	if got, err := os.Readlink(filepath.Join(drootfs, "bin")); err != nil || got != "usr/bin" {
		t.Errorf("Dockerfile: /bin is no longer the base's link: %q, %v", got, err)
	}
	if info, err := os.Stat(filepath.Join(drootfs, "tmp")); err != nil || info.Mode()&(os.ModeSticky|os.ModePerm) != os.ModeSticky|0o777 {
		t.Errorf("Dockerfile: /tmp lost its mode: %v, %v", info.Mode(), err)
	}
	// A name the base does not hold is the file's own.
	if info, err := os.Lstat(filepath.Join(drootfs, "sbin")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("Dockerfile: /sbin is not the copied file: %v", err)
	}
	// The record, and so the SBOM, say where the files went.
	rec := readFileString(t, dout+".record.json")
	for _, want := range []string{`"/bin/note"`, `"/tmp/note"`, `"/usr/lib/note"`, `"/sbin"`} {
		if !strings.Contains(rec, want) {
			t.Errorf("record: no placement at %s:\n%s", want, rec)
		}
	}
	// Built again from the cache's view of the base: the same image.
	if again := strings.TrimSpace(mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "dout2"))); again != first {
		t.Errorf("Dockerfile: built again, %s differs from %s", again, first)
	}

	// A layer that replaces the base's link, and a later one that goes
	// through it, are refused: the second would land under the base's
	// target while the image's /bin leads elsewhere (found by helper-44).
	writeFile(t, filepath.Join(dir, "optlink", "bin-to-opt"), "")
	if err := os.Remove(filepath.Join(dir, "optlink", "bin-to-opt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/opt", filepath.Join(dir, "optlink", "bin")); err != nil {
		t.Fatal(err)
	}
	relink := strings.Replace(readFileString(t, recipe), "  unit:\n", "  optlink:\n    local: {path: optlink, links: keep}\n    licenses: none\n  unit:\n", 1)
	relink = strings.Replace(relink, "      - {artifact: app, dest: /bin/, mode: \"0755\"}\n", "      - {artifact: optlink, dest: /}\n      - {artifact: app, dest: /bin/, mode: \"0755\"}\n", 1)
	relinked := filepath.Join(dir, "relink.yaml")
	writeFile(t, relinked, relink)
	_, err = pallet(t, "build", "-q", "-f", relinked, "--image", "app", "-o", "oci:"+filepath.Join(dir, "y"))
	if err == nil || !strings.Contains(err.Error(), "/bin is a symlink in layer") {
		t.Errorf("a layer through a link an earlier one replaced: %v", err)
	}

	// One file placed at two names for one path is refused, and said
	// (here, in two layers).
	writeFile(t, recipe, strings.Replace(readFileString(t, recipe), "      - {artifact: unit, dest: /}\n",
		"      - {artifact: unit, dest: /}\n      - {artifact: app, dest: /usr/bin/app}\n", 1))
	_, err = pallet(t, "build", "-q", "-f", recipe, "--image", "app", "-o", "oci:"+filepath.Join(dir, "x"))
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
