package output

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func testImages(t *testing.T) []Image {
	t.Helper()
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	return []Image{{Repository: "example.com/app", Tags: []string{"1"}, Image: img}}
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// earlierLayout writes a layout as pallet does, the only kind (with an
// empty directory) that a new one may replace.
func earlierLayout(t *testing.T, dir string) {
	t.Helper()
	if err := (&Layout{Dir: dir}).Write(context.Background(), testImages(t)); err != nil {
		t.Fatal(err)
	}
}

func checkLayout(t *testing.T, dir string, want int) {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s is not a layout: %v", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != want {
		t.Fatalf("%s lists %d images, want %d", dir, len(m.Manifests), want)
	}
}

// An oci:DIR output replaces only a directory holding exactly an OCI
// layout. Anything else there is refused, naming the file, both when the
// output is parsed and when it is written, and left as it was.
func TestLayoutReplacesOnlyLayouts(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		named string // the file the refusal names; "" = accepted
	}{
		{"missing", func(*testing.T, string) {}, ""},
		{"empty", func(t *testing.T, dir string) { os.Mkdir(dir, 0o755) }, ""},
		{"earlier output", earlierLayout, ""},
		{"layout written by another tool", func(t *testing.T, dir string) {
			if _, err := layout.Write(dir, empty.Index); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"layout and a user file", func(t *testing.T, dir string) {
			earlierLayout(t, dir)
			writeFile(t, filepath.Join(dir, "notes.txt"), "mine")
		}, "notes.txt"},
		{"marker and user files", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "oci-layout"), `{"imageLayoutVersion":"1.0.0"}`)
			writeFile(t, filepath.Join(dir, "src/main.go"), "package main")
		}, "src"},
		{"marker alone", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "oci-layout"), `{"imageLayoutVersion":"1.0.0"}`)
		}, "index.json"},
		{"marker that is not one", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "oci-layout"), "my notes")
			writeFile(t, filepath.Join(dir, "index.json"), `{"schemaVersion":2,"manifests":[]}`)
		}, "oci-layout"},
		{"index.json that is not an index", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "oci-layout"), `{"imageLayoutVersion":"1.0.0"}`)
			writeFile(t, filepath.Join(dir, "index.json"), `{"name":"my-web-app"}`)
		}, "index.json"},
		{"file among blobs", func(t *testing.T, dir string) {
			earlierLayout(t, dir)
			writeFile(t, filepath.Join(dir, "blobs/sha256/README"), "mine")
		}, "README"},
		{"short digest", func(t *testing.T, dir string) {
			earlierLayout(t, dir)
			writeFile(t, filepath.Join(dir, "blobs/sha256/abc"), "mine")
		}, "abc"},
		{"directory among blobs", func(t *testing.T, dir string) {
			earlierLayout(t, dir)
			os.MkdirAll(filepath.Join(dir, "blobs/sha256/"+hex), 0o755)
		}, hex},
		{"symlink among blobs", func(t *testing.T, dir string) {
			earlierLayout(t, dir)
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "blobs/sha256/"+hex)); err != nil {
				t.Fatal(err)
			}
		}, hex},
		{"file under blobs", func(t *testing.T, dir string) {
			earlierLayout(t, dir)
			writeFile(t, filepath.Join(dir, "blobs/list.txt"), "mine")
		}, "list.txt"},
		{"regular file", func(t *testing.T, dir string) { writeFile(t, dir, "mine") }, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			tc.setup(t, dir)
			before := snapshot(t, dir)
			_, perr := Parse("oci:"+dir, Options{})
			werr := (&Layout{Dir: dir}).Write(context.Background(), testImages(t))
			if tc.named == "" {
				if perr != nil || werr != nil {
					t.Fatalf("refused: parse %v, write %v", perr, werr)
				}
				checkLayout(t, dir, 1)
				return
			}
			for _, err := range []error{perr, werr} {
				if err == nil || !strings.Contains(err.Error(), tc.named) {
					t.Errorf("want a refusal naming %s, got %v", tc.named, err)
				}
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("refused output changed:\n%s\nnow\n%s", before, after)
			}
		})
	}
}

