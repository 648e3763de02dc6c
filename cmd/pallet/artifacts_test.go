package main

import (
	"archive/tar"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// readImageFiles returns path → content (or "-> target" for links, "/"
// for dirs) of every layer pallet added, read from the layout.
func readImageFiles(t *testing.T, dir, platform string) map[string]string {
	t.Helper()
	out := map[string]string{}
	walkImage(t, layoutImage(t, dir, platform), func(h *tar.Header, r io.Reader) {
		switch h.Typeflag {
		case tar.TypeDir:
			out[h.Name] = "/"
		case tar.TypeSymlink:
			out[h.Name] = "-> " + h.Linkname
		default:
			b, _ := io.ReadAll(r)
			out[h.Name] = fmt.Sprintf("%s (%o)", b, h.Mode)
		}
	})
	return out
}

// walkImage calls fn for every entry of every layer of img, in order.
func walkImage(t *testing.T, img v1.Image, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		walkLayer(t, l, fn)
	}
}

// walkLayer calls fn for every entry of the layer l, in order.
// layerLines walks layers, numbered from first, and gives one line for
// each entry: "N name what", name without a trailing slash.
func layerLines(t *testing.T, layers []v1.Layer, first int, what func(*tar.Header) string) []string {
	t.Helper()
	var got []string
	for i, l := range layers {
		walkLayer(t, l, func(h *tar.Header, _ io.Reader) {
			got = append(got, fmt.Sprintf("%d %s %s", first+i, strings.TrimSuffix(h.Name, "/"), what(h)))
		})
	}
	return got
}

func walkLayer(t *testing.T, l v1.Layer, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(h, tr)
	}
}

