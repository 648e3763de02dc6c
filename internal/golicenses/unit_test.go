package golicenses

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
	}{
		// The classifier also reports 0BSD inside an ISC text.
		{"ISC with title and copyright", "ISC License\n\nCopyright (c) 2024 Someone\n\n" + corpus("ISC"), "ISC"},
		{"two licences in one file", corpus("MIT") + "\n\n---\n\n" + corpus("BSD-3-Clause"), "MIT AND BSD-3-Clause"},
		{"not a licence", "Hello, world.\n", NoAssertion},
		{"empty", "", NoAssertion},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := classify([]byte(c.text))
			if err != nil {
				t.Fatal(err)
			}
			if got.spdx != c.want {
				t.Errorf("classify = %q, want %q", got.spdx, c.want)
			}
			if (got.spdx == NoAssertion) != (got.confidence == 0) {
				t.Errorf("confidence %v with %q", got.confidence, got.spdx)
			}
		})
	}
}

func TestSPDXID(t *testing.T) {
	for name, want := range map[string]string{
		"Apache-2.0":          "Apache-2.0",
		"GPL-2.0":             "GPL-2.0", // deprecated in SPDX, still an identifier
		"BSD-0-Clause":        "0BSD",
		"cURL":                "curl",
		"Apache-2.0-Modified": "LicenseRef-Apache-2.0-Modified",
		"tcl_tk":              "LicenseRef-tcl-tk",
		"LicenseRef-C-Ares":   "LicenseRef-C-Ares",
	} {
		if got := spdxID(name); got != want {
			t.Errorf("spdxID(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestNeedsSourceOffer(t *testing.T) {
	got := needsSourceOffer([]string{"MIT", "MPL-2.0", "EPL-2.0", "Apache-2.0", "LGPL-2.1"})
	if want := []string{"EPL-2.0", "LGPL-2.1", "MPL-2.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("needsSourceOffer = %v, want %v", got, want)
	}
	if got := needsSourceOffer([]string{"MIT", "BSD-3-Clause"}); len(got) != 0 {
		t.Errorf("permissive licences: %v", got)
	}
}

func TestParseModulesTxt(t *testing.T) {
	text := strings.Join([]string{
		"# example.com/a v1.0.0",
		"## explicit; go 1.21",
		"example.com/a",
		"# example.com/b v1.2.0 => example.com/c v1.3.0",
		"## explicit",
		"example.com/b",
		"# example.com/d v0.0.0 => ./d",
		"example.com/d",
		"# example.com/e => ../e",
		"",
	}, "\n")
	got := parseModulesTxt(text)
	want := map[string]vendorEntry{
		"example.com/a": {version: "v1.0.0"},
		"example.com/b": {version: "v1.2.0", replPath: "example.com/c", replVers: "v1.3.0"},
		"example.com/d": {version: "v0.0.0", replPath: "./d"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseModulesTxt = %+v\nwant %+v", got, want)
	}
}

func TestCheckOffline(t *testing.T) {
	for _, c := range []struct {
		env []string
		ok  bool
	}{
		{[]string{"GOPROXY=file:///m/gomod/cache/download", "GOSUMDB=off"}, true},
		{[]string{"GOPROXY=off", "GOSUMDB=off"}, true},
		{[]string{"GOPROXY=https://proxy.golang.org,direct", "GOSUMDB=off", "GOPROXY=file:///m"}, true},
		{[]string{"GOPROXY=file:///m,https://proxy.golang.org", "GOSUMDB=off"}, false},
		{[]string{"GOPROXY=file:///m|direct", "GOSUMDB=off"}, false},
		{[]string{"GOPROXY=file:///m"}, false},
		{[]string{"GOSUMDB=off"}, false},
	} {
		if err := checkOffline(c.env); (err == nil) != c.ok {
			t.Errorf("checkOffline(%v) = %v", c.env, err)
		}
	}
}

// TestClassifyConcurrent: one classifier serves concurrent Collect calls
// (a build collects several binaries at once); run with -race.
func TestClassifyConcurrent(t *testing.T) {
	texts := map[string]string{"MIT": corpus("MIT"), "Apache-2.0": corpus("Apache-2.0"), "MPL-2.0": corpus("MPL-2.0")}
	errs := make(chan error, 3*len(texts))
	for range 3 {
		for want, text := range texts {
			go func() {
				got, err := classify([]byte(text))
				if err == nil && got.spdx != want {
					err = fmt.Errorf("classify = %q, want %q", got.spdx, want)
				}
				errs <- err
			}()
		}
	}
	for range 3 * len(texts) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
