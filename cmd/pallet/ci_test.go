package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// -q prints only the result on stdout, one line per image and name, as
// crane and ko do; --metadata-file writes the same facts as JSON.
func TestQuietPrintsResultAndMetadata(t *testing.T) {
	reg := testregistry.Start(t, nil)
	recipe := copyExample(t, "hello")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	meta := filepath.Join(dir, "meta.json")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"build", "-q", "-f", recipe, "--no-cache", "-o", "oci:" + out, "-o", "registry:" + reg.Host + "/ci/hello", "--metadata-file", meta}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("-q wrote to stderr: %s", stderr.String())
	}
	idx := layoutIndex(t, out).Manifests[0].Digest.String()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{idx, reg.Host + "/ci/hello:0.1.0@" + idx, reg.Host + "/ci/hello:latest@" + idx}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), strings.Join(want, "\n"))
	}
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m build.Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Images) != 1 || m.Images[0].Digest != idx || len(m.Images[0].Manifests) != 2 || len(m.Outputs) != 2 || m.Outputs[1].Written[0] != want[1] {
		t.Errorf("metadata:\n%s", data)
	}
	for _, mf := range m.Images[0].Manifests {
		if mf.Platform == "" || !strings.HasPrefix(mf.Digest, "sha256:") || mf.Base != "scratch" {
			t.Errorf("manifest entry %+v", mf)
		}
	}
	rec := readRecord(t, out+".record.json")
	if len(rec.Results) != 1 || rec.Results[0].Digest != idx {
		t.Errorf("record results %+v, want the index %s", rec.Results, idx)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stdout); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stdout.String(), "pallet ") || !strings.Contains(stdout.String(), " go1.") {
			t.Errorf("%v: %q", args, stdout.String())
		}
	}
}
