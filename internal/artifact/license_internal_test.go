package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/tree"
)

// moduleSnapshot keeps, of a checkout, the files module licences read:
// go.mod files, vendor/modules.txt and the licence files of the module,
// its vendored modules and the directories it replaces modules with
// inside the checkout; no source, data or testdata.
func TestModuleSnapshot(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"mod/go.mod":                       "module example.com/mod\n\ngo 1.22\n\nrequire example.com/x v1.0.0\n\nreplace example.com/x => ./third_party/x\n",
		"mod/LICENSE":                      "licence",
		"mod/main.go":                      "package main\n",
		"mod/license.go":                   "package main\n",
		"mod/fork/LICENSE":                 "fork licence",
		"mod/fork/fork.go":                 "package fork\n",
		"mod/corpus/MIT/license.txt":       "a corpus text",
		"mod/testdata/LICENSE":             "test data",
		"mod/third_party/x/go.mod":         "module example.com/x\n",
		"mod/third_party/x/NOTICE":         "x notice",
		"mod/third_party/x/x.go":           "package x\n",
		"mod/vendor/modules.txt":           "# example.com/v v1.0.0\n## explicit\nexample.com/v\n",
		"mod/vendor/example.com/v/LICENSE": "v licence",
		"mod/vendor/example.com/v/v.go":    "package v\n",
		"README.md":                        "the repository",
		"LICENSE":                          "the repository's licence",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := moduleSnapshot(root, filepath.Join(root, "mod"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range snap.Entries() {
		if e.Kind == tree.File {
			got = append(got, e.Path)
		}
	}
	want := []string{
		"mod/LICENSE", "mod/fork/LICENSE", "mod/go.mod",
		"mod/third_party/x/NOTICE", "mod/third_party/x/go.mod",
		"mod/vendor/example.com/v/LICENSE", "mod/vendor/modules.txt",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot %v\nwant %v", got, want)
	}
	// Read back as a snapshot, the main module's licence files are its
	// own, not the replaced module's nor the vendored ones.
	dir := t.TempDir()
	if _, err := materialize(snap, dir, root, nil); err != nil {
		t.Fatal(err)
	}
	names, err := ModuleLicenseFiles(filepath.Join(dir, "mod"), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"LICENSE", "fork/LICENSE"}; !reflect.DeepEqual(names, want) {
		t.Errorf("main module's files in the snapshot %v, want %v", names, want)
	}
}

// A licence file named with a backslash follows a placement's path
// (tree.UserPath): the name holding the backslash where the artifact has
// it, else the path it separates, and both held is refused at licenses,
// naming both. It was always split, so a name holding one was never found.
func TestNamedLicenceBackslash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string // the licence file taken, or the error's words
	}{
		{"a name holding it", []string{`doc\LICENSE`}, `doc\LICENSE`},
		{"a separator", []string{"doc/LICENSE"}, "doc/LICENSE"},
		{"both", []string{`doc\LICENSE`, "doc/LICENSE"}, `the artifact has both doc\LICENSE, a name holding a backslash, and doc/LICENSE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, filepath.FromSlash(f))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			all, err := tree.FromDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			// In the artifact's files, and in the source (a checkout, a
			// module) they were taken from.
			r := &Request{Licenses: []string{`doc\LICENSE`}}
			for _, found := range []func() (*tree.Tree, error){
				func() (*tree.Tree, error) { return findLicenses(all, r.Licenses, false) },
				func() (*tree.Tree, error) { return sourceLicenses(dir, tree.New(), r, "at that commit") },
			} {
				lic, err := found()
				if len(tc.files) == 2 {
					var fe *FieldError
					if !errors.As(err, &fe) || fe.Field != "licenses" || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("got %v, want an error at licenses naming both", err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				var files []string
				for _, e := range lic.Entries() {
					if e.Kind == tree.File {
						files = append(files, e.Path)
					}
				}
				if len(files) != 1 || files[0] != tc.want {
					t.Errorf("licences %q, want %s", files, tc.want)
				}
			}
			if len(tc.files) == 2 {
				return
			}
			// Unpacked from an archive of which include keeps only a
			// binary, the licence is taken by either of its names, and
			// by nothing else its backslash would escape in a pattern.
			patterns, err := archive.NewPatterns(licensePatterns([]string{`doc\LICENSE`, "a[1].txt"}))
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]bool{tc.want: true, "a[1].txt": true, "docLICENSE": false, "a1.txt": false} {
				if got := patterns.Match(name); got != want {
					t.Errorf("the extra patterns match %s: %v, want %v", name, got, want)
				}
			}
		})
	}
}