// snapshot lists the tree at p with sizes, to see that a refusal changed
// nothing.
func snapshot(t *testing.T, p string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(p, func(q string, fi os.FileInfo, err error) error {
		if err != nil {
			b.WriteString(q + " " + err.Error() + "\n")
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", q, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return b.String()
}

// A symlinked output directory stays a link; the layout is written where
// it points, also when that does not exist yet.
func TestLayoutThroughSymlink(t *testing.T) {
	for _, exists := range []bool{true, false} {
		root := t.TempDir()
		target := filepath.Join(root, "store", "images")
		if exists {
			earlierLayout(t, target)
		}
		link := filepath.Join(root, "out")
		if err := os.Symlink("store/images", link); err != nil {
			t.Fatal(err)
		}
		target2 := filepath.Join(root, "images2")
		if err := os.Symlink(target2, filepath.Join(root, "out2")); err != nil {
			t.Fatal(err)
		}
		im := testImages(t)
		im[0].Tags = []string{"1", "2"}
		for _, dir := range []string{link, filepath.Join(root, "out2")} {
			if _, err := Parse("oci:"+dir, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := (&Layout{Dir: dir}).Write(context.Background(), im); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(dir)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("existing %v: %s is no longer a symlink (%v, %v)", exists, dir, fi.Mode(), err)
			}
		}
		checkLayout(t, target, 2)
		checkLayout(t, target2, 2)
		if got, _ := os.Readlink(link); got != "store/images" {
			t.Errorf("link now points at %q", got)
		}
	}
}

// dockerArchiveBytes writes images as a docker archive in memory.
func dockerArchiveBytes(t *testing.T, images []Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := (&DockerArchive{File: "-", Writer: &buf}).Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tarOf(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"config.json", "layer.tar", "manifest.json", "other.txt"} {
		data, ok := files[n]
		if !ok {
			continue
		}
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(data))
	}
	tw.Close()
	return buf.String()
}

// appendTar rewrites the tar at p with an entry name holding body after
// its own, as tar -r appends one.
func appendTar(t *testing.T, p, name, body string) {
	t.Helper()
	in, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(in)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A docker:FILE output replaces only a docker archive or nothing.
func TestDockerReplacesOnlyArchives(t *testing.T) {
	earlier := func(t *testing.T, p string) {
		if err := (&DockerArchive{File: p}).Write(context.Background(), testImages(t)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, p string)
		want  string // in the refusal; "" = accepted
	}{
		{"missing", func(*testing.T, string) {}, ""},
		{"earlier output", earlier, ""},
		{"docker save of another tool", func(t *testing.T, p string) {
			writeFile(t, p, tarOf(t, map[string]string{
				"config.json":   "{}",
				"manifest.json": `[{"Config":"config.json","RepoTags":["a:1"],"Layers":["layer.tar"]}]`,
				"layer.tar":     "",
			}))
		}, ""},
		// An appended tar: go-containerregistry reads the first
		// manifest.json, docker load and ctr import the last.
		{"earlier output, manifest.json appended", func(t *testing.T, p string) {
			earlier(t, p)
			appendTar(t, p, "manifest.json", "[]")
		}, "it holds 2 entries named manifest.json"},
		{"earlier output, ./manifest.json appended", func(t *testing.T, p string) {
			earlier(t, p)
			appendTar(t, p, "./manifest.json", "[]")
		}, "it holds 2 entries named manifest.json"},
		{"earlier output, /manifest.json appended", func(t *testing.T, p string) {
			earlier(t, p)
			appendTar(t, p, "/manifest.json", "[]")
		}, "it holds 2 entries named manifest.json"},
		{"earlier output, another file appended", func(t *testing.T, p string) {
			earlier(t, p)
			appendTar(t, p, "README", "a")
		}, ""},
		{"text file", func(t *testing.T, p string) { writeFile(t, p, "my thesis") }, "not a tar"},
		{"empty file", func(t *testing.T, p string) { writeFile(t, p, "") }, "no manifest.json"},
		{"tar without manifest", func(t *testing.T, p string) {
			writeFile(t, p, tarOf(t, map[string]string{"other.txt": "x"}))
		}, "no manifest.json"},
		{"tar with another manifest.json", func(t *testing.T, p string) {
			writeFile(t, p, tarOf(t, map[string]string{"manifest.json": `{"name":"my-extension","version":"1"}`}))
		}, "not a docker save manifest"},
		{"manifest naming a missing config", func(t *testing.T, p string) {
			writeFile(t, p, tarOf(t, map[string]string{"manifest.json": `[{"Config":"config.json","Layers":[]}]`}))
		}, "config.json"},
		{"directory", func(t *testing.T, p string) { os.MkdirAll(filepath.Join(p, "sub"), 0o755) }, "not a regular file (a directory)"},
		{"symlink to a text file", func(t *testing.T, p string) {
			writeFile(t, p+".real", "my thesis")
			os.Symlink(filepath.Base(p)+".real", p)
		}, "not a tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "out.tar")
			tc.setup(t, p)
			before := snapshot(t, filepath.Dir(p))
			_, perr := Parse("docker:"+p, Options{})
			werr := (&DockerArchive{File: p}).Write(context.Background(), testImages(t))
			if tc.want == "" {
				if perr != nil || werr != nil {
					t.Fatalf("refused: parse %v, write %v", perr, werr)
				}
				if _, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(p) }); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, err := range []error{perr, werr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("want a refusal saying %q, got %v", tc.want, err)
				}
			}
			if after := snapshot(t, filepath.Dir(p)); after != before {
				t.Errorf("refused output changed:\n%s\nnow\n%s", before, after)
			}
		})
	}
}