// layoutImage finds the image for platform in a layout (under an index or not).
func layoutImage(t *testing.T, dir, platform string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := idx.IndexManifest()
	d := m.Manifests[0]
	if d.MediaType.IsImage() {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	child, err := idx.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cm, _ := child.IndexManifest()
	for _, cd := range cm.Manifests {
		if cd.Platform != nil && cd.Platform.OS+"/"+cd.Platform.Architecture == platform {
			img, err := child.Image(cd.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no %s image in %s", platform, dir)
	return nil
}

func TestURLArtifactsAllFormats(t *testing.T) {
	tree := []fixture.File{
		{Name: "pkg-1.0/", Dir: true, Mode: 0o755},
		{Name: "pkg-1.0/bin/", Dir: true, Mode: 0o755},
		{Name: "pkg-1.0/bin/tool", Content: "tool", Mode: 0o700},
		{Name: "pkg-1.0/bin/other", Content: "other", Mode: 0o755},
		{Name: "pkg-1.0/LICENSE", Content: "MIT"},
	}
	files := map[string][]byte{
		"/dl/pkg.tar":     fixture.Tar(tree),
		"/dl/pkg.tgz":     fixture.TarGz(tree),
		"/dl/pkg.tar.xz":  fixture.TarXz(tree),
		"/dl/pkg.tar.zst": fixture.TarZst(tree),
		"/dl/pkg.tar.bz2": fixture.TarBz2(t, tree),
		"/dl/pkg.zip":     fixture.Zip(tree),
		"/dl/plain-amd64": []byte("amd64 file"),
		"/dl/plain-arm64": []byte("arm64 file"),
	}
	srv := fixture.Serve(t, files)
	var arts, places strings.Builder
	formats := []string{"tar", "tgz", "tar.xz", "tar.zst", "tar.bz2", "zip"}
	for _, f := range formats {
		n := strings.ReplaceAll(f, ".", "-")
		fmt.Fprintf(&arts, "  %s:\n    url:\n      url: %s/dl/pkg.%s\n      sha256: %s\n      extract:\n        strip: 1\n        include: [bin/tool, LICENSE]\n",
			n, srv.URL, f, fixture.SHA256(files["/dl/pkg."+f]))
		fmt.Fprintf(&places, "      - artifact: %s\n        dest: /opt/%s/\n", n, n)
	}
	recipe := fmt.Sprintf(`version: 1
artifacts:
%s  plain:
    url:
      url: %s/dl/plain-{{arch}}
      filename: plain.txt
      sha256:
        linux/amd64: %s
        linux/arm64: %s
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
%s      - artifact: plain
        dest: /etc/
`, arts.String(), srv.URL, fixture.SHA256(files["/dl/plain-amd64"]), fixture.SHA256(files["/dl/plain-arm64"]), places.String())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), recipe)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)

	for _, arch := range []string{"amd64", "arm64"} {
		got := readImageFiles(t, out, "linux/"+arch)
		for _, f := range formats {
			n := strings.ReplaceAll(f, ".", "-")
			if got["opt/"+n+"/bin/tool"] != "tool (755)" || got["opt/"+n+"/LICENSE"] != "MIT (644)" {
				t.Errorf("%s: %s files: %v", arch, f, got)
			}
			if _, ok := got["opt/"+n+"/bin/other"]; ok {
				t.Errorf("%s: include did not filter bin/other", f)
			}
		}
		if got["etc/plain.txt"] != arch+" file (644)" {
			t.Errorf("per-platform download: %q", got["etc/plain.txt"])
		}
	}
}

func TestSHA256MismatchWritesNothing(t *testing.T) {
	body := []byte("the real release")
	srv := fixture.Serve(t, map[string][]byte{"/rel.tgz": body})
	wrong := fixture.SHA256([]byte("what the recipe expected"))
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  rel:
    url:
      url: %s/rel.tgz
      sha256: %s
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: rel
        dest: /
`, srv.URL, wrong))
	out := filepath.Join(dir, "out")
	// An earlier output must survive a failed build untouched.
	writeFile(t, filepath.Join(out, "oci-layout"), `{"imageLayoutVersion": "1.0.0"}`)
	writeFile(t, filepath.Join(out, "index.json"), `{"schemaVersion": 2, "manifests": []}`)
	cacheDir := t.TempDir()
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out, "--cache-dir", cacheDir)
	if err == nil {
		t.Fatal("build succeeded with a wrong sha256")
	}
	// Nothing is cached under either digest, and no artifact was stored.
	for _, sum := range []string{wrong, fixture.SHA256(body)} {
		if _, err := os.Stat(filepath.Join(cacheDir, "blobs", "sha256", sum)); err == nil {
			t.Errorf("cache holds a blob %s after a mismatch", sum)
		}
	}
	for _, sub := range []string{"blobs/sha256", "artifacts", "layers", "tmp"} {
		if left, _ := os.ReadDir(filepath.Join(cacheDir, sub)); len(left) != 0 {
			t.Errorf("cache %s holds %d entries after a failed download", sub, len(left))
		}
	}
	for _, want := range []string{"artifact rel", srv.URL + "/rel.tgz", "expected " + wrong, "got " + fixture.SHA256(body)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 2 || entries[0].Name() != "index.json" || entries[1].Name() != "oci-layout" {
		t.Errorf("output dir changed: %v", entries)
	}
	siblings, _ := os.ReadDir(dir)
	if len(siblings) != 2 {
		t.Errorf("temporary files left beside the output: %v", siblings)
	}
}

func TestHostileArchiveIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []fixture.File
		want  string
	}{
		{"dotdot", []fixture.File{{Name: "../../etc/passwd", Content: "x"}}, "../../etc/passwd"},
		{"absolute", []fixture.File{{Name: "/etc/passwd", Content: "x"}}, "/etc/passwd"},
		{"symlink escape", []fixture.File{{Name: "evil", Link: "../../../etc"}}, "evil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fixture.TarGz(tc.files)
			srv := fixture.Serve(t, map[string][]byte{"/evil.tgz": body})
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  evil:
    url:
      url: %s/evil.tgz
      sha256: %s
      extract: {}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: evil
        dest: /
`, srv.URL, fixture.SHA256(body)))
			_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
			// The archive is named by its URL, not by the temporary file
			// it was downloaded to.
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "artifact evil") || !strings.Contains(err.Error(), "extract "+srv.URL+"/evil.tgz: ") {
				t.Errorf("got %v, want an error naming the artifact, its URL and %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Error("output written for a refused archive")
			}
		})
	}
}

