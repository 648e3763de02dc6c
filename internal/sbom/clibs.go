package sbom

import (
	"path"
	"slices"
	"strings"
)

// debNode is a Debian package of the build machine owning C libraries a
// cgo binary contains (record.GoBinary.CLibraries).
type debNode struct {
	id                      string
	name, arch, version, os string
	distro                  string
	// source is the package's source package, "name" or
	// "name@version" where its version is not the package's: the purl's
	// upstream qualifier.
	source string
	// files are the names of the library files linked (libseccomp.a),
	// sorted; not their paths, which are the build machine's.
	files []string
	// licenses are the SPDX identifiers its copyright file declares;
	// copyright is that file's path under /LICENSES/<artifact>/.
	licenses  []string
	copyright string
}

// purl is the package's purl:
// pkg:deb/<os>/<name>@<version>?arch=&distro=&upstream=. upstream, as syft
// writes it for a package dpkg names a source of, is what grype matches
// Debian's vulnerabilities by: they are named by source package
// (libseccomp, glibc), never by the -dev package a cgo build links.
func (d *debNode) purl() string {
	name := d.name
	if d.os != "" {
		name = d.os + "/" + name
	}
	return purl("deb", name, d.version, map[string]string{"arch": d.arch, "distro": d.distro, "upstream": d.source})
}

// concluded is the package's licence as its copyright file declares it,
// "" when not known (see concludedOf).
func (d *debNode) concluded() string { return concludedOf(d.licenses) }

// comment says what the package is to the binaries depending on it.
func (d *debNode) comment() string {
	s := "The Debian package " + d.name + ":" + d.arch
	if d.distro != "" {
		s += " of " + d.distro
	}
	s += ", whose " + strings.Join(d.files, ", ") + " cgo linked into the binaries that depend on it, from the build machine."
	if d.copyright != "" {
		s += " Its copyright file is shipped as " + d.copyright + " under the artifact's /LICENSES/ directory."
	}
	return s
}

// cLibraries links each Go binary to the Debian packages of the C
// libraries it contains, each one element however many binaries share it.
func (g *graph) cLibraries() {
	debs := map[string]*debNode{}
	for _, fn := range g.files {
		if fn.bin == nil {
			continue
		}
		for _, gb := range fn.art.a.GoBinaries {
			if gb.Path != fn.bin.Path {
				continue
			}
			for _, l := range gb.CLibraries {
				if l.Package.Name == "" {
					continue // owned by none: said by the build, not a package
				}
				n := &debNode{name: l.Package.Name, arch: l.Package.Arch, version: l.Package.Version, os: l.Package.OS, distro: l.Package.Distro, source: l.Package.Source}
				if l.Package.SourceVersion != "" {
					n.source += "@" + l.Package.SourceVersion
				}
				key := n.purl()
				if old, ok := debs[key]; ok {
					n = old
				} else {
					n.id = g.newID("Deb", n.name+"-"+n.version, "deb "+key)
					debs[key] = n
				}
				if f := path.Base(l.File); !slices.Contains(n.files, f) {
					n.files = append(n.files, f)
					slices.Sort(n.files)
				}
				for _, id := range l.Licenses {
					if !slices.Contains(n.licenses, id) {
						n.licenses = append(n.licenses, id)
					}
				}
				slices.Sort(n.licenses)
				if n.copyright == "" {
					n.copyright = l.Copyright
				}
				if !slices.Contains(fn.debs, n) {
					fn.debs = append(fn.debs, n)
				}
			}
		}
		slices.SortFunc(fn.debs, func(a, b *debNode) int { return strings.Compare(a.id, b.id) })
	}
	for _, n := range debs {
		g.debs = append(g.debs, n)
	}
	slices.SortFunc(g.debs, func(a, b *debNode) int {
		return strings.Compare(a.name+"\x00"+a.arch+"\x00"+a.id, b.name+"\x00"+b.arch+"\x00"+b.id)
	})
}

func spdxDeb(d *debNode) spdxPackage {
	p := spdxPackage{
		SPDXID: d.id, Name: d.name, VersionInfo: d.version, DownloadLocation: noAssertion,
		LicenseConcluded: noAssertion, LicenseDeclared: noAssertion,
		Comment:      d.comment(),
		ExternalRefs: []spdxExternalReference{purlRef(d.purl())},
	}
	if lic := d.concluded(); lic != "" {
		p.LicenseConcluded, p.LicenseDeclared = lic, lic
	}
	return p
}

func cdxDeb(d *debNode) cdxComponent {
	c := cdxComponent{
		BOMRef: ref(d.id), Type: "library", Name: d.name, Version: d.version,
		Description: d.comment(), Purl: d.purl(),
	}
	if lic := d.concluded(); lic != "" {
		c.Licenses = []cdxLicense{{Expression: lic, Acknowledgement: "declared"}}
	}
	return c
}
