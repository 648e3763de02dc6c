package clibs

import (
	"reflect"
	"testing"
)

func TestDEP5Licenses(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
		ok         bool
	}{
		{"libseccomp", `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: libseccomp

Files: *
Copyright: 2012 Paul Moore
License: LGPL-2.1

Files: src/hash.*
Copyright: 2006 Bob Jenkins
License: LGPL-2.1

Files: debian/*
Copyright: 2012 Kees Cook
License: GPL-2+

License: LGPL-2.1
 This library is free software; ...
 .
 On Debian systems, ...
`, []string{"LGPL-2.1"}, true},
		{"header licence, expressions, CRLF", "Format: http://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\r\nLicense: GPL-2+ or Artistic\r\n\r\nFiles: *\r\nLicense: Expat\r\n\r\nFiles: lib/*\r\nLicense: GPL-3+  with GCC-exception-3.1 exception\r\n", []string{"Expat", "GPL-2+ or Artistic", "GPL-3+ with GCC-exception-3.1 exception"}, true},
		{"Files on several lines", "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: Expat\n\nFiles: debian/*\n src/bundled/*\nCopyright: someone\nLicense: BSD-3-clause\n", []string{"BSD-3-clause", "Expat"}, true},
		{"free-form (glibc, gcc)", "This is the Debian prepackaged version of the GNU C Library.\n\nLicense: LGPL\n", nil, false},
		{"empty", "", nil, false},
	} {
		got, ok := DEP5Licenses([]byte(c.text))
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