// Bases come from an OCI layout on disk and from a registry; pallet's
// layers go on top and the base's config is kept where not overridden.
func TestBases(t *testing.T) {
	dir := t.TempDir()
	baseOut := filepath.Join(dir, "base")
	writeFile(t, filepath.Join(dir, "files", "os-release"), "ID=fixture\n")
	writeFile(t, filepath.Join(dir, "files", "app"), "app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  osrel:
    local:
      path: files/os-release
  app:
    local:
      path: files/app
images:
  base:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: osrel
        dest: /etc/os-release
    config:
      env: [PATH=/usr/bin, LANG=C]
      workdir: /srv
  app:
    tags: [v1]
    base: "{{BASE}}"
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: app
        dest: /usr/bin/app
        mode: "0755"
    config:
      env: [PATH=/usr/local/bin:/usr/bin]
      entrypoint: [/usr/bin/app]
args:
  BASE: scratch
`)
	recipe := filepath.Join(dir, "pallet.yaml")
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "base", "-o", "oci:"+baseOut)
	reg := testregistry.Start(t, nil)
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "base", "-o", "registry:"+reg.Host+"/base:latest")

	baseImg := layoutImage(t, baseOut, "linux/arm64")
	baseLayers, _ := baseImg.Layers()
	for _, base := range []string{"oci:base", "oci:" + baseOut + ":latest", reg.Host + "/base:latest"} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", recipe, "--image", "app", "--arg", "BASE="+base, "-o", "oci:"+out)
		img := layoutImage(t, out, "linux/arm64")
		layers, _ := img.Layers()
		if len(layers) != len(baseLayers)+1 {
			t.Fatalf("base %s: %d layers, want %d", base, len(layers), len(baseLayers)+1)
		}
		bd, _ := baseLayers[0].Digest()
		d, _ := layers[0].Digest()
		if bd != d {
			t.Errorf("base %s: first layer %s, want the base's %s", base, d, bd)
		}
		cf, _ := img.ConfigFile()
		env := append([]string(nil), cf.Config.Env...)
		sort.Strings(env)
		if strings.Join(env, " ") != "LANG=C PATH=/usr/local/bin:/usr/bin" || cf.Config.WorkingDir != "/srv" || cf.Architecture != "arm64" {
			t.Errorf("base %s: config %+v", base, cf.Config)
		}
		files := readImageFiles(t, out, "linux/arm64")
		if files["etc/os-release"] == "" || files["usr/bin/app"] != "app\n (755)" {
			t.Errorf("base %s: files %v", base, files)
		}
	}
	// A base for the wrong platform is refused.
	ref, _ := name.ParseReference(reg.Host + "/amd64only:latest")
	only := layoutImage(t, baseOut, "linux/amd64")
	if err := remote.Write(ref, only); err != nil {
		t.Fatal(err)
	}
	_, err := pallet(t, "build", "-q", "-f", recipe, "--image", "app", "--platform", "linux/arm64", "--arg", "BASE="+ref.String(), "-o", "oci:"+filepath.Join(dir, "x"))
	if err == nil || !strings.Contains(err.Error(), "linux/arm64") {
		t.Errorf("wrong-platform base: %v", err)
	}
}

// Base layers pulled from a repository of the registry being pushed to are
// mounted from it, not uploaded again, even when served from the local
// base cache.
func TestPushMountsBaseLayers(t *testing.T) {
	var mu sync.Mutex
	var mounts, uploads int
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/blobs/uploads/") {
				mu.Lock()
				if r.URL.Query().Get("mount") != "" && strings.HasPrefix(r.URL.Path, "/v2/apps/") {
					mounts++
				} else if strings.HasPrefix(r.URL.Path, "/v2/apps/") {
					uploads++
				}
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "files", "big"), strings.Repeat("base layer content\n", 1000))
	writeFile(t, filepath.Join(dir, "files", "app"), "app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
args:
  BASE: scratch
artifacts:
  big:
    local: {path: files/big}
    licenses: none
  app:
    local: {path: files/app}
    licenses: none
images:
  base:
    base: scratch
    platforms: linux/amd64
    files: [{artifact: big, dest: /srv/}]
  app:
    base: "{{BASE}}"
    platforms: linux/amd64
    files: [{artifact: app, dest: /usr/bin/app}]
`)
	recipe := filepath.Join(dir, "pallet.yaml")
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "base", "-o", "registry:"+reg.Host+"/base/os:1")
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "app", "--arg", "BASE="+reg.Host+"/base/os:1", "-o", "registry:"+reg.Host+"/apps/app:1")
	if mounts != 1 {
		t.Errorf("%d base layer(s) mounted into apps/app, want 1 (and %d uploaded)", mounts, uploads)
	}
}

