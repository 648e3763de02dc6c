package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// pallet runs one command line in-process and returns its stderr.
func pallet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	// A build that writes only to a registry puts its record in the
	// current directory; keep tests from writing into the source tree.
	if len(args) > 0 && args[0] == "build" && !strings.Contains(strings.Join(args, " "), "oci:") && !strings.Contains(strings.Join(args, " "), "docker:") {
		args = append(args, "--record", filepath.Join(t.TempDir(), "record.json"))
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	return stderr.String() + stdout.String(), err
}

// mustPallet is pallet that fails the test on error.
func mustPallet(t *testing.T, args ...string) string {
	t.Helper()
	out, err := pallet(t, args...)
	if err != nil {
		t.Fatalf("pallet %v: %v\n%s", args, err, out)
	}
	return out
}

// copyExample copies examples/NAME into a new temp dir and returns the
// recipe path, so builds from different directories can be compared.
func copyExample(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	copyTree(t, filepath.Join("..", "..", "examples", name), dst)
	return filepath.Join(dst, "pallet.yaml")
}

// copyTree copies the regular files and directories under src to dst,
// with their permissions.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// layoutIndex reads a layout's index.json.
func layoutIndex(t *testing.T, dir string) v1.IndexManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m v1.IndexManifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// needTool returns the path of an outside tool. It skips the test when the
// tool is missing on a developer machine, and fails it in CI, where
// .ci/run installs it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run must install it", name)
		}
		t.Skipf("%s is not installed (apt-get install -y %s); skipping", name, name)
	}
	return p
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layoutIndexAt reads the index blob d of a layout.
func layoutIndexAt(t *testing.T, dir string, d v1.Hash) (*v1.IndexManifest, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "blobs", d.Algorithm, d.Hex))
	if err != nil {
		return nil, err
	}
	var m v1.IndexManifest
	return &m, json.Unmarshal(data, &m)
}

// readJSON decodes the JSON file into v, failing the test otherwise.
func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// linuxBaseLayout writes dir/base, an OCI layout of one linux/amd64
// image of one uncompressed layer holding headers (no contents), and
// returns that layer's digest: a base with the entries a test needs.
func linuxBaseLayout(t *testing.T, dir string, headers []tar.Header, opts ...layout.Option) v1.Hash {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range headers {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer := static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer)
	img, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		&v1.ConfigFile{OS: "linux", Architecture: "amd64", RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.Write(filepath.Join(dir, "base"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img, opts...); err != nil {
		t.Fatal(err)
	}
	d, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// indexedImage is an image of a layout and the index entry that names it.
type indexedImage struct {
	desc v1.Descriptor
	img  v1.Image
}

// layoutImages returns every image of the layout at dir, through nested
// indexes, in their order; a layout without one fails the test.
func layoutImages(t *testing.T, dir string) []indexedImage {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	var imgs []indexedImage
	var walk func(v1.ImageIndex)
	walk = func(idx v1.ImageIndex) {
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m.Manifests {
			switch {
			case d.MediaType.IsIndex():
				sub, err := idx.ImageIndex(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				walk(sub)
			case d.MediaType.IsImage():
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				imgs = append(imgs, indexedImage{d, img})
			}
		}
	}
	walk(idx)
	if len(imgs) == 0 {
		t.Fatalf("%s: no image", dir)
	}
	return imgs
}
