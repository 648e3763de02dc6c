package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// syftVersion is the SBOM tool that reads pallet's documents from outside.
const syftVersion = "github.com/anchore/syft/cmd/syft@v1.57.2"

// Syft, a scanner that knows nothing of pallet, reads both SBOMs (converts
// each into the other format, keeping every Go module), and finds by its
// own scan of the image no Go module the SBOM leaves out.
func TestSyftReadsSBOMs(t *testing.T) {
	syft := goTool(t, syftVersion, "syft")
	docs := filepath.Join(t.TempDir(), "docs")
	_, out := buildPalletImage(t, "--sbom", "--sbom-dir", docs)
	dir := t.TempDir()

	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(syft, args...)
		// No update check, no configuration from the machine.
		cmd.Env = append(os.Environ(), "SYFT_CHECK_FOR_APP_UPDATE=false", "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("syft %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	spdxFile := filepath.Join(docs, "pallet_linux-amd64.sbom.spdx.json")
	cdxFile := filepath.Join(docs, "pallet_linux-amd64.sbom.cdx.json")
	mods := spdxGoModules(t, spdxFile)
	if len(mods) < 20 {
		t.Fatalf("pallet's SPDX lists %d Go modules of pallet; want every module it links", len(mods))
	}

	// Each format, read by syft and written as the other, keeps every
	// module.
	run("convert", spdxFile, "-o", "cyclonedx-json="+filepath.Join(dir, "from-spdx.cdx.json"))
	run("convert", cdxFile, "-o", "spdx-json="+filepath.Join(dir, "from-cdx.spdx.json"))
	if missing := missingFrom(mods, cdxGoModules(t, filepath.Join(dir, "from-spdx.cdx.json"))); len(missing) > 0 {
		t.Errorf("syft's CycloneDX from pallet's SPDX lacks %v", missing)
	}
	if missing := missingFrom(mods, spdxGoModules(t, filepath.Join(dir, "from-cdx.spdx.json"))); len(missing) > 0 {
		t.Errorf("syft's SPDX from pallet's CycloneDX lacks %v", missing)
	}

	// syft's own scan of the layout: every Go module it finds in the
	// binary's build info is in pallet's SBOM.
	run("scan", "oci-dir:"+out, "-o", "cyclonedx-json="+filepath.Join(dir, "scan.cdx.json"))
	scanned := cdxGoModules(t, filepath.Join(dir, "scan.cdx.json"))
	if len(scanned) < 20 {
		t.Fatalf("syft found %d Go modules in the image; the check needs them found", len(scanned))
	}
	if missing := missingFrom(scanned, mods); len(missing) > 0 {
		t.Errorf("syft finds in the image Go modules pallet's SBOM does not list: %v", missing)
	}
	t.Logf("pallet's SBOM: %d Go packages; syft's scan: %d", len(mods), len(scanned))
}

// spdxGoModules lists the pkg:golang purls (without qualifiers) of an SPDX
// JSON document's packages.
func spdxGoModules(t *testing.T, file string) map[string]bool {
	t.Helper()
	var doc struct {
		Packages []struct {
			ExternalRefs []struct {
				ReferenceType    string `json:"referenceType"`
				ReferenceLocator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
	}
	readJSON(t, file, &doc)
	out := map[string]bool{}
	for _, p := range doc.Packages {
		for _, r := range p.ExternalRefs {
			if r.ReferenceType == "purl" {
				addGoPurl(out, r.ReferenceLocator)
			}
		}
	}
	return out
}

// cdxGoModules lists the pkg:golang purls of a CycloneDX JSON BOM's
// components, nested ones included.
func cdxGoModules(t *testing.T, file string) map[string]bool {
	t.Helper()
	type component struct {
		Purl       string      `json:"purl"`
		Components []component `json:"components"`
	}
	var bom struct {
		Components []component `json:"components"`
	}
	readJSON(t, file, &bom)
	out := map[string]bool{}
	var walk func([]component)
	walk = func(cs []component) {
		for _, c := range cs {
			addGoPurl(out, c.Purl)
			walk(c.Components)
		}
	}
	walk(bom.Components)
	return out
}

// addGoPurl adds a versioned pkg:golang purl, without its qualifiers; the
// main module of a build from a directory has no version to compare.
func addGoPurl(set map[string]bool, purl string) {
	p, _, _ := strings.Cut(purl, "?")
	p, _, _ = strings.Cut(p, "#")
	if strings.HasPrefix(p, "pkg:golang/") && strings.Contains(p, "@") && !strings.HasSuffix(p, "@(devel)") {
		set[p] = true
	}
}

func missingFrom(want, got map[string]bool) []string {
	var out []string
	for p := range want {
		if !got[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
