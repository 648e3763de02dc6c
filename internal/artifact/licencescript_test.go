package artifact_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/tree"
)

// licenceLike are files a module may carry under licence-like names: the
// real licences among them (want) ship, and a script or source file so
// named (flannel's dist/license-check.sh) does not, by its extension or,
// where it has none, by its "#!".
var licenceLike = map[string]string{
	"LICENSE":                "MIT, for the test\n",
	"LICENSE.md":             "# MIT\n",
	"LICENSE.txt":            "MIT\n",
	"LICENSE-APACHE":         "Apache License 2.0\n",
	"LICENCE":                "BSD\n",
	"COPYING":                "GPL\n",
	"NOTICE":                 "Copyright the authors\n",
	"docs/COPYRIGHT":         "Copyright the authors\n",
	"dist/license-check.sh":  "#!/usr/bin/env bash\n# checks the Go files' headers\n",
	"hack/license-header":    "#!/bin/sh\nexec go run ./hack/boilerplate\n",
	"hack/licence.go":        "package hack\n",
	"dist/notice-update.ps1": "Write-Host notice\n",
}

var licenceLikeWant = []string{"COPYING", "LICENCE", "LICENSE", "LICENSE-APACHE", "LICENSE.md", "LICENSE.txt", "NOTICE", "docs/COPYRIGHT"}

func licencePaths(res *artifact.Result) []string {
	var got []string
	for _, e := range res.Licenses.Entries() {
		if e.Kind == tree.File {
			got = append(got, e.Path)
		}
	}
	slices.Sort(got)
	return got
}

// A gomod artifact's own licences are its licence files, not the scripts
// beside them whose names begin with a licence word.
func TestGoModuleLicencesLeaveScriptsOut(t *testing.T) {
	p := newModProxy(t)
	files := map[string]string{
		"go.mod":            "module " + helloPath + "\n\ngo 1.22\n",
		"cmd/hello/main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	}
	for name, content := range licenceLike {
		files[name] = content
	}
	sum := p.addModule(t, helloPath, "v1.0.0", files).zip
	res, err := fetcher(t).Fetch(context.Background(), helloRequest(t, sum), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := licencePaths(res); !slices.Equal(got, licenceLikeWant) {
		t.Errorf("licences %q, want %q", got, licenceLikeWant)
	}
}

// The same rule holds for a local directory, whose licences are found by
// the same names.
func TestLocalLicencesLeaveScriptsOut(t *testing.T) {
	dir := t.TempDir()
	for name, content := range licenceLike {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req := &artifact.Request{Name: "app", Platform: hostPlatform(t), Kind: &artifact.Local{Path: dir}}
	res, err := fetcher(t).Fetch(context.Background(), req, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := licencePaths(res); !slices.Equal(got, licenceLikeWant) {
		t.Errorf("licences %q, want %q", got, licenceLikeWant)
	}
}
