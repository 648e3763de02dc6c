package build

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/golicenses"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// cLicenses ships, beside the modules' licences, the copyright files of
// the Debian packages owning the C libraries the artifact's cgo binaries
// contain (found by its build, kept with its result: artifact.CLicenses),
// under /LICENSES/<artifact>/debian/<package>/, and records them on each
// Go binary placed, with the licences a machine-readable copyright file
// declares. A library no package owns, or whose package has no copyright
// file, is a warning naming it, or an error with --require-licenses, as a
// module without a licence is.
func (b *builder) cLicenses(pa *plan.Artifact, res *artifact.Result, a *record.Artifact) error {
	linked := a.CLinked
	a.CLinked = nil // said per binary below
	if len(linked) == 0 {
		return nil
	}
	merged := tree.New()
	for _, e := range res.Licenses.Entries() {
		if err := merged.Add(e); err != nil {
			return err
		}
	}
	named := map[string][]string{} // copyright path -> SPDX ids
	var missing []string
	for i := range a.GoBinaries {
		gb := &a.GoBinaries[i]
		j := slices.IndexFunc(linked, func(c clibs.Binary) bool { return c.Path == gb.Path })
		if j < 0 {
			continue
		}
		c := linked[j]
		gb.Static, gb.Needed = c.Static, c.Needed
		for _, l := range c.Libraries {
			switch {
			case l.InModule:
				// Under the module's licence, shipped with the module's.
			case l.File == "":
				missing = append(missing, fmt.Sprintf("%s (in %s) is not where the linker looks, as pallet finds it", l.Flag, gb.Path))
			case l.Package.Name == "":
				missing = append(missing, fmt.Sprintf("%s (%s, in %s) is owned by no Debian package", l.File, l.Flag, gb.Path))
			case l.Copyright == "":
				missing = append(missing, fmt.Sprintf("%s (%s, in %s): its package %s has no copyright file", l.File, l.Flag, gb.Path, l.Package.Name))
			default:
				e, ok := res.CLicenses.Get(l.Copyright)
				if !ok || e.Kind != tree.File {
					return fmt.Errorf("%s: the copyright file of %s, %s, is not in its result", &pa.Request, l.Package.Name, l.Copyright)
				}
				ids, ok := named[l.Copyright]
				if !ok {
					text, err := bounded.ReadFile(e.Source, clibs.MaxCopyright)
					if err != nil {
						return fmt.Errorf("%s: %w", l.Copyright, err)
					}
					ids = debianLicenses(text)
					named[l.Copyright] = ids
				}
				l.Licenses = ids
				if _, dup := merged.Get(e.Path); !dup {
					if err := merged.Add(*e); err != nil {
						return err
					}
				}
			}
			gb.CLibraries = append(gb.CLibraries, l)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s: cgo links C libraries whose licence is not known: %s", &pa.Request, strings.Join(missing, "; "))
		if pa.Pos.Line > 0 {
			msg = pa.Pos.String() + ": " + msg
		}
		if b.opt.RequireLicenses {
			return errors.New(msg + "; licences are required")
		}
		b.opt.Progress.Warn("%s", msg)
	}
	res.Licenses = merged
	return nil
}

// debianLicenses are the SPDX identifiers (or expressions, parenthesised)
// of the licences a machine-readable Debian copyright file declares,
// sorted; none when it is free-form (glibc's, gcc's), whose licences the
// SBOMs then do not assert.
func debianLicenses(text []byte) []string {
	exprs, ok := clibs.DEP5Licenses(text)
	if !ok {
		return nil
	}
	var ids []string
	for _, e := range exprs {
		if id := golicenses.DebianLicense(e); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