// A symlink to an archive is written through and stays a link.
func TestDockerThroughSymlink(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "archives", "app.tar")
	os.MkdirAll(filepath.Dir(real), 0o755)
	if err := os.WriteFile(real, dockerArchiveBytes(t, testImages(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "app.tar")
	if err := os.Symlink("archives/app.tar", link); err != nil {
		t.Fatal(err)
	}
	images := testImages(t)
	if _, err := Parse("docker:"+link, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := (&DockerArchive{File: link}).Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink", link)
	}
	got, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, dockerArchiveBytes(t, images)) {
		t.Error("the link's target does not hold the new archive")
	}
}

// docker:- writes the archive to the writer given, and creates no file.
func TestDockerStdout(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var buf bytes.Buffer
	target, err := Parse("docker:-", Options{Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	images := testImages(t)
	if err := target.Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Error(`docker:- created a file named "-"`)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatalf("standard output is not a docker archive: %v", err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "example.com/app:1" {
		t.Errorf("manifest %+v", m)
	}
	if !bytes.Equal(buf.Bytes(), dockerArchiveBytes(t, images)) {
		t.Error("standard output differs from the archive written to a file")
	}
}

// A registry output that is no reference is refused before the build,
// not once it is done and the push looks up the host "file:" or "..".
func TestRegistryOutputMustBeAReference(t *testing.T) {
	images := []Planned{{Repository: "app", Tags: []string{"v1"}, Manifests: 1}}
	for _, ref := range []string{"file:///x", "../x", "file:///"} {
		target, err := Parse("registry:"+ref, Options{})
		if err == nil {
			err = CheckImages([]Target{target}, images)
		}
		if err == nil || !strings.Contains(err.Error(), "is not a registry reference") {
			t.Errorf("registry:%s: %v", ref, err)
		}
	}
	for _, ref := range []string{"localhost:5000/team/app", "example.com/app:v1", "app", "localhost:5000/mirror/"} {
		target, err := Parse("registry:"+ref, Options{})
		if err == nil {
			err = CheckImages([]Target{target}, images)
		}
		if err != nil {
			t.Errorf("registry:%s: %v", ref, err)
		}
	}
}
