package record

import (
	"path"
	"strings"
)

// PlacesPath says whether a placement that takes the artifact's path from
// (clean; "" for the whole artifact) places the artifact's file p: the
// file itself, or one below it.
func PlacesPath(from, p string) bool {
	return from == "" || p == from || strings.HasPrefix(p, from+"/")
}

// LicenceKept says which of the artifact's licence files, by path under
// /LICENSES/<artifact>/, a placement that takes the artifact's path from
// ships; nil when all of them. The artifact's licences are those of
// every Go binary the build places in any image; a placement of one
// (host-local.exe alone, in Antrea's image) leaves out the modules only
// the others link (Go modules and C libraries), and the Go toolchain's licence if none it places was
// built by that toolchain, though another image of the build places
// them: an image must not depend on what else is built with it.
func (a *Artifact) LicenceKept(from string) func(p string) bool {
	if from == "" {
		return nil
	}
	// Licence directories, by the module (or Go toolchain, std@version)
	// whose files they hold: all, and whether a binary placed needs them.
	placed := map[string]bool{}
	for _, gb := range a.GoBinaries {
		in := PlacesPath(from, gb.Path)
		var dirs []string
		for _, m := range gb.Modules {
			dirs = append(dirs, m.Path)
		}
		if gb.GoLicense != "" {
			dirs = append(dirs, path.Dir(gb.GoLicense))
		}
		for _, l := range gb.CLibraries {
			if l.Copyright != "" {
				dirs = append(dirs, path.Dir(l.Copyright))
			}
		}
		for _, d := range dirs {
			placed[d] = placed[d] || in
		}
	}
	dropped := false
	for _, in := range placed {
		dropped = dropped || !in
	}
	if !dropped {
		return nil
	}
	return func(p string) bool {
		// The longest directory p is in: a module nested in another
		// (go.opentelemetry.io/otel/trace in go.opentelemetry.io/otel)
		// has its licences in its own, which the go command leaves out
		// of the outer module's. Not in any: the artifact's own.
		for d := p; d != "." && d != "/"; d = path.Dir(d) {
			if in, ok := placed[d]; ok {
				return in
			}
		}
		return true
	}
}
