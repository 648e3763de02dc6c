package golicenses

import "testing"

func TestDebianLicense(t *testing.T) {
	for in, want := range map[string]string{
		"LGPL-2.1":           "LGPL-2.1-only",
		"LGPL-2.1+":          "LGPL-2.1-or-later",
		"GPL-2":              "GPL-2.0-only",
		"GPL-3+":             "GPL-3.0-or-later",
		"GPLv3+":             "GPL-3.0-or-later",
		"LGPL-2+":            "LGPL-2.0-or-later",
		"Expat":              "MIT",
		"BSD-3-clause":       "BSD-3-Clause",
		"Zlib":               "Zlib",
		"Apache-2.0":         "Apache-2.0",
		"public-domain":      "LicenseRef-public-domain",
		"GPL-2+ or Artistic": "(GPL-2.0-or-later OR Artistic-1.0)",
		"LGPL-3+ or GPL-2+":  "(LGPL-3.0-or-later OR GPL-2.0-or-later)",
		// A comma before "and" or "or" makes it bind loosest.
		"GPL-2+ or Artistic, and BSD-3-clause":    "((GPL-2.0-or-later OR Artistic-1.0) AND BSD-3-Clause)",
		"GPL-2+ and BSD-3-clause, or Artistic":    "((GPL-2.0-or-later AND BSD-3-Clause) OR Artistic-1.0)",
		"GPL-2+ or Artistic and BSD-3-clause":     "(GPL-2.0-or-later OR Artistic-1.0 AND BSD-3-Clause)",
		"MIT, and GPL-2+ or LGPL-2.1+, and Zlib":  "(MIT AND (GPL-2.0-or-later OR LGPL-2.1-or-later) AND Zlib)",
		"GPL-3+ with GCC-exception-3.1 exception": "GPL-3.0-or-later WITH GCC-exception-3.1",
		"GPL-2+ with OpenSSL exception":           "LicenseRef-GPL-2--with-OpenSSL-exception",
		"OpenLDAP-2.8":                            "LicenseRef-OpenLDAP-2.8",
		"permissive":                              "LicenseRef-permissive",
	} {
		if got := DebianLicense(in); got != want {
			t.Errorf("DebianLicense(%q) = %q, want %q", in, got, want)
		}
	}
}
