package golicenses

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// maxModulesTxt bounds vendor/modules.txt: one line per vendored package,
// a few MiB for the largest trees (Kubernetes: under 1 MiB).
const maxModulesTxt = 16 << 20

// vendorEntry is a module as vendor/modules.txt lists it.
type vendorEntry struct {
	version            string
	replPath, replVers string
}

// loadVendor reads the source directory's vendor/modules.txt, if any.
func (c *collector) loadVendor() error {
	if c.opt.SourceDir == "" {
		return nil
	}
	p := filepath.Join(c.opt.SourceDir, "vendor", "modules.txt")
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("vendor: %w", err)
	}
	defer f.Close()
	data, err := bounded.ReadAll(f, maxModulesTxt)
	if err != nil {
		return fmt.Errorf("vendor: %s: %w", p, err)
	}
	c.vendor = parseModulesTxt(string(data))
	return nil
}

// parseModulesTxt reads the module lines of vendor/modules.txt:
// "# path version", "# path version => new [version]", and the
// replacement-only "# path => new [version]" lines (skipped: they name no
// version the build used).
func parseModulesTxt(text string) map[string]vendorEntry {
	out := map[string]vendorEntry{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, "# ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] == "=>" {
			continue
		}
		e := vendorEntry{version: f[1]}
		if len(f) >= 4 && f[2] == "=>" {
			e.replPath = f[3]
			if len(f) >= 5 {
				e.replVers = f[4]
			}
		}
		out[f[0]] = e
	}
	return out
}

// fromVendor reads a module's files from the vendor directory when
// modules.txt lists the very version (and replacement) the binary links.
// go mod vendor copies the licence files of every directory from a
// vendored package up to its module's root, so the root's are there.
func (c *collector) fromVendor(r modRef) (found, bool, error) {
	e, ok := c.vendor[r.Path]
	if !ok || e.version != r.Version {
		return found{}, false, nil
	}
	if r.Replaced != (e.replPath != "") || (r.Replaced && (e.replPath != r.From.Path || e.replVers != r.From.Version)) {
		return found{}, false, nil
	}
	dir := filepath.Join(c.opt.SourceDir, "vendor", filepath.FromSlash(r.Path))
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return found{}, false, nil
	}
	// A vendored module nested in this one's path is a directory of its own.
	inner := func(rel string) bool { _, ok := c.vendor[r.Path+"/"+rel]; return ok }
	files, err := readDirLicenses(dir, r.ref(), c.opt, inner)
	return found{source: FromVendor, files: files}, true, err
}
