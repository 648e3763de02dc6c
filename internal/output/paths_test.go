package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDistinct(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	os.MkdirAll(filepath.Join(root, "real"), 0o755)
	if err := os.Symlink("real", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	// A link to what does not exist yet: writing through it creates
	// "later", so the two are one output.
	if err := os.Symlink("later", filepath.Join(root, "pending")); err != nil {
		t.Fatal(err)
	}
	var out1, out2 bytes.Buffer
	stdout1 := &DockerArchive{File: "-", Writer: &out1}
	stdout2 := &DockerArchive{File: "-", Writer: &out2}
	oci := func(d string) Target { return &Layout{Dir: d} }
	docker := func(f string) Target { return &DockerArchive{File: f} }
	reg := func(r string) Target { return &Registry{Ref: r} }
	for _, tc := range []struct {
		name    string
		targets []Target
		extra   []string
		want    string // in the error; "" = distinct
	}{
		{"distinct", []Target{oci("out"), oci("out2"), docker("out.tar"), stdout1, reg("r.example/a:1"), reg("r.example/a:1")}, []string{"record.json"}, ""},
		{"sibling with a common prefix", []Target{oci("out"), docker("out-x/a.tar")}, []string{"outer.json"}, ""},
		{"same directory spelled twice", []Target{oci("out"), oci("./x/../out/")}, nil, "same path"},
		{"absolute and relative", []Target{oci(filepath.Join(root, "out")), docker("out")}, nil, "same path"},
		{"through a symlinked directory", []Target{docker("real/a.tar"), docker("alias/a.tar")}, nil, "same path"},
		{"symlink to a missing path", []Target{oci("pending"), oci("later")}, nil, "same path"},
		{"record on an output", []Target{docker("alias/r.json")}, []string{"real/r.json"}, "same path"},
		{"record inside a layout", []Target{oci("out")}, []string{"out/record.json"}, "inside output oci:out"},
		{"archive inside a layout", []Target{docker("alias/x/a.tar"), oci("real/x")}, nil, "inside output oci:real/x"},
		{"layout inside a layout", []Target{oci("out/inner"), oci("out")}, nil, "inside output oci:out"},
		{"standard output twice", []Target{stdout1, stdout2}, nil, "standard output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDistinct(tc.targets, tc.extra...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}

func TestResolveLinkCycle(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Symlink(b, a)
	os.Symlink(a, b)
	if _, err := resolve(a); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Fatalf("a link cycle resolved: %v", err)
	}
	if err := CheckDistinct([]Target{&Layout{Dir: a}}); err == nil {
		t.Error("CheckDistinct accepted an output on a link cycle")
	}
}

func TestCheckInputs(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	for _, d := range []string{"in", "layout/blobs"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "recipe.yaml"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "layout/blobs/x"), nil, 0o644)
	if err := os.Symlink("in", filepath.Join(root, "into-input")); err != nil {
		t.Fatal(err)
	}
	inputs := []Input{{Name: "the recipe", Path: "recipe.yaml"}, {Name: "input in", Path: "in"}, {Name: "a blob", Path: "layout/blobs/x"}, {Name: "missing", Path: "nowhere"}}
	for _, tc := range []struct {
		name    string
		targets []Target
		extra   []string
		want    string
	}{
		{"apart", []Target{&Layout{Dir: "out"}, &DockerArchive{File: "in2.tar"}}, []string{"rec.json", "nowhere"}, ""},
		{"on the recipe", nil, []string{"./recipe.yaml"}, "is the recipe"},
		{"archive inside an input", []Target{&DockerArchive{File: "in/x.tar"}}, nil, "is inside input in"},
		{"layout holding an input", []Target{&Layout{Dir: "layout"}}, nil, "a blob (" + filepath.Join(root, "layout/blobs/x") + ") is inside output oci:layout"},
		{"archive on an input", []Target{&DockerArchive{File: "layout/blobs/x"}}, nil, "is a blob"},
		{"through a link into an input", []Target{&Layout{Dir: "into-input/out"}}, nil, "is inside input in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckInputs(tc.targets, tc.extra, inputs)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckOwnJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	record := []string{"recipe", "epoch"}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"missing", filepath.Join(dir, "none.json"), true},
		{"an earlier record", write("r.json", `{"recipe": "x", "epoch": 0, "artifacts": [`+strings.Repeat(`{"a": 1},`, 1000)+`{}]}`), true},
		{"keys in another order", write("o.json", `{"epoch": 0, "other": {"recipe": 1}, "recipe": ""}`), true},
		{"a key only nested", write("n.json", `{"epoch": 0, "other": {"recipe": 1}}`), false},
		{"a recipe", write("pallet.yaml", "version: 1\n"), false},
		{"empty (mktemp)", write("e.json", ""), true},
		{"a JSON list", write("l.json", `["recipe", "epoch"]`), false},
		{"a directory", dir, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOwnJSON(tc.path, "build record", record)
			if tc.ok != (err == nil) {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if err := CheckOwnJSON(write("cdx.json", `{"bomFormat": "CycloneDX"}`), "--sbom-dir", []string{"spdxVersion"}, []string{"bomFormat"}); err != nil {
		t.Errorf("a second key set: %v", err)
	}
}
