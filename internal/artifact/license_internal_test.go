package artifact

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

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
