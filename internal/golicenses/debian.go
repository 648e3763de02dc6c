package golicenses

import (
	"strings"

	"github.com/github/go-spdx/v2/spdxexp/spdxlicenses"

	"github.com/pallet-dev/pallet/internal/lazyre"
)

// debianNames are the short names of Debian's copyright format
// (copyright-format 1.0, "License specification") that are not SPDX
// identifiers, but name one licence for certain.
var debianNames = map[string]string{
	"expat":         "MIT",
	"public-domain": "LicenseRef-public-domain",
	"artistic":      "Artistic-1.0",
	"perl":          "Artistic-1.0-Perl",
}

// debianVersioned are the versioned families whose Debian short names
// (GPL-2, GPL-2+, LGPL-2.1+) say "only" or "or later" by a trailing +,
// where SPDX's names say it in words.
var debianVersioned = lazyre.New(`^(?i)(A?GPL|LGPL|GFDL|GFDL-NIV)-?v?([0-9]+(?:\.[0-9]+)?)(\+)?$`)

// debianException is "X with Y exception", Debian's way to write a
// licence exception.
var debianException = lazyre.New(`^(?i)(.+?) with (.+?) exception$`)

// DebianLicense turns a licence expression of a machine-readable Debian
// copyright file ("LGPL-2.1", "GPL-2+ or Artistic", "GPL-3+ with
// GCC-exception-3.1 exception") into an SPDX expression: LGPL-2.1 is
// LGPL-2.1-only and LGPL-2.1+ LGPL-2.1-or-later, as Debian means them;
// Expat is MIT; an exception is SPDX's WITH form where SPDX lists it. A
// name that is none of these nor an SPDX identifier becomes a
// LicenseRef- (as spdxID makes one), which the SBOMs do not conclude.
//
// An "and" or "or" after a comma binds loosest, as the format has it:
// "GPL-2+ or Artistic, and BSD-3-clause" is (GPL-2+ or Artistic) and
// BSD-3-clause, where SPDX's AND, binding tighter than OR, would read
// the words without the comma the other way.
func DebianLicense(expr string) string {
	words := strings.Fields(expr)
	for _, op := range []string{"or", "and"} {
		var parts []string
		start := 0
		for i := 1; i < len(words); i++ {
			if strings.HasSuffix(words[i-1], ",") && strings.EqualFold(words[i], op) {
				parts = append(parts, DebianLicense(strings.Join(words[start:i], " ")))
				start = i + 1
			}
		}
		if parts != nil {
			parts = append(parts, DebianLicense(strings.Join(words[start:], " ")))
			return "(" + strings.Join(parts, " "+strings.ToUpper(op)+" ") + ")"
		}
	}
	var out []string
	var term []string
	ops := 0
	flush := func() {
		if len(term) > 0 {
			out = append(out, debianTerm(strings.Join(term, " ")))
			term = nil
		}
	}
	for _, w := range words {
		switch strings.ToLower(strings.TrimSuffix(w, ",")) {
		case "or", "and":
			flush()
			out = append(out, strings.ToUpper(strings.TrimSuffix(w, ",")))
			ops++
			continue
		}
		term = append(term, strings.TrimSuffix(w, ","))
	}
	flush()
	s := strings.Join(out, " ")
	if ops > 0 {
		s = "(" + s + ")"
	}
	return s
}

// debianTerm is one licence of a Debian expression, as an SPDX one.
func debianTerm(t string) string {
	if m := debianException().FindStringSubmatch(t); m != nil {
		lic := debianTerm(m[1])
		if ok, id := spdxlicenses.IsException(m[2]); ok && !strings.HasPrefix(lic, "LicenseRef-") {
			return lic + " WITH " + id
		}
		return spdxID(t)
	}
	if id, ok := debianNames[strings.ToLower(t)]; ok {
		return id
	}
	if m := debianVersioned().FindStringSubmatch(t); m != nil {
		v := m[2]
		if !strings.Contains(v, ".") {
			v += ".0"
		}
		suffix := "-only"
		if m[3] == "+" {
			suffix = "-or-later"
		}
		if ok, id := spdxlicenses.IsActiveLicense(strings.ToUpper(m[1]) + "-" + v + suffix); ok {
			return id
		}
	}
	return spdxID(t)
}