// Licences a recipe names are placed as named; an artifact without any is
// a warning by default, at the artifact's line, and the build goes on.
func TestLicenses(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "vendored/bin/tool"), "a tool")
	writeFile(t, filepath.Join(dir, "vendored/NOTICE"), "notice text")
	writeFile(t, filepath.Join(dir, "vendored/legal/COPYRIGHT.txt"), "copyright text")
	writeFile(t, filepath.Join(dir, "vendored/LICENSE"), "not named, so not taken")
	writeFile(t, filepath.Join(dir, "bare/tool2"), "no licence here")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  vendored:
    local:
      path: vendored
    licenses: [NOTICE, legal/COPYRIGHT.txt]
  bare:
    local:
      path: bare
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - artifact: vendored
        dest: /opt/vendored/
      - artifact: bare
        dest: /opt/bare/
`)
	out := filepath.Join(dir, "out")
	log := mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	if !strings.Contains(log, "warning: "+filepath.Join(dir, "pallet.yaml")+":8:5: artifact bare (linux/amd64, local): no licence file found") {
		t.Errorf("no warning for the artifact without a licence:\n%s", log)
	}
	files := readImageFiles(t, out, "linux/amd64")
	if files["LICENSES/vendored/NOTICE"] != "notice text (644)" || files["LICENSES/vendored/legal/COPYRIGHT.txt"] != "copyright text (644)" {
		t.Errorf("named licences not placed: %v", files)
	}
	if _, ok := files["LICENSES/vendored/LICENSE"]; ok {
		t.Error("an unnamed LICENSE was taken although the recipe names its licences")
	}
	for p := range files {
		if strings.HasPrefix(p, "LICENSES/bare/") {
			t.Errorf("licence placed for bare: %s", p)
		}
	}
	rec := readRecord(t, out+".record.json")
	for _, a := range rec.Artifacts {
		if a.Name == "vendored" && strings.Join(a.Licenses, ",") != "NOTICE,legal/COPYRIGHT.txt" {
			t.Errorf("record licences %v", a.Licenses)
		}
	}
}

// A failure found while building points at the recipe line that asked for
// the work, like a parse error does.
func TestBuildErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "etc/a.txt"), "a")
	writeFile(t, filepath.Join(dir, "bin/tool"), string(fixture.ELF(elf.EM_X86_64, "tool")))
	writeFile(t, filepath.Join(dir, "rel.tar"), string(fixture.Tar([]fixture.File{{Name: "etc/b.txt", Content: "b", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "empty.tar"), string(fixture.Tar(nil)))
	const recipe = `version: 1
