package main

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/record"
)

// A placement's path written with a '\' is recorded as the name the build
// took: the artifact's own name holding the '\' where it has one, else
// the path the '\' separates. The record said the latter always, so the
// SBOM, which finds a placement's files by the recorded path, listed
// none of those placed from a directory a\b.
func TestBackslashPathRecordedAsTaken(t *testing.T) {
	for _, tc := range []struct {
		name, dir string // the artifact's directory holding tool
	}{
		{"a name holding it", `a\b`},
		{"a path it separates", "a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "r.tar"), string(rawTar(t,
				&tar.Header{Name: tc.dir + "/", Typeflag: tar.TypeDir, Mode: 0o755},
				&tar.Header{Name: tc.dir + "/tool", Typeflag: tar.TypeReg, Mode: 0o755, Size: 4},
			)))
			recipe := backslashPathRecipe(t, dir)
			out, sboms := filepath.Join(dir, "out"), filepath.Join(dir, "sboms")
			mustPallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+out, "--sbom=spdx", "--sbom-dir", sboms)
			var rec record.Build
			readJSON(t, out+".record.json", &rec)
			if len(rec.Images) != 1 || len(rec.Images[0].Placed) != 1 || rec.Images[0].Placed[0].Path != tc.dir {
				t.Errorf("recorded placements %+v, want the one of path %s", rec.Images, tc.dir)
			}
			data, err := os.ReadFile(filepath.Join(sboms, "app_linux-amd64.sbom.spdx.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct{ Files []struct{ FileName string } }
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, f := range doc.Files {
				files = append(files, f.FileName)
			}
			if !slices.Contains(files, "./opt/tool") {
				t.Errorf("the SBOM lists %v, want ./opt/tool", files)
			}
		})
	}
}
