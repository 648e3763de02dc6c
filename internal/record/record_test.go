package record

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
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
