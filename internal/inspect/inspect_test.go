package inspect

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/output"
)

func image(t *testing.T, labels map[string]string) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{
		Labels:     labels,
		Env:        []string{"PATH=/bin", "GREETING=hello world"},
		Entrypoint: []string{"/hello", "--name", "a b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "arm64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// writeLayout writes a layout at dir holding each entry under its names,
// one index.json entry per name, as pallet and skopeo write tags.
func writeLayout(t *testing.T, dir string, entries map[string]any) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range entries {
			if !yield(k) {
				return
			}
		}
	}) {
		opt := layout.WithAnnotations(map[string]string{refName: n})
		switch e := entries[n].(type) {
		case v1.Image:
			err = p.AppendImage(e, opt)
		case v1.ImageIndex:
			err = p.AppendIndex(e, opt)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func digest(t *testing.T, x interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	d, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// TestOneBlockPerDigest reports an image tagged twice once, with both
// tags, and its labels as k=v.
func TestOneBlockPerDigest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	amd := image(t, map[string]string{"org.opencontainers.image.version": "0.1.0", "note": "two words"})
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	other := image(t, nil)
	writeLayout(t, dir, map[string]any{"0.1.0": idx, "latest": idx, "other": other})

	r, err := Open(context.Background(), "oci:"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Indexes) != 1 || len(r.Images) != 1 {
		t.Fatalf("%d indexes and %d images, want one of each", len(r.Indexes), len(r.Images))
	}
	if got := r.Indexes[0]; got.Digest != digest(t, idx) || !slices.Equal(got.Tags, []string{"0.1.0", "latest"}) || got.Name != "0.1.0" {
		t.Errorf("index %s %v", got.Digest, got.Tags)
	}
	if got := r.Images[0]; got.Digest != digest(t, other) || !slices.Equal(got.Tags, []string{"other"}) {
		t.Errorf("image %s %v", got.Digest, got.Tags)
	}

	var b bytes.Buffer
	r.Print(&b)
	out := b.String()
	if n := strings.Count(out, "index "+digest(t, idx)); n != 1 {
		t.Errorf("the index is printed %d times:\n%s", n, out)
	}
	for _, want := range []string{
		"\n  tags       0.1.0, latest\n",
		"\n  linux/amd64  " + digest(t, amd) + " (",
		"\n    labels     note=two words\n               org.opencontainers.image.version=0.1.0\n",
		"\n    env        PATH=/bin\n               GREETING=hello world\n",
		"\n    entrypoint [\"/hello\",\"--name\",\"a b\"]\n",
		"\nimage " + digest(t, other) + " (",
		"\n  tags       other\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "map[") {
		t.Errorf("a map printed as Go:\n%s", out)
	}
}

// TestLayoutRef selects entries by name, as skopeo's oci:DIR:REF does,
// with full references as names and a directory name holding a colon.
func TestLayoutRef(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "o:ut")
	a, b := image(t, nil), image(t, nil)
	writeLayout(t, dir, map[string]any{"a.io/x:latest": a, "a.io/x:v1": a, "localhost:5000/y:latest": b, "localhost:5000/y:v2": b})
	for _, c := range []struct {
		ref, digest string
		tags        []string
	}{
		{"a.io/x:v1", digest(t, a), []string{"a.io/x:latest", "a.io/x:v1"}},
		{"localhost:5000/y:latest", digest(t, b), []string{"localhost:5000/y:latest", "localhost:5000/y:v2"}},
		{"v2", digest(t, b), []string{"localhost:5000/y:latest", "localhost:5000/y:v2"}},
	} {
		r, err := Open(context.Background(), "oci:"+dir+":"+c.ref)
		if err != nil {
			t.Errorf("%s: %v", c.ref, err)
			continue
		}
		if len(r.Images) != 1 || len(r.Indexes) != 0 || r.Images[0].Digest != c.digest || !slices.Equal(r.Images[0].Tags, c.tags) {
			t.Errorf("%s: %+v", c.ref, r.Images)
		}
	}
	if _, err := Open(context.Background(), "oci:"+dir+":latest"); err == nil || !strings.Contains(err.Error(), "names different images") {
		t.Errorf("a tag of two repositories: %v", err)
	}
	if _, err := Open(context.Background(), "oci:"+dir+":nope"); err == nil || !strings.Contains(err.Error(), "a.io/x:v1") {
		t.Errorf("an unknown name: %v", err)
	}
	if r, err := Open(context.Background(), "oci:"+dir); err != nil || len(r.Images) != 2 {
		t.Errorf("the whole layout: %v", err)
	}
}

// TestBarePaths refuses paths, relative or absolute, existing or not,
// before any registry is asked.
func TestBarePaths(t *testing.T) {
	tmp := t.TempDir()
	writeLayout(t, filepath.Join(tmp, "out"), map[string]any{"latest": image(t, nil)})
	if err := os.WriteFile(filepath.Join(tmp, "image.tar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp)
	for spec, want := range map[string]string{
		"out":                      "did you mean oci:out?",
		"./out":                    "did you mean oci:./out?",
		"out/":                     "did you mean oci:out/?",
		filepath.Join(tmp, "out"):  "did you mean oci:" + filepath.Join(tmp, "out") + "?",
		"image.tar":                "did you mean docker:image.tar?",
		"out:latest":               "did you mean oci:out:latest?",
		"./missing":                "./missing: no such file or directory",
		"../missing/out":           "../missing/out: no such file or directory",
		filepath.Join(tmp, "nope"): "no such file or directory",
		"..":                       "did you mean oci:..?",
	} {
		_, err := Open(context.Background(), spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// TestDockerArchiveTags reports an image saved under two tags once.
func TestDockerArchiveTags(t *testing.T) {
	img := image(t, map[string]string{"k": "v"})
	file := filepath.Join(t.TempDir(), "a.tar")
	t1, _ := name.NewTag("hello:0.1.0")
	t2, _ := name.NewTag("hello:latest")
	if err := tarball.MultiRefWriteToFile(file, map[name.Reference]v1.Image{t1: img, t2: img}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), "docker:"+file)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Images) != 1 || r.Images[0].Digest != digest(t, img) || len(r.Images[0].Tags) != 2 {
		t.Fatalf("images %+v", r.Images)
	}
	var b bytes.Buffer
	r.Print(&b)
	id, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "labels     k=v\n") || !strings.Contains(b.String(), "\n  platform   linux/arm64\n  id         "+id.String()+"\n") {
		t.Errorf("output:\n%s", b.String())
	}
}

// A docker archive cut short, or a file that is no tar, is said to be
// so, with how far it was read, not with the tar reader's bare
// "unexpected EOF".
func TestDockerArchiveCutShort(t *testing.T) {
	img := image(t, map[string]string{"k": "v"})
	dir := t.TempDir()
	whole := filepath.Join(dir, "a.tar")
	tag, _ := name.NewTag("hello:latest")
	if err := tarball.MultiRefWriteToFile(whole, map[name.Reference]v1.Image{tag: img}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	// Where the second entry's header starts: past the first header and
	// its content, padded to a block.
	tr := tar.NewReader(bytes.NewReader(data))
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	second := 512 + (h.Size+511)/512*512
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut in the first entry", data[:512+h.Size/2], "after 1 entries"},
		{"cut in the second header", data[:second+100], "after 1 entries"},
		{"text", []byte("my thesis, not a tar"), "after 0 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".tar")
			if err := os.WriteFile(file, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), "docker:"+file)
			want := "reading the docker archive " + file + ": not a tar, or one cut short: " + tc.want + ", unexpected EOF"
			if err == nil || err.Error() != want {
				t.Errorf("got %v, want %s", err, want)
			}
		})
	}
}

// A docker archive's manifest.json and image configs are refused over
// maxArchiveJSON, found as go-containerregistry finds them (links
// followed), before it reads them whole.
func TestDockerArchiveJSONBounded(t *testing.T) {
	const bound = 4 << 20 // maxArchiveJSON
	big := strings.Repeat(" ", bound) + "[]"
	bigConfig := strings.Repeat(" ", bound) + "{}"
	type entry struct{ name, link, body string }
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"manifest", []entry{{name: "manifest.json", body: big}}, "manifest.json: 4194306 bytes, over 4194304"},
		{"manifest through a link", []entry{{name: "manifest.json", link: "m/big.json"}, {name: "m/big.json", body: big}}, "m/big.json: 4194306 bytes, over 4194304"},
		{"config", []entry{{name: "manifest.json", body: `[{"Config":"c.json","RepoTags":["x:1"],"Layers":[]}]`}, {name: "c.json", body: bigConfig}}, "c.json: 4194306 bytes, over 4194304"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "a.tar")
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			for _, e := range tc.entries {
				h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
				if e.link != "" {
					h = &tar.Header{Name: e.name, Mode: 0o777, Linkname: e.link, Typeflag: tar.TypeSymlink}
				}
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write([]byte(e.body)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), "docker:"+file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A docker archive that is also an OCI layout (pallet's, docker save's
// since Docker 25) is described by the manifests its layout holds: the
// digest is the one the build printed and a push gives, where
// manifest.json alone made go-containerregistry describe a docker
// manifest of its own. Tags are manifest.json's, as docker load sets them.
func TestDockerArchiveLayoutDigest(t *testing.T) {
	img := mutate.ConfigMediaType(mutate.MediaType(image(t, nil), types.OCIManifestSchema1), types.OCIConfigJSON)
	other := mutate.ConfigMediaType(mutate.MediaType(image(t, map[string]string{"k": "v"}), types.OCIManifestSchema1), types.OCIConfigJSON)
	file := filepath.Join(t.TempDir(), "a.tar")
	if err := (&output.DockerArchive{File: file}).Write(context.Background(), []output.Image{
		{Repository: "hello", Tags: []string{"1", "latest"}, Image: img},
		{Repository: "example.com/other", Tags: []string{"2"}, Image: other},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), "docker:"+file)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		digest, mediaType string
		tags              []string
	}
	var gots []got
	for _, im := range r.Images {
		gots = append(gots, got{im.Digest, im.MediaType, im.Tags})
	}
	want := []got{
		{digest(t, img), string(types.OCIManifestSchema1), []string{"hello:1", "hello:latest"}},
		{digest(t, other), string(types.OCIManifestSchema1), []string{"example.com/other:2"}},
	}
	if !reflect.DeepEqual(gots, want) {
		t.Errorf("images\n got %v\nwant %v", gots, want)
	}
	if len(r.Images) == 2 && (len(r.Images[1].Layers) != 1 || r.Images[1].Config.Labels["k"] != "v") {
		t.Errorf("the second image: %+v", r.Images[1])
	}
}

// The layout in a docker archive is read as a layout reader reads one: a
// manifest blob that is not of its digest is refused, not described.
func TestDockerArchiveLayoutBlobChecked(t *testing.T) {
	img := image(t, nil)
	file := filepath.Join(t.TempDir(), "a.tar")
	if err := (&output.DockerArchive{File: file}).Write(context.Background(), []output.Image{{Repository: "hello", Tags: []string{"1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the archive with the manifest blob's content changed,
	// its length kept.
	in, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(in)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "blobs/sha256/"+d.Hex {
			if !bytes.Contains(body, []byte(`"schemaVersion":2`)) {
				t.Fatalf("manifest %s", body)
			}
			body = bytes.Replace(body, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), "docker:"+file)
	if err == nil || !strings.Contains(err.Error(), "blobs/sha256/"+d.Hex+": its content is not of that digest") {
		t.Errorf("got %v, want the manifest blob refused", err)
	}
}

// manifest.json is read from the index as go-containerregistry's
// tarball.LoadManifest reads it, walking the tar: the first entry of the
// name, links followed beside it, what tar.Reader gives of its content
// (none for a directory, whatever its size field), the first JSON value
// of it; and the same errors for one missing or a cycle of links.
func TestDockerArchiveManifestAsLoadManifest(t *testing.T) {
	const list = `[{"Config":"c.json","RepoTags":["x:1"],"Layers":["l.tar"]}]`
	type entry struct {
		name, body string
		typ        byte
		link       string
		size       int64 // the header's, where it is not the body's
	}
	for _, tc := range []struct {
		name    string
		entries []entry
	}{
		{"plain", []entry{{name: "manifest.json", body: list}}},
		{"after others", []entry{{name: "c.json", body: "{}"}, {name: "l.tar", body: strings.Repeat("x", 1000)}, {name: "./manifest.json", body: list}}},
		{"trailing bytes", []entry{{name: "manifest.json", body: list + "\nnot JSON"}}},
		{"first of two", []entry{{name: "manifest.json", body: list}, {name: "manifest.json", body: "[]"}}},
		{"a directory first", []entry{{name: "manifest.json", typ: tar.TypeDir, size: 10}, {name: "manifest.json", body: list}}},
		{"a symlink", []entry{{name: "manifest.json", typ: tar.TypeSymlink, link: "m/x.json"}, {name: "m/x.json", body: list}}},
		{"a hard link", []entry{{name: "m/x.json", body: list}, {name: "manifest.json", typ: tar.TypeLink, link: "m/x.json"}}},
		{"a link up", []entry{{name: "m/manifest.json", body: list}, {name: "manifest.json", typ: tar.TypeSymlink, link: "m/../m/manifest.json"}}},
		{"missing", []entry{{name: "c.json", body: "{}"}}},
		{"dangling", []entry{{name: "manifest.json", typ: tar.TypeSymlink, link: "nowhere"}}},
		{"a cycle", []entry{{name: "manifest.json", typ: tar.TypeSymlink, link: "a"}, {name: "a", typ: tar.TypeSymlink, link: "manifest.json"}}},
		{"not JSON", []entry{{name: "manifest.json", body: "{"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "a.tar")
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			for _, e := range tc.entries {
				h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: e.typ, Linkname: e.link}
				if h.Typeflag == 0 {
					h.Typeflag = tar.TypeReg
				}
				if h.Typeflag != tar.TypeReg {
					h.Size = e.size
				}
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				if h.Typeflag == tar.TypeReg {
					if _, err := tw.Write([]byte(e.body)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			manifestAsLoadManifest(t, file)
		})
	}
}

// manifestAsLoadManifest checks that the index of the tar file reads its
// manifest.json as tarball.LoadManifest does.
func manifestAsLoadManifest(t *testing.T, file string) {
	t.Helper()
	want, wantErr := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := tarFiles(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got, gotErr := blobs.manifest()
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v; LoadManifest gives %v, %v", got, gotErr, want, wantErr)
	}
	if len(want) == 0 && wantErr == nil {
		t.Error("LoadManifest read no entries: nothing compared")
	}
}

// A sparse manifest.json, as GNU tar writes one in either format, is read
// as tar.Reader gives it, holes filled, whether it is then JSON (a hole
// after the JSON) or not (a hole in it, where the archive's bytes, the
// data on either side of the hole, are JSON).
func TestDockerArchiveSparseManifest(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("GNU tar is not installed")
		}
		t.Skip("GNU tar is not installed")
	}
	for _, tc := range []struct {
		name string
		at   map[int64]string // the data, by offset; the rest is holes
		size int64
	}{
		{"hole after", map[int64]string{0: `[{"Config":"c.json","RepoTags":["x:1"]}]`}, 1 << 20},
		{"hole inside", map[int64]string{0: `[{"Config":"c.json",` + strings.Repeat(" ", 4096-20), 64 << 10: `"RepoTags":["x:1"]}]`}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sparseManifest(t, tc.at, tc.size)
		})
	}
}

func sparseManifest(t *testing.T, at map[int64]string, size int64) {
	dir := t.TempDir()
	json := filepath.Join(dir, "manifest.json")
	f, err := os.Create(json)
	if err != nil {
		t.Fatal(err)
	}
	for off, data := range at {
		if _, err := f.WriteAt([]byte(data), off); err != nil {
			t.Fatal(err)
		}
	}
	if size > 0 {
		err = f.Truncate(size)
	}
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"gnu", "posix"} {
		file := filepath.Join(dir, format+".tar")
		if out, err := exec.Command("tar", "--sparse", "--format="+format, "-C", dir, "-cf", file, "manifest.json").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := tarFiles(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := blobs.first["manifest.json"]; !ok || !e.sparse {
			t.Fatalf("%s: manifest.json is not sparse in the tar: %+v", format, e)
		}
		manifestAsLoadManifest(t, file)
	}
}

// appendTar rewrites the tar file with entries after its own, as tar -r
// appends them: name and body, or name "->" a symlink's target.
func appendTar(t *testing.T, file string, entries ...[2]string) {
	t.Helper()
	in, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(in)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
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
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg}
		if target, ok := strings.CutPrefix(e[1], "->"); ok {
			h = &tar.Header{Name: e[0], Mode: 0o777, Linkname: target, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e[1]); h.Typeflag == tar.TypeReg && err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A docker archive holding twice a name that decides which images it
// holds (an appended tar) is refused, naming the archive and the name:
// go-containerregistry reads the first entry of a name, docker load
// (which unpacks the archive) and ctr import (which reads it in one
// pass) the last. ./manifest.json and /manifest.json are manifest.json
// to docker load. A name read through a link counts, and a name nothing
// reads may be there twice.
func TestDockerArchiveNameTwiceRefused(t *testing.T) {
	img := image(t, nil)
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	other := `[{"Config":"blobs/sha256/` + cfg.Hex + `","RepoTags":["other:1"],"Layers":[]}]`
	for _, tc := range []struct {
		name string
		// base is the archive the entries are appended to: pallet's
		// (a layout beside manifest.json), go-containerregistry's
		// tarball package's (manifest.json alone), or none.
		base    string
		entries [][2]string
		want    string // the name refused; none: the archive is read
	}{
		{"manifest.json", "pallet", [][2]string{{"manifest.json", other}}, "manifest.json"},
		{"./manifest.json", "pallet", [][2]string{{"./manifest.json", other}}, "manifest.json"},
		{"/manifest.json", "pallet", [][2]string{{"/manifest.json", other}}, "manifest.json"},
		{"index.json", "pallet", [][2]string{{"index.json", `{"schemaVersion":2,"manifests":[]}`}}, "index.json"},
		{"oci-layout", "pallet", [][2]string{{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`}}, "oci-layout"},
		{"a manifest blob", "pallet", [][2]string{{"blobs/sha256/" + d.Hex, "{}"}}, "blobs/sha256/" + d.Hex},
		{"a layer blob", "pallet", [][2]string{{"blobs/sha256/" + ld.Hex, "x"}}, "blobs/sha256/" + ld.Hex},
		{"a config, no layout", "tarball", [][2]string{{cfg.String(), "{}"}}, cfg.String()},
		{"through a link", "", [][2]string{{"m/x.json", "[]"}, {"m/x.json", "[]"}, {"manifest.json", "->m/x.json"}}, "m/x.json"},
		{"a name nothing reads", "pallet", [][2]string{{"README", "a"}, {"README", "b"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "a.tar")
			switch tc.base {
			case "pallet":
				err = (&output.DockerArchive{File: file}).Write(context.Background(), []output.Image{{Repository: "hello", Tags: []string{"1"}, Image: img}})
			case "tarball":
				tag, _ := name.NewTag("hello:1")
				err = tarball.WriteToFile(file, tag, img)
			default:
				err = os.WriteFile(file, make([]byte, 1024), 0o644) // an empty tar: its two zero blocks
			}
			if err != nil {
				t.Fatal(err)
			}
			appendTar(t, file, tc.entries...)
			r, err := Open(context.Background(), "docker:"+file)
			if tc.want == "" {
				if err != nil || len(r.Images) != 1 || r.Images[0].Digest != d.String() {
					t.Fatalf("got %+v, %v; want the image %s", r, err, d)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "reading the docker archive "+file+": ") || !strings.Contains(err.Error(), " "+tc.want+": the archive holds 2 entries of that name") {
				t.Fatalf("got %v, want %s refused as two entries", err, tc.want)
			}
		})
	}
}

// The config's other fields docker inspect shows are printed when set:
// the stop signal and health check a runtime reads, a base's ONBUILD and
// SHELL, and ArgsEscaped, which says how Windows reads the command line.
func TestPrintsRestOfConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	img, err := mutate.Config(image(t, nil), v1.Config{
		StopSignal: "SIGRTMIN+3",
		Healthcheck: &v1.HealthConfig{
			Test:     []string{"CMD-SHELL", "curl -f http://localhost/ || exit 1"},
			Interval: 30 * time.Second, StartPeriod: 5 * time.Second, Retries: 3,
		},
		Shell:       []string{"powershell", "-Command"},
		OnBuild:     []string{"COPY . /app", "RUN make"},
		ArgsEscaped: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := image(t, nil)
	writeLayout(t, dir, map[string]any{"set": img, "plain": plain})
	r, err := Open(context.Background(), "oci:"+dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	r.Print(&b)
	out := b.String()
	for _, want := range []string{
		"\n  stopsignal SIGRTMIN+3\n",
		"\n  healthcheck [\"CMD-SHELL\",\"curl -f http://localhost/ || exit 1\"] interval 30s start-period 5s retries 3\n",
		"\n  shell      [\"powershell\",\"-Command\"]\n",
		"\n  onbuild    COPY . /app\n             RUN make\n",
		"\n  argsescaped true\n",
	} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("output holds %q %d times, want once (the plain image shows none):\n%s", want, n, out)
		}
	}
}

// TestParseLocation reads each form of reference into the place it
// names, a layout's directory split from the name of its entries at the
// directory that exists.
func TestParseLocation(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "a:b")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]Location{
		"oci:" + dir:                          {Kind: Layout, Path: dir},
		"oci:" + dir + ":localhost:5000/x:v1": {Kind: Layout, Path: dir, Ref: "localhost:5000/x:v1"},
		"docker:" + tmp + "/x.tar":            {Kind: Archive, Path: tmp + "/x.tar"},
		"registry:localhost:5000/x:v1":        {Kind: Registry, Ref: "localhost:5000/x:v1"},
		"localhost:5000/x:v1":                 {Kind: Registry, Ref: "localhost:5000/x:v1"},
	} {
		if got, err := ParseLocation(spec); err != nil || got != want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", spec, got, err, want)
		}
	}
	if _, err := ParseLocation(dir); err == nil || !strings.Contains(err.Error(), "did you mean oci:"+dir+"?") {
		t.Errorf("ParseLocation of a bare directory: %v", err)
	}
	// A prefix with nothing after it names nothing: oci: alone read the
	// working directory as a layout.
	for spec, want := range map[string]string{"oci:": "want oci:DIR", "docker:": "want docker:FILE.tar", "registry:": "want registry:REGISTRY/REPO:TAG"} {
		if _, err := ParseLocation(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLocation(%q): %v, want an error saying %q", spec, err, want)
		}
	}
	// An image named as a directory here is: the refusal says how to
	// name the registry's, which is then read.
	t.Chdir(tmp)
	if err := os.Mkdir("redis", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseLocation("redis:7"); err == nil || !strings.Contains(err.Error(), "did you mean oci:redis:7?") || !strings.Contains(err.Error(), "registry:redis:7 names the registry's image") {
		t.Errorf("ParseLocation of a reference that begins as a directory here: %v", err)
	}
	if got, err := ParseLocation("registry:redis:7"); err != nil || got != (Location{Kind: Registry, Ref: "redis:7"}) {
		t.Errorf("ParseLocation(registry:redis:7) = %+v, %v", got, err)
	}
}
