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