artifacts:
  etc:
    local:
      path: etc
    licenses: none
  missing:
    local:
      path: not-here
    licenses: none
  archive:
    local:
      path: rel.tar
      extract:
        include: [bin/*]
    licenses: none
  tool:
    local:
      path: bin
    licenses: none
  deep:
    local:
      path: rel.tar
      extract:
        strip: 3
    licenses: none
  empty:
    local:
      path: empty.tar
      extract: {strip: 0}
    licenses: none
images:
  app:
    base: BASE
    platforms: PLATFORM
    files:
      - artifact: etc
        dest: /etc/
      - artifact: ARTIFACT
        dest: /opt/
`
	for _, tc := range []struct {
		name, base, platform, artifact string
		line                           int
		want                           string
	}{
		{"Windows base on Linux", "windows-hostprocess-scratch", "linux/amd64", "etc", 34, "image app (linux/amd64): windows-hostprocess-scratch is a Windows base"},
		{"missing layout", "oci:./no-layout", "linux/amd64", "etc", 34, "not an OCI image layout"},
		{"missing local path", "scratch", "linux/amd64", "missing", 9, "artifact missing (linux/amd64, local): local path"},
		{"include matches nothing", "scratch", "linux/amd64", "archive", 15, `include pattern(s) matched no entry: "bin/*"`},
		{"platform check", "scratch", "linux/arm64", "tool", 39, "image app (linux/arm64): artifact tool"},
		{"strip too deep", "scratch", "linux/amd64", "deep", 25, "rel.tar: nothing is left once extract.strip removes 3 leading path component(s)"},
		{"empty archive", "scratch", "linux/amd64", "empty", 28, "empty.tar: the archive holds nothing to place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := strings.NewReplacer("BASE", tc.base, "PLATFORM", tc.platform, "ARTIFACT", tc.artifact).Replace(recipe)
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			writeFile(t, file, r)
			_, err := pallet(t, "build", "-q", "-f", file, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
			prefix := fmt.Sprintf("%s:%d: ", file, tc.line)
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q...%q", err, prefix, tc.want)
			}
		})
	}
}

// An artifact's tree is let go once the last layer placing it is made
// (internal/build's placedAll): an artifact placed by several layers, of
// several platforms, and in one of them twice, is in every place asked.
func TestArtifactPlacedByManyLayers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "data", "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, "data", "sub", "b.txt"), "b\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  data:
    local:
      path: ./data
    licenses: none
images:
  many:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - artifact: data
        dest: /one/
      - artifact: data
        dest: /two/
      - artifact: data
        dest: /three/
        layer: last
      - artifact: data
        path: sub
        dest: /four/
        layer: last
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+out, "-q")
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		files := readImageFiles(t, out, p)
		for _, name := range []string{"one/a.txt", "two/a.txt", "three/a.txt", "one/sub/b.txt", "two/sub/b.txt", "three/sub/b.txt", "four/b.txt"} {
			if _, ok := files[name]; !ok {
				t.Errorf("%s: %s is not in the image; it holds %v", p, name, slices.Sorted(maps.Keys(files)))
			}
		}
		layers, err := layoutImage(t, out, p).Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 3 {
			t.Errorf("%s: %d layers, want 3", p, len(layers))
		}
	}
}

// A placement's path that names nothing in the artifact is blamed on the
// line it was written on, with the name the artifact has for it.
func TestPathNotInArtifactNamesItsLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "Hello.txt"), "data\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  file:
    local: {path: in}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: file
        dest: /etc/
        path: hello.txt
`)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	want := recipe + ":13: image app (linux/amd64): path hello.txt: not in the artifact, or an empty directory (the artifact has Hello.txt)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// A licence a recipe names that extract.strip removed from the archive's
// top is said at the licenses line, with what strip took and what to do.
func TestStrippedLicenceNamesItsLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cni.tgz"), string(fixture.TarGz([]fixture.File{
		{Name: "LICENSE", Content: "Apache-2.0\n"},
		{Name: "cni/", Dir: true, Mode: 0o755},
		{Name: "cni/host-local", Content: "bin\n", Mode: 0o755},
	})))
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  cni:
    local: {path: cni.tgz, extract: {strip: 1}}
    licenses: [LICENSE]
    check: false
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: cni
        dest: /opt/cni/bin/
`)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	want := recipe + `:5: artifact cni (linux/amd64, local): licence file "LICENSE" not found in the artifact; extract.strip: 1 removed the archive's LICENSE`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v\nwant %s...", err, want)
	}
	// What the error says to do builds, with the licence.
	writeFile(t, recipe, `version: 1
artifacts:
  cni:
    local: {path: cni.tgz, extract: {}}
    licenses: [LICENSE]
    check: false
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: cni
        path: cni/
        dest: /opt/cni/bin/
`)
	out := filepath.Join(dir, "out2")
	if _, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+out); err != nil {
		t.Fatalf("as the error says: %v", err)
	}
	files := readImageFiles(t, out, "linux/amd64")
	for f, want := range map[string]string{"opt/cni/bin/host-local": "bin\n (755)", "LICENSES/cni/LICENSE": "Apache-2.0\n (644)"} {
		if files[f] != want {
			t.Errorf("%s holds %q, want %q: %v", f, files[f], want, slices.Sorted(maps.Keys(files)))
		}
	}
}

// A licence a recipe names is blamed on the licenses line: one that can
// name no file when the recipe is read, one the artifact lacks when it is
// built, with the name quoted, as an empty one would read as nothing.
func TestLicenceNamesItsLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "data.txt"), "data\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	for licences, want := range map[string]string{
		`[""]`:            `:5: artifact file: licence "": names no file`,
		`[COPYING, ../x]`: `:5: artifact file: licence "../x": path "../x" leaves the tree (contains ..)`,
		`[COPYING]`:       `:5: artifact file (linux/amd64, local): licence file "COPYING" not found in the artifact`,
	} {
		writeFile(t, recipe, `version: 1
artifacts:
  file:
    local: {path: in}
    licenses: `+licences+`
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: file
        dest: /etc/
`)
		_, err := pallet(t, "build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
		if err == nil || err.Error() != recipe+want {
			t.Errorf("licenses: %s: got %v\nwant %s", licences, err, recipe+want)
		}
	}
}

// An artifact placed by two layers of each of four images, each for two
// platforms, is whole in every layer: the last placement takes its
// tree's entries (tree.Move) rather than copying them, and no other may
// find them gone, whichever image or platform comes last.
func TestArtifactPlacedManyTimesWhole(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		writeFile(t, filepath.Join(dir, "files", "d", fmt.Sprintf("f%02d", i)), fmt.Sprintf("file %d\n", i))
	}
	var imgs strings.Builder
	for i := range 4 {
		fmt.Fprintf(&imgs, "  img%d:\n    base: scratch\n    platforms: [linux/amd64, linux/arm64]\n    files:\n      - {artifact: tree, dest: /a/, layer: one}\n      - {artifact: tree, dest: /b/, layer: two}\n", i)
	}
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, "version: 1\nartifacts:\n  tree:\n    local:\n      path: files\nimages:\n"+imgs.String())
	one := filepath.Join(t.TempDir(), "one")
	mustPallet(t, "build", "-q", "-f", recipe, "--image", "img0", "-o", "oci:"+one)
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		files := readImageFiles(t, one, p)
		for _, d := range []string{"a", "b"} {
			for j := range 50 {
				if got := files[fmt.Sprintf("%s/d/f%02d", d, j)]; !strings.HasPrefix(got, fmt.Sprintf("file %d\n", j)) {
					t.Fatalf("%s: %s/d/f%02d = %q", p, d, j, got)
				}
			}
		}
	}
	want := layoutDigests(t, one)
	// All four at once, their layers made side by side: each image the
	// same as img0's alone.
	all := filepath.Join(t.TempDir(), "all")
	mustPallet(t, "build", "-q", "-f", recipe, "--no-cache", "-o", "oci:"+all)
	got := layoutDigests(t, all)
	if len(want) != 1 || len(got) != 4 {
		t.Fatalf("index.json lists %v alone and %v together", want, got)
	}
	for _, d := range got {
		if d != want[0] {
			t.Errorf("an image built with the others is %s, alone %s", d, want[0])
		}
	}
}

// layoutDigests are the digests index.json lists in the layout at dir.
func layoutDigests(t *testing.T, dir string) []string {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range m.Manifests {
		out = append(out, d.Digest.String())
	}
	return out
}
