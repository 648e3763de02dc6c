package record

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Write streams each artifact's files, and writes the same bytes as
// json.Encoder with SetIndent("", "  ") does for the whole record: with
// no artifact, an artifact without files, names that JSON escapes, and Go
// binaries whose modules have file lists of their own.
func TestWriteAsEncoder(t *testing.T) {
	tricky := artifact.Record{Name: `"files": []`, Kind: "local", Platform: "linux/amd64", Digest: "<&>"}
	for name, b := range map[string]*Build{
		"no artifacts": {Recipe: "pallet.yaml", Epoch: 1, Artifacts: []Artifact{}, Images: []Image{}, Results: []Result{}},
		"several": {
			Recipe: "pallet.yaml",
			Epoch:  1700000000,
			Artifacts: []Artifact{
				{Record: artifact.Record{Name: "empty", Kind: "local", Platform: "linux/amd64"}, Files: []File{}, Licenses: []string{}},
				{Record: tricky, Files: []File{{Path: `a "quoted" <path>`, SHA256: "ab", Size: 3}, {Path: "files: []", SHA256: "cd"}}, Licenses: []string{"LICENSE"}},
				{
					Record:   artifact.Record{Name: "go", Kind: "go", Platform: "linux/arm64"},
					Files:    []File{{Path: "bin/x", SHA256: "ef", Size: 1 << 20}},
					Licenses: []string{},
					GoBinaries: []GoBinary{{Path: "bin/x", GoVersion: "go1.26.8", Modules: []Module{
						{Path: "example.com/m", Version: "v1.0.0", Licenses: []string{"MIT"}, Files: []string{"LICENSE"}},
						{Path: "example.com/n", Missing: true},
					}}},
				},
			},
			Images:  []Image{{Name: "i", Platform: "linux/amd64", Base: "scratch", Digest: "sha256:00", Placed: []Placement{{Artifact: "go", Dest: "/"}}}},
			Results: []Result{{Name: "i", Repository: "r", Tags: []string{"v1"}, Digest: "sha256:11", MediaType: "m"}},
		},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "sub", "r.record.json")
		if err := Write(path, b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: Write wrote\n%s\nwant\n%s", name, got, want.Bytes())
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) != 0 {
			t.Errorf("%s: left %v beside the record", name, left)
		}
	}
}

// Scan looks for Go build info only in files large enough to hold a Go
// program: a tree of small files is not opened a second time for it.
func TestScanSkipsSmallFilesForBuildInfo(t *testing.T) {
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small"), filepath.Join(dir, "big")
	if err := os.WriteFile(small, []byte("\x7fELF small"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte{0}, minGoBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := tree.New()
	for _, p := range []string{small, big} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Add(tree.Entry{Path: filepath.Base(p), Kind: tree.File, Mode: 0o755, Source: p, Size: info.Size()}); err != nil {
			t.Fatal(err)
		}
	}
	asked := map[string][]string{}
	memo := func(path string, st tree.Stamp, fact string, derive func(string) (string, error)) (string, error) {
		asked[fact] = append(asked[fact], filepath.Base(path))
		return derive(path)
	}
	a, err := Scan(&artifact.Result{Tree: tr, Licenses: tree.New()}, memo)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Files) != 2 || len(a.GoBinaries) != 0 {
		t.Errorf("files %+v, Go binaries %+v; want both files, no Go binary", a.Files, a.GoBinaries)
	}
	if got := asked["go-buildinfo"]; len(got) != 1 || got[0] != "big" {
		t.Errorf("build info asked of %v, want only big", got)
	}
	if got := asked["sha256"]; len(got) != 2 {
		t.Errorf("sha256 asked of %v, want both", got)
	}
}

// A record discarded (its output failed) leaves nothing where it was to
// go: not its file, nor the directories Stage made for it; a directory
// that was there before stays.
func TestDiscardLeavesNothing(t *testing.T) {
	b := &Build{Recipe: "pallet.yaml", Epoch: 1}
	top := t.TempDir()
	s, err := Stage(filepath.Join(top, "new", "sub", "r.record.json"), b)
	if err != nil {
		t.Fatal(err)
	}
	s.Discard()
	if left, _ := os.ReadDir(top); len(left) != 0 {
		t.Errorf("a discarded record left %v in %s", left[0].Name(), top)
	}

	kept := filepath.Join(top, "kept")
	if err := os.Mkdir(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if s, err = Stage(filepath.Join(kept, "r.record.json"), b); err != nil {
		t.Fatal(err)
	}
	s.Discard()
	if left, err := os.ReadDir(kept); err != nil || len(left) != 0 {
		t.Errorf("the record's own directory after a discard: %v, %v", left, err)
	}
}
