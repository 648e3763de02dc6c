package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const antreaModule = "example.com/antrea/v2"

// gomodFilesRecipe places hack/windows of the module on a Windows image,
// taken by the module's pin, as Antrea's Install-OVS.ps1 is.
const gomodFilesRecipe = `version: 1
artifacts:
  scripts:
    version: 2.4.0
    gomod:
      module: ` + antreaModule + `
      version: v{{version}}
      sum: SUM
      path: hack/windows
images:
  agent:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: scripts, dest: /k/antrea/}
`

// A gomod section with a path takes those files of the module version as
// the proxy serves them, proved by the sum: the layer holds them, the
// record says which module, sum and path, the licence is the module's, a
// second build is the cache's, an offline one the mirror's; a wrong sum stops the build before
// anything is placed, and a path not in the module is said at its line
// with what is near it.
func TestGomodFilesBuild(t *testing.T) {
	sum, zips := serveModule(t, antreaModule, "v2.4.0", nil, map[string]string{
		"go.mod":                       "module " + antreaModule + "\n\ngo 1.22\n",
		"LICENSE":                      "Apache License\nVersion 2.0, January 2004\n",
		"cmd/antrea-agent/main.go":     "package main\n\nfunc main() {}\n",
		"hack/windows/Install-OVS.ps1": "Write-Host ovs\n",
		"hack/windows/Helper.psm1":     "# helper\n",
		"hack/linux/install.sh":        "#!/bin/sh\n",
	})
	recipe := filepath.Join(t.TempDir(), "pallet.yaml")
	writeFile(t, recipe, strings.Replace(gomodFilesRecipe, "SUM", sum, 1))
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+out)

	files := readImageFiles(t, out, "windows/amd64")
	if got := files["Files/k/antrea/Install-OVS.ps1"]; !strings.HasPrefix(got, "Write-Host ovs\n") {
		t.Errorf("Install-OVS.ps1 %q in %v", got, slices.Sorted(maps.Keys(files)))
	}
	if got := files["Files/k/antrea/Helper.psm1"]; !strings.HasPrefix(got, "# helper\n") {
		t.Errorf("Helper.psm1 %q", got)
	}
	for name := range files {
		if strings.Contains(name, "install.sh") || strings.Contains(name, "main.go") {
			t.Errorf("the image holds %s, not under hack/windows", name)
		}
	}
	if got := files["Files/LICENSES/scripts/LICENSE"]; !strings.HasPrefix(got, "Apache License\n") {
		t.Errorf("licence %q", got)
	}
	rec := readRecord(t, out+".record.json")
	if len(rec.Artifacts) != 1 {
		t.Fatalf("records %+v", rec.Artifacts)
	}
	if a := rec.Artifacts[0]; a.Kind != "gomod-files" || a.Module != antreaModule+"@v2.4.0" || a.SHA256 != sum || a.InModule != "hack/windows" || a.Repo != "" || a.URL != "" {
		t.Errorf("record %+v", a.Record)
	}

	// Again, with the same cache: nothing is downloaded.
	served := zips.Load()
	log := mustPallet(t, "build", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "again"))
	if !strings.Contains(log, "artifact scripts (windows/amd64)") || !strings.Contains(log, "cached") {
		t.Errorf("the second build does not say it took the files from the cache:\n%s", log)
	}
	if n := zips.Load(); n != served {
		t.Errorf("the second build fetched %d zips", n-served)
	}

	// pallet fetch mirrors the module; an offline build with a module
	// cache and a pallet cache of its own takes the files from there.
	mirror := t.TempDir()
	mustPallet(t, "fetch", "-q", "-f", recipe, "--mirror", mirror)
	t.Setenv("GOMODCACHE", t.TempDir())
	served = zips.Load()
	offline := filepath.Join(t.TempDir(), "offline")
	mustPallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "--offline", "--mirror", mirror, "-o", "oci:"+offline)
	if got := readImageFiles(t, offline, "windows/amd64")["Files/k/antrea/Install-OVS.ps1"]; !strings.HasPrefix(got, "Write-Host ovs\n") || zips.Load() != served {
		t.Errorf("offline: Install-OVS.ps1 %q, %d zips fetched", got, zips.Load()-served)
	}

	// A pin the module does not match: nothing placed, no output, an
	// error naming the module and both hashes.
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	writeFile(t, recipe, strings.Replace(gomodFilesRecipe, "SUM", wrong, 1))
	bad := filepath.Join(t.TempDir(), "out")
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+bad)
	if err == nil {
		t.Fatal("a wrong go.sum hash was accepted")
	}
	for _, want := range []string{antreaModule + "@v2.4.0", wrong, sum, "mismatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("output written by a build with a wrong pin")
	}

	// A path the module does not hold: at its line, with the names near it.
	writeFile(t, recipe, strings.Replace(strings.Replace(gomodFilesRecipe, "SUM", sum, 1), "path: hack/windows", "path: hack/windws", 1))
	_, err = pallet(t, "build", "-q", "-f", recipe, "--cache-dir", cache, "-o", "oci:"+filepath.Join(t.TempDir(), "o3"))
	if err == nil || !strings.Contains(err.Error(), recipe+":9") || !strings.Contains(err.Error(), "no file or directory hack/windws in that module version (nearest: hack/windows, hack/linux)") {
		t.Errorf("a path not in the module: %v", err)
	}
}
