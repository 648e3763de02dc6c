package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/layer"
)

// dfImage is the single image of a layout pallet wrote.
// dfLayers builds dir/Dockerfile into a layout and returns its image's
// layers.
func dfLayers(t *testing.T, dir string) []v1.Layer {
	t.Helper()
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	return layers
}

func dfImage(t *testing.T, dir string) v1.Image {
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
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsImage() {
		t.Fatalf("%s: want one image, got %+v", dir, m.Manifests)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// sameImageFiles is one small image written both ways: the recipe names
// its artifacts as the Dockerfile front end does (the context path, made
// a valid name) and its empty "workdir" directory stands for the layer
// WORKDIR makes. The COPY --chown goes under /usr/local, which the COPY
// before it made: the directories a COPY --chown makes are its owner's,
// a recipe placement's are 0:0.
var sameImageFiles = map[string]string{
	"bin/hello":      "#!/bin/sh\necho hello\n",
	"etc/hello.conf": "greeting = hi\n",
	"etc/more/x.txt": "x\n",
	"Dockerfile": `# The same image as pallet.yaml
FROM scratch
COPY --chmod=0755 bin/hello /usr/local/bin/hello
COPY --chown=10:20 etc /usr/local/hello/
ENV GREETING=hi
WORKDIR /data
USER 1000
LABEL org.opencontainers.image.title=hello org.opencontainers.image.version=1.0
EXPOSE 8080
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/hello"]
CMD ["--greet"]
`,
	"pallet.yaml": `version: 1
artifacts:
  bin-hello:
    local: {path: ./bin/hello}
    licenses: none
  etc:
    local: {path: ./etc}
    licenses: none
  workdir:
    local: {path: ./empty}
    licenses: none
images:
  hello:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: bin-hello
        dest: /usr/local/bin/hello
        mode: "0755"
      - artifact: etc
        dest: /usr/local/hello/
        owner: "10:20"
      - artifact: workdir
        dest: /data/
    config:
      entrypoint: [/usr/local/bin/hello]
      cmd: [--greet]
      env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", GREETING=hi]
      workdir: /data
      user: "1000"
      labels: {org.opencontainers.image.title: hello, org.opencontainers.image.version: "1.0"}
      ports: [8080/tcp]
      stopSignal: SIGINT
`,
}

// The same image described by a recipe and by a Dockerfile has the same
// digest: same layers, same history, same config.
func TestDockerfileSameDigestAsRecipe(t *testing.T) {
	dir := t.TempDir()
	for p, c := range sameImageFiles {
		writeFile(t, filepath.Join(dir, p), c)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, epoch := range []string{"", "1700000000"} {
		t.Run("SOURCE_DATE_EPOCH="+epoch, func(t *testing.T) {
			t.Setenv("SOURCE_DATE_EPOCH", epoch)
			fromRecipe, fromDockerfile := filepath.Join(t.TempDir(), "r"), filepath.Join(t.TempDir(), "d")
			mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+fromRecipe)
			mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+fromDockerfile)
			r, d := dfImage(t, fromRecipe), dfImage(t, fromDockerfile)
			rc, _ := r.ConfigFile()
			dc, _ := d.ConfigFile()
			if !reflect.DeepEqual(rc.History, dc.History) {
				t.Errorf("history differs:\nrecipe     %+v\ndockerfile %+v", rc.History, dc.History)
			}
			if !reflect.DeepEqual(rc.Config, dc.Config) {
				rj, _ := json.Marshal(rc.Config)
				dj, _ := json.Marshal(dc.Config)
				t.Errorf("config differs:\nrecipe     %s\ndockerfile %s", rj, dj)
			}
			if want := "pallet: place workdir /data/"; len(dc.History) != 3 || dc.History[2].CreatedBy != want {
				t.Errorf("history %+v, want 3 layers, the last %q", dc.History, want)
			}
			if epoch != "" && dc.Created.Unix() != 1700000000 {
				t.Errorf("created %v", dc.Created)
			}
			rd, _ := r.Digest()
			dd, _ := d.Digest()
			if rd != dd {
				t.Errorf("digest from the recipe %s, from the Dockerfile %s", rd, dd)
			}
		})
	}
	// The epoch as a build arg, as buildx takes it, gives the same image.
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	viaEnv := filepath.Join(t.TempDir(), "env")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+viaEnv)
	t.Setenv("SOURCE_DATE_EPOCH", "")
	viaArg := filepath.Join(t.TempDir(), "arg")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "--arg", "SOURCE_DATE_EPOCH=1700000000", "-o", "oci:"+viaArg)
	if a, b := layoutIndex(t, viaEnv).Manifests[0].Digest, layoutIndex(t, viaArg).Manifests[0].Digest; a != b {
		t.Errorf("epoch from the environment gives %s, from --arg %s", a, b)
	}
}

// The Dockerfile form of the Antrea example, built from stand-ins of the
// files a buildx user would have made beforehand (Go binaries, the CNI
// plugin, Open vSwitch unpacked), gives valid Windows layers with the
// files where the recipe puts them.
func TestDockerfileAntreaWindows(t *testing.T) {
	dir := filepath.Dir(copyExample(t, "antrea-windows"))
	pre := filepath.Join(dir, "dockerfile")
	// A checkout where docs/dockerfile.md's steps were followed holds
	// their outputs there (ignored by git, copied with the example):
	// this test makes its own.
	for _, made := range []string{"bin", "cni", "openvswitch"} {
		if err := os.RemoveAll(filepath.Join(pre, made)); err != nil {
			t.Fatal(err)
		}
	}
	for _, exe := range []string{"antrea-agent", "antctl", "antrea-cni"} {
		writeFile(t, filepath.Join(pre, "bin", exe+".exe"), string(fixture.PE(fixture.PEAMD64, "stand-in for "+exe+" v2.2.0\n")))
	}
	releases := fixture.AntreaReleases()
	unpack := func(name string, data []byte, f archive.Format, into string, include []string) {
		src := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(into, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := archive.Extract(context.Background(), src, f, into, archive.Options{Include: include}); err != nil {
			t.Fatal(err)
		}
	}
	unpack("cni.tgz", releases[fixture.AntreaCNIPath], archive.TarGzip, filepath.Join(pre, "cni"), []string{"host-local.exe"})
	ovs := filepath.Join(t.TempDir(), "ovs")
	unpack("ovs.zip", releases[fixture.AntreaOVSPath], archive.Zip, ovs, nil)
	if err := os.Rename(filepath.Join(ovs, "openvswitch"), filepath.Join(pre, "openvswitch")); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	checkWindowsLayout(t, out, "")
	img := dfImage(t, out)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "windows" || cf.Architecture != "amd64" || cf.OSVersion != "" {
		t.Errorf("platform %s/%s os.version %q", cf.OS, cf.Architecture, cf.OSVersion)
	}
	if len(cf.Config.Env) != 1 || !strings.HasPrefix(cf.Config.Env[0], `PATH=C:\Windows\system32;C:\Windows;C:\Windows\System32\WindowsPowerShell\v1.0\;`) || !strings.HasSuffix(cf.Config.Env[0], `C:\openvswitch\usr\sbin`) {
		t.Errorf("env %q: the backslashes must survive (escape=`)", cf.Config.Env)
	}
	if cf.Config.Labels["org.opencontainers.image.version"] != "v2.2.0" {
		t.Errorf("labels %v", cf.Config.Labels)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 6 || len(cf.History) != 6 || cf.History[0].CreatedBy != "pallet: windows-hostprocess-scratch" {
		t.Fatalf("%d layers, history %+v: want the base's and one per COPY", len(layers), cf.History)
	}
	var files []string
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if i == 0 {
			_, err = layer.VerifyWindowsBase(bytes.NewReader(buf.Bytes()))
		} else {
			_, err = layer.VerifyWindows(bytes.NewReader(buf.Bytes()))
		}
		if err != nil {
			t.Fatalf("layer %d (%s): %v", i, cf.History[i].CreatedBy, err)
		}
		tr := tar.NewReader(&buf)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg && i > 0 {
				files = append(files, strings.TrimPrefix(h.Name, "Files/"))
			}
		}
	}
	for _, want := range []string{
		"k/antrea/bin/antctl.exe", "k/antrea/bin/antrea-agent.exe", "k/antrea/cni/antrea.exe", "k/antrea/cni/host-local.exe",
		"k/antrea/Install-OVS.ps1",
		"openvswitch/usr/bin/ovs-vsctl.exe", "openvswitch/usr/sbin/ovs-vswitchd.exe", "openvswitch/usr/bin/libssl-3-x64.dll",
		"openvswitch/driver/ovsext.inf", "openvswitch/LICENSE",
	} {
		if !slices.Contains(files, want) {
			t.Errorf("%s missing from the layers (have %v)", want, files)
		}
	}
	for _, f := range files {
		if strings.Contains(f, "win-bridge") || strings.HasPrefix(f, "dockerfile/") || f == "k/antrea/bin/antrea-cni.exe" {
			t.Errorf("%s placed: only what the COPY lines name goes in", f)
		}
	}
}

// The Dockerfile front end is chosen by the file's name, and the flags
// that only make sense for a recipe are refused for it.
func TestDockerfileFlags(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app.Dockerfile"), "FROM scratch AS one\nFROM scratch AS two\nRUN make\n")
	df := filepath.Join(dir, "app.Dockerfile")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "x=local"}, "--mode and --modes choose the modes of a recipe's artifacts"},
		{[]string{"--image", "one", "--image", "two"}, "a Dockerfile builds one stage"},
		{[]string{"--arg", "NOPE=1"}, "declares no ARG NOPE"},
		{nil, "app.Dockerfile:3: RUN is not supported"},
		{[]string{"--image", "three"}, `target stage "three"`},
	} {
		args := append([]string{"build", "-q", "--no-cache", "-f", df, "-o", "oci:" + filepath.Join(t.TempDir(), "o")}, tc.args...)
		if _, err := pallet(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// --image picks the target stage; the unreached RUN does not matter.
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", df, "--image", "one", "-o", "oci:"+out)
	if m := layoutIndex(t, out); len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "latest" {
		t.Errorf("index %+v", m)
	}
}

// What fails while building names the Dockerfile line that asked for it.
func TestDockerfileBuildErrorsNameTheLine(t *testing.T) {
	srv := fixture.Serve(t, map[string][]byte{"/tool.bin": []byte("the tool\n")})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tool"), string(fixture.ELF(elf.EM_X86_64, "linux tool")))
	bad := strings.Repeat("0", 64)
	refusedDockerfiles(t, dir, []dockerfileRefusal{
		{"FROM --platform=windows/amd64 windows-hostprocess-scratch\n\nCOPY tool /bin/\n", "Dockerfile:3: "},
		{"FROM scratch\nADD --checksum=sha256:" + bad + " " + srv.URL + "/tool.bin /bin/\n", "Dockerfile:2: "},
	})
	// The same download with its right digest is placed 0600, as BuildKit does.
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD --checksum=sha256:"+fixture.SHA256([]byte("the tool\n"))+" "+srv.URL+"/tool.bin /bin/\n")
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	found := false
	walkLayer(t, layers[0], func(h *tar.Header, _ io.Reader) {
		if h.Name == "bin/tool.bin" {
			found = true
			if h.Mode != 0o600 {
				t.Errorf("mode %o, want 600", h.Mode)
			}
		}
	})
	if !found {
		t.Error("bin/tool.bin not in the layer")
	}
}

// A later COPY replaces a file an earlier one put, as in docker build
// (a recipe refuses the same).
func TestDockerfileLaterCopyReplaces(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "one", "f"), "one\n")
	writeFile(t, filepath.Join(dir, "two", "f"), "two\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nCOPY one/f /f\nCOPY two/f /f\n")
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "Dockerfile"), "--no-cache", "-o", "oci:"+out)
	var last string
	walkImage(t, layoutImage(t, out, "linux/amd64"), func(h *tar.Header, r io.Reader) {
		if h.Name == "f" {
			b, _ := io.ReadAll(r)
			last = string(b)
		}
	})
	if last != "two\n" {
		t.Errorf("the last layer's /f is %q, want the second COPY's", last)
	}
}

// A Dockerfile's context may hold the output when .dockerignore leaves
// it out: the next build does not read it back. Without that, the output
// would be copied into the next image, and is refused.
func TestOutputInsideIgnoredContext(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nCOPY . /ctx/\n")
	writeFile(t, filepath.Join(dir, "app.txt"), "app")
	out := filepath.Join(dir, "out")
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	if err == nil || !strings.Contains(err.Error(), "the next build would read it back") {
		t.Fatalf("an output inside the context, not ignored: %v", err)
	}
	// A context the ignore file filters, but not of the output, is an
	// input all the same.
	writeFile(t, filepath.Join(dir, ".dockerignore"), "Dockerfile\n")
	_, err = pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	if err == nil || !strings.Contains(err.Error(), "the next build would read it back") {
		t.Fatalf("an output inside a filtered context, not ignored: %v", err)
	}
	writeFile(t, filepath.Join(dir, ".dockerignore"), "out*\nDockerfile\n")
	for range 2 {
		mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	}
	walkImage(t, dfImage(t, out), func(h *tar.Header, _ io.Reader) {
		if strings.HasPrefix(h.Name, "ctx/out") {
			t.Errorf("the output reached the image: %s", h.Name)
		}
	})
}

// Links inside a copied directory are copied as they are, absolute ones
// and ones above the directory included, as BuildKit copies them.
func TestCopyKeepsLinksInsideDirectories(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root", "bin", "busybox"), "x")
	for link, target := range map[string]string{"ls": "/bin/busybox", "up": "../../elsewhere"} {
		if err := os.Symlink(target, filepath.Join(dir, "root", "bin", link)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nCOPY root/ /\n")
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	got := map[string]string{}
	walkImage(t, dfImage(t, out), func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeSymlink {
			got[h.Name] = h.Linkname
		}
	})
	if got["bin/ls"] != "/bin/busybox" || got["bin/up"] != "../../elsewhere" {
		t.Errorf("links in the layer: %v", got)
	}
}

// The directories a COPY --chown makes are its owner's, and those a
// WORKDIR makes the USER's; those already there keep theirs: BuildKit
// v0.29 writes these very layers.
func TestDockerfileChownMakesParents(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "y"), "y\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nCOPY g /a/g\nCOPY --chown=1000:1000 f /a/b/c/\nCOPY --chown=5:5 d/ /a/\nUSER 7\nWORKDIR /w/x\n")
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, l := range layers {
		walkLayer(t, l, func(h *tar.Header, _ io.Reader) {
			if h.Typeflag == tar.TypeDir {
				got = append(got, fmt.Sprintf("%d %s %d:%d", i, strings.TrimSuffix(h.Name, "/"), h.Uid, h.Gid))
			}
		})
	}
	want := []string{"0 a 0:0", "1 a 0:0", "1 a/b 1000:1000", "1 a/b/c 1000:1000", "2 a 0:0", "2 a/sub 5:5", "3 w 7:7", "3 w/x 7:7"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directories by layer\n got %q\nwant %q", got, want)
	}
}

// A file copied onto a link that leads nowhere, one the base holds or an
// earlier COPY made, is written where the link leads, as BuildKit's copy
// writes it (fsutil's Copy resolves its destination with continuity's
// RootPath, the last element too, and makes the parents it needs):
// an absolute target from the image's root, a relative one from the
// link's directory, and one that climbs out of the root stops at it.
func TestDockerfileCopyOntoDanglingLink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	for link, target := range map[string]string{"x": "/nowhere/deep/f", "lib/y": "../opt/y", "z": "../../../z2", "w": "m/n/w", "q": "x/../q2"} {
		if err := os.MkdirAll(filepath.Join(dir, "root", filepath.Dir(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "root", link)); err != nil {
			t.Fatal(err)
		}
	}
	dfBase(t, dir)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY f /x\nCOPY f /lib/y\nCOPY f /z\nCOPY --chown=5:5 --chmod=640 f /w\nCOPY f /q\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers[1:], 2, func(h *tar.Header) string { return fmt.Sprintf("%o %d:%d", h.Mode, h.Uid, h.Gid) })
	// The directories made on the way are --chown's and --chmod's, as
	// BuildKit's MkdirAll makes them.
	want := []string{"2 nowhere 755 0:0", "2 nowhere/deep 755 0:0", "2 nowhere/deep/f 644 0:0", "3 opt 755 0:0", "3 opt/y 644 0:0", "4 z2 644 0:0",
		"5 m 640 5:5", "5 m/n 640 5:5", "5 m/n/w 640 5:5",
		// A target's ".." is taken lexically (continuity's walkLinks
		// joins it to the link's directory and cleans it): x/../q2 is
		// /q2, not beside where x leads.
		"6 q2 644 0:0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers 2 to 6 hold\n got %q\nwant %q", got, want)
	}
}

// On a base pallet reads only when it builds, a COPY that needs a
// directory where the base, or a COPY into it, put a file is refused at
// its line, as BuildKit's copy fails there (not a directory): the layer
// would replace the file with a directory.
func TestDockerfileDirectoryOverBaseFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root", "etc", "passwd"), "root:x:0:0::/root:/bin/sh\n")
	writeFile(t, filepath.Join(dir, "d", "x"), "x\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	dfBase(t, dir)
	refusedDockerfiles(t, dir, []dockerfileRefusal{
		{"FROM oci:base\nCOPY d/ /etc/passwd\n", "Dockerfile:2: "},
		{"FROM oci:base\nCOPY d/ /etc/passwd\n", "/etc/passwd: the image holds a file there, and a directory placed there needs it to be a directory"},
		// /opt/k is a file once the base is read: it holds no directory there.
		{"FROM oci:base\nCOPY f /opt/k\nCOPY f /opt/k/\n", "Dockerfile:3: "},
		{"FROM oci:base\nCOPY f /opt/k\nCOPY f /opt/k/\n", "/opt/k: the image holds a file there, and a directory placed there needs it to be a directory"},
	})
	// A file over the base's file replaces it.
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY f /etc/passwd\n")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
}

// dockerfileRefusal is a Dockerfile and what its build's error says.
type dockerfileRefusal struct{ df, want string }

// refusedDockerfiles builds each Dockerfile in dir, where its sources
// are, and checks that the build fails saying what the case wants.
func refusedDockerfiles(t *testing.T, dir string, cases []dockerfileRefusal) {
	t.Helper()
	for _, tc := range cases {
		writeFile(t, filepath.Join(dir, "Dockerfile"), tc.df)
		_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.df, err, tc.want)
		}
	}
}

// On a merged-/usr base, a directory a COPY copies where the base holds a
// link (a bin/ inside the copied directory, at /bin) is refused at its
// source, as BuildKit's copy fails there (cannot copy to non-directory);
// so is an archive holding one, which BuildKit unpacks over the link or
// through it as its entries say. A COPY to the link itself goes through.
func TestDockerfileDirectoryAtBaseLink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root", "usr", "bin", "sh"), "#!shell\n")
	if err := os.Symlink("usr/bin", filepath.Join(dir, "root", "bin")); err != nil {
		t.Fatal(err)
	}
	dfBase(t, dir)
	writeFile(t, filepath.Join(dir, "r", "bin", "y"), "y\n")
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "bin/", Dir: true, Mode: 0o755}, {Name: "bin/x", Content: "x\n", Mode: 0o644}})))
	refusedDockerfiles(t, dir, []dockerfileRefusal{
		{"FROM oci:base\nCOPY r/bin/y r/ /\n", "Dockerfile:2: "},
		{"FROM oci:base\nCOPY r/ /\n", "/bin: a directory copied where the image holds a link (to usr/bin); Docker's COPY fails there (cannot copy to non-directory)"},
		{"FROM oci:base\nADD r.tar /\n", "Dockerfile:2: "},
		{"FROM oci:base\nADD r.tar /\n", "the archive holds an entry of its own for that directory, and Docker's ADD replaces the link with it"},
	})
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY r/bin /bin\n")
	layers := dfLayers(t, dir)
	var got []string
	walkLayer(t, layers[len(layers)-1], func(h *tar.Header, _ io.Reader) {
		got = append(got, strings.TrimSuffix(h.Name, "/"))
	})
	if want := []string{"usr", "usr/bin", "usr/bin/y"}; !reflect.DeepEqual(got, want) {
		t.Errorf("layer holds %q, want %q", got, want)
	}
}

// An archive ADD unpacks onto a merged-/usr base that holds ./bin/x but
// no entry of its own for bin/ writes x through the link, as BuildKit's
// unpack does (go-archive's Unpack makes a missing parent only where
// nothing is, and writes through the link that is there): the layer
// holds /usr/bin/x. So does a build that takes the archive's unpacking
// from the cache, where it was stored by the first.
func TestDockerfileArchiveThroughBaseLink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root", "usr", "bin", "sh"), "#!shell\n")
	if err := os.Symlink("usr/bin", filepath.Join(dir, "root", "bin")); err != nil {
		t.Fatal(err)
	}
	dfBase(t, dir)
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "./bin/x", Content: "x\n", Mode: 0o755}, {Name: "./etc/", Dir: true, Mode: 0o755}, {Name: "./etc/y", Content: "y\n", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nADD r.tar /\n")
	cache := filepath.Join(dir, "cache")
	for _, run := range []string{"cold", "cached", "implied list gone"} {
		if run == "implied list gone" {
			// The list is covered by the entry's digest: an entry
			// without it is damaged, and made again, not taken as one
			// of an archive that holds bin/.
			lists, err := filepath.Glob(filepath.Join(cache, "artifacts", "*", "implied"))
			if err != nil || len(lists) == 0 {
				t.Fatalf("no cache entry keeps the implied directories (%v)", err)
			}
			for _, l := range lists {
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
			}
		}
		out := filepath.Join(t.TempDir(), "o")
		mustPallet(t, "build", "-q", "--cache-dir", cache, "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
		layers, err := dfImage(t, out).Layers()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		walkLayer(t, layers[len(layers)-1], func(h *tar.Header, _ io.Reader) {
			got = append(got, fmt.Sprintf("%s %o", strings.TrimSuffix(h.Name, "/"), h.Mode))
		})
		if want := []string{"etc 755", "etc/y 644", "usr 755", "usr/bin 755", "usr/bin/x 755"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: layer holds %q, want %q", run, got, want)
		}
	}
}

// Several sources copied to a name without a trailing / are copied there
// one after another, as BuildKit copies them (one fsutil Copy per source,
// each into what the one before left): files one over the other, so the
// name holds the last; a directory first makes it a directory the others
// go into; a directory the base holds there takes them all, a file and
// then a directory too. A file and then a directory elsewhere fails, as
// BuildKit's copy does.
func TestDockerfileSeveralSourcesToOneName(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	writeFile(t, filepath.Join(dir, "b"), "b\n")
	writeFile(t, filepath.Join(dir, "d", "c"), "c\n")
	writeFile(t, filepath.Join(dir, "root", "opt", "k"), "k\n")
	dfBase(t, dir)
	for _, tc := range []struct {
		df   string
		want []string // the last layer's entries, with a file's content
	}{
		{"FROM scratch\nCOPY a b /x\n", []string{"x b"}},
		{"FROM scratch\nCOPY a* b /x\n", []string{"x b"}},
		{"FROM scratch\nCOPY d a /y\n", []string{"y", "y/a a", "y/c c"}},
		{"FROM oci:base\nCOPY b a /opt\n", []string{"opt", "opt/a a", "opt/b b"}},
		{"FROM oci:base\nCOPY b a /z\n", []string{"z a"}},
		{"FROM oci:base\nCOPY a d b /opt\n", []string{"opt", "opt/a a", "opt/b b", "opt/c c"}},
	} {
		writeFile(t, filepath.Join(dir, "Dockerfile"), tc.df)
		out := filepath.Join(t.TempDir(), "o")
		mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
		layers, err := dfImage(t, out).Layers()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		walkLayer(t, layers[len(layers)-1], func(h *tar.Header, r io.Reader) {
			e := strings.TrimSuffix(h.Name, "/")
			if h.Typeflag == tar.TypeReg {
				b, _ := io.ReadAll(r)
				e += " " + strings.TrimSpace(string(b))
			}
			got = append(got, e)
		})
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: layer holds %q, want %q", tc.df, got, tc.want)
		}
	}
	// The record lists the files placed, not the ones left out, whether
	// the plan (on scratch) or the build (on a base) leaves them out;
	// only the build's is an artifact, read in case the base held a
	// directory there.
	for df, artifacts := range map[string]int{"FROM scratch\nCOPY b a /z\n": 1, "FROM oci:base\nCOPY b a /z\n": 2} {
		writeFile(t, filepath.Join(dir, "Dockerfile"), df)
		rec := filepath.Join(t.TempDir(), "r.json")
		mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "o"), "--record", rec)
		data, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Artifacts []struct{ Name string }
			Images    []struct {
				Placed []struct{ Artifact, Dest string }
			}
		}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Images) != 1 || len(r.Images[0].Placed) != 1 || r.Images[0].Placed[0].Dest != "/z" || r.Images[0].Placed[0].Artifact != "a" {
			t.Errorf("%q: record places %+v, want a at /z", df, r.Images)
		}
		if len(r.Artifacts) != artifacts {
			t.Errorf("%q: record lists artifacts %+v, want %d", df, r.Artifacts, artifacts)
		}
	}
	refusedDockerfiles(t, dir, []dockerfileRefusal{
		{"FROM scratch\nCOPY a d /w\n", "Dockerfile:2: "},
		{"FROM scratch\nCOPY a d /w\n", "/w: BuildKit copies the sources there one after another: a, a file, is written at /w, and then d, a directory, fails there (cannot copy to non-directory)"},
		// On a base, only the build can tell: it refuses where the base
		// holds no directory, a file or nothing.
		{"FROM oci:base\nCOPY a d /w\n", "Dockerfile:2:"},
		{"FROM oci:base\nCOPY a d /w\n", "/w: the base oci:base holds no directory there, so BuildKit copies the sources one after another: the first, a file, is written at /w, and a directory copied there after it fails (cannot copy to non-directory)"},
		{"FROM oci:base\nCOPY a d /opt/k\n", "/opt/k: the base oci:base holds no directory there"},
	})
}

// COPY --chmod gives its mode to the directories it copies too, and to
// those it makes on the way to its destination, as BuildKit v0.29 does
// (fsutil's copyFileInfo chmods every entry it creates, and its MkdirAll
// makes the missing ones with the mode's permission bits); the
// directories the image holds keep theirs, and an ADD unpacking an
// archive leaves its directories as they are.
func TestDockerfileChmodDirectories(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "t/", Dir: true, Mode: 0o755}, {Name: "t/x", Content: "x\n", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "root", "opt", "k"), "k\n")
	dfBase(t, dir)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY --chmod=750 d/ /a/b/\nCOPY --chmod=640 f /p/q/f\nCOPY --chmod=2750 d/ /s/\nCOPY --chmod=700 d/ /opt/\nADD --chmod=600 r.tar /u/\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers[1:], 2, func(h *tar.Header) string { return fmt.Sprintf("%o", h.Mode) })
	want := []string{
		"2 a 750", "2 a/b 750", "2 a/b/g 750", "2 a/b/sub 750", "2 a/b/sub/f 750",
		"3 p 640", "3 p/q 640", "3 p/q/f 640",
		"4 s 750", "4 s/g 2750", "4 s/sub 2750", "4 s/sub/f 2750",
		"5 opt 755", "5 opt/g 700", "5 opt/sub 700", "5 opt/sub/f 700",
		"6 u 755", "6 u/t 755", "6 u/t/x 644",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers 2 to 6 hold\n got %q\nwant %q", got, want)
	}
}

// dfBase builds the base image the Dockerfiles of dir name as oci:base:
// dir/root, as it is, on scratch.
func dfBase(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "base.Dockerfile"), "FROM scratch\nCOPY root/ /\n")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "base.Dockerfile"), "-o", "oci:"+filepath.Join(dir, "base"))
}

// A symbolic COPY --chmod changes each file's and directory's own mode,
// as BuildKit v0.29 does (dispatchCopy passes it as ModeStr; fsutil's
// copyFileInfo applies it, parsed by dchapes-mode with a umask of 0, to
// each entry it copies): X adds execute to directories and to files
// with an execute bit only; the directories made on the way are 0755
// (fsutil's MkdirAll takes defaultDirectoryMode when no octal mode is
// given); a COPY --from keeps what the stage's --chmod made, and its
// own --chmod applies after it; an ADD unpacking an archive leaves it.
func TestDockerfileSymbolicChmod(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "x"), "x\n")
	if err := os.Chmod(filepath.Join(dir, "d", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "t/", Dir: true, Mode: 0o755}, {Name: "t/x", Content: "x\n", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nCOPY --chmod=go-rx d/ /d/\n"+
		"FROM scratch\nCOPY --chmod=u+x,g+w f /p/q/f\nCOPY --chmod=a+rX,o-r d/ /a/\nCOPY --chmod=g=u d/x /y\nCOPY --chmod=u+s f /z\n"+
		"ADD --chmod=u-w r.tar /u/\nCOPY --from=s /d/ /e/\nCOPY --from=s --chmod=+X /d/ /h/\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers, 1, func(h *tar.Header) string { return fmt.Sprintf("%o", h.Mode) })
	want := []string{
		"1 p 755", "1 p/q 755", "1 p/q/f 764",
		"2 a 755", "2 a/g 640", "2 a/sub 751", "2 a/sub/f 640", "2 a/x 751",
		"3 y 775",
		"4 z 4644",
		"5 u 755", "5 u/t 755", "5 u/t/x 644",
		"6 e 755", "6 e/g 600", "6 e/sub 700", "6 e/sub/f 600", "6 e/x 700",
		"7 h 755", "7 h/g 600", "7 h/sub 711", "7 h/sub/f 600", "7 h/x 711",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
	refusedDockerfiles(t, dir, []dockerfileRefusal{
		{"FROM scratch\nCOPY --chmod=u+q f /x\n", "--chmod=u+q: neither an octal mode (0755) nor a symbolic one"},
		{"FROM scratch\nCOPY --chmod=17777 f /x\n", "--chmod=17777: an octal mode is between 0 and 07777"},
		{"FROM scratch\nCOPY --chmod=9 f /x\n", "--chmod=9: an octal mode is between 0 and 07777"},
		{"FROM --platform=windows/amd64 windows-hostprocess-scratch\nCOPY --chmod=u+x f /x\n", "a symbolic mode is refused on a Windows stage"},
	})
}

// ADD --chown gives its owner to what an archive holds and to the
// directories made on the way to its destination, but the directories
// the archive only implies (t/x without t/) are 0:0, as BuildKit v0.29
// unpacks it (solver/llbsolver/file unpack: ChownOpts for the entries;
// go-archive's createImpliedDirectories makes the missing parents with
// the daemon's root pair). A COPY --from of what the stage unpacked keeps
// them so, unless its own --chown gives everything copied its owner
// (its destination here is a directory the image holds, which keeps its
// owner).
func TestDockerfileAddChownImpliedDirs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{
		{Name: "k/", Dir: true, Mode: 0o755}, {Name: "k/y", Content: "y\n", Mode: 0o644},
		{Name: "t/v/x", Content: "x\n", Mode: 0o644},
	})))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nADD --chown=5:6 r.tar /u/\n"+
		"FROM scratch\nADD --chown=5:6 r.tar /a/u/\nCOPY --from=s /u/ /a/\nCOPY --from=s --chown=7 /u/ /f/\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers, 1, func(h *tar.Header) string { return fmt.Sprintf("%d:%d", h.Uid, h.Gid) })
	want := []string{
		"1 a 5:6", "1 a/u 5:6", "1 a/u/k 5:6", "1 a/u/k/y 5:6", "1 a/u/t 0:0", "1 a/u/t/v 0:0", "1 a/u/t/v/x 5:6",
		"2 a 5:6", "2 a/k 5:6", "2 a/k/y 5:6", "2 a/t 0:0", "2 a/t/v 0:0", "2 a/t/v/x 5:6",
		"3 f 7:7", "3 f/k 7:7", "3 f/k/y 7:7", "3 f/t 7:7", "3 f/t/v 7:7", "3 f/t/v/x 7:7",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
}

// A file a COPY or ADD places below its destination, where the base
// holds a link (to a directory, or leading nowhere), replaces the link,
// as BuildKit v0.29 does: fsutil's copy removes what is at the target
// path unless it is a directory (ensureEmptyFileTarget), and go-archive's
// unpack does the same; neither writes where the link leads. The layer
// holds the file at the link's path, and nothing where it leads.
func TestDockerfileFileReplacesLinkBelowDestination(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "root", "e", "k"), "k\n")
	for link, target := range map[string]string{"d/tod": "../e", "d/dang": "nowhere", "d/sub/todir": "/e", "u/a": "../e"} {
		if err := os.MkdirAll(filepath.Join(dir, "root", filepath.Dir(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "root", link)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "tod"), "tod\n")
	writeFile(t, filepath.Join(dir, "dd", "dang"), "dang\n")
	writeFile(t, filepath.Join(dir, "dd", "sub", "todir"), "todir\n")
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "a", Content: "a\n", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "base.Dockerfile"), "FROM scratch\nCOPY root/ /\n")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "base.Dockerfile"), "-o", "oci:"+filepath.Join(dir, "base"))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY tod /d/\nCOPY dd/ /d/\nADD r.tar /u/\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers[1:], 2, func(h *tar.Header) string { return fmt.Sprintf("%c", h.Typeflag) })
	want := []string{"2 d 5", "2 d/tod 0", "3 d 5", "3 d/dang 0", "3 d/sub 5", "3 d/sub/todir 0", "4 u 5", "4 u/a 0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers 2 to 4 hold\n got %q\nwant %q", got, want)
	}
}

// A COPY --from copies each directory of the stage below its
// destination with the mode and owner the stage's filesystem gives it,
// those the stage's --chmod and --chown made on the way included, as
// BuildKit v0.29 does (fsutil's copyDirectory and createParentDirs copy
// each one's file info); the destination and the directories above it
// are made as a COPY's are (fsutil's prepareTargetDir: MkdirAll with the
// COPY's own --chmod and --chown, else 0755 0:0), not as the stage's.
func TestDockerfileCopyFromStageDirs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nCOPY --chmod=700 d/ /d/\nCOPY --chown=5:6 f /u/v/w/f\nCOPY --chmod=750 --chown=7:8 d/ /m/n/\nCOPY --chown=5:6 d/ /o/\n"+
		"FROM scratch\nCOPY --from=s /d/ /e/\nCOPY --from=s /u/ /g/\nCOPY --from=s /m/ /r/\nCOPY --from=s /o/ /p/q/\nCOPY --from=s --chown=9:9 /u/ /k/\nCOPY --from=s --chmod=710 /m/ /x/y/\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers, 1, func(h *tar.Header) string { return fmt.Sprintf("%o %d:%d", h.Mode, h.Uid, h.Gid) })
	want := []string{
		"1 e 755 0:0", "1 e/g 700 0:0", "1 e/sub 700 0:0", "1 e/sub/f 700 0:0",
		"2 g 755 0:0", "2 g/v 755 5:6", "2 g/v/w 755 5:6", "2 g/v/w/f 644 5:6",
		"3 r 755 0:0", "3 r/n 750 7:8", "3 r/n/g 750 7:8", "3 r/n/sub 750 7:8", "3 r/n/sub/f 750 7:8",
		"4 p 755 0:0", "4 p/q 755 0:0", "4 p/q/g 644 5:6", "4 p/q/sub 755 5:6", "4 p/q/sub/f 644 5:6",
		"5 k 755 9:9", "5 k/v 755 9:9", "5 k/v/w 755 9:9", "5 k/v/w/f 644 9:9",
		"6 x 710 0:0", "6 x/y 710 0:0", "6 x/y/n 710 7:8", "6 x/y/n/g 710 7:8", "6 x/y/n/sub 710 7:8", "6 x/y/n/sub/f 710 7:8",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
}

// The directories a COPY --from copies are as the stage's filesystem has
// them when two of the stage's COPYs wrote one, or one of them was itself
// a COPY --from: BuildKit's MkdirAll leaves a directory an earlier COPY
// made, the copy below a destination gives each directory the source's
// mode (fsutil's copyDirectoryOnly with overwriteTargetMetadata), and a
// stage's COPY --from made its destination 0755 0:0.
func TestDockerfileCopyFromStageDirsOrder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	for _, tc := range []struct {
		df   string
		want []string
	}{
		{"FROM scratch AS s\nCOPY --chmod=700 f /d/x/f\nCOPY d/ /d/x/\nFROM scratch\nCOPY --from=s /d/ /e/\n",
			[]string{"e 755 0:0", "e/x 700 0:0", "e/x/f 700 0:0", "e/x/g 644 0:0", "e/x/sub 755 0:0", "e/x/sub/f 644 0:0"}},
		{"FROM scratch AS s\nCOPY d/ /d/x/\nCOPY --chmod=700 d/ /d/x/\nFROM scratch\nCOPY --from=s /d/ /e/\n",
			[]string{"e 755 0:0", "e/x 755 0:0", "e/x/g 700 0:0", "e/x/sub 700 0:0", "e/x/sub/f 700 0:0"}},
		{"FROM scratch AS s1\nCOPY --chmod=700 --chown=5:6 d/ /d/\nFROM scratch AS s2\nCOPY --from=s1 /d/ /x/y/\nFROM scratch\nCOPY --from=s2 / /z/\n",
			[]string{"z 755 0:0", "z/x 755 0:0", "z/x/y 755 0:0", "z/x/y/g 700 5:6", "z/x/y/sub 700 5:6", "z/x/y/sub/f 700 5:6"}},
	} {
		if got := lastLayerModes(t, dir, tc.df); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: the last layer holds\n got %q\nwant %q", tc.df, got, tc.want)
		}
	}
}

// A COPY whose destination is a link the base holds to a file writes
// the file it leads to, through every link on the way, and leaves the
// link, as BuildKit v0.29 does: fsutil's Copy resolves its destination
// with continuity's RootPath, the last element too, and its
// ensureEmptyFileTarget removes the file found there before writing.
func TestDockerfileCopyOntoFileLink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "root", "etc", "real"), "old\n")
	writeFile(t, filepath.Join(dir, "root", "etc", "real2"), "old\n")
	for link, target := range map[string]string{"x": "/etc/real", "lib/y": "../etc/real2", "c": "x"} {
		if err := os.MkdirAll(filepath.Join(dir, "root", filepath.Dir(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "root", link)); err != nil {
			t.Fatal(err)
		}
	}
	dfBase(t, dir)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY f /x\nCOPY f /lib/y\nCOPY --chmod=600 f /c\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers[1:], 2, func(h *tar.Header) string { return fmt.Sprintf("%c %o", h.Typeflag, h.Mode) })
	want := []string{"2 etc 5 755", "2 etc/real 0 644", "3 etc 5 755", "3 etc/real2 0 644", "4 etc 5 755", "4 etc/real 0 600"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers 2 to 4 hold\n got %q\nwant %q", got, want)
	}
}

// A directory a COPY copies below its destination, where the image holds
// one already, is written as it is copied, as BuildKit v0.29 writes it:
// fsutil's copy chmods and chowns each directory below the destination
// (copyDirectoryOnly and copyFileInfo, overwriteTargetMetadata), to
// --chmod's and --chown's or the source's, the stage's for a COPY
// --from; go-archive's unpack does so for the directories an archive
// holds entries for (createTarFile), not for those it only implies. The
// destination itself keeps the image's (copy's top level, and MkdirAll,
// leave a directory that is there).
func TestDockerfileCopiedDirOverBaseDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "broot", "sub", "deep", "k"), "k\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "deep", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "sub/", Dir: true, Mode: 0o755}, {Name: "sub/deep/x", Content: "x\n", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "base.Dockerfile"), "FROM scratch\nCOPY --chown=3:4 --chmod=1770 broot/ /opt/\n")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "base.Dockerfile"), "-o", "oci:"+filepath.Join(dir, "base"))
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nCOPY --chmod=700 d/ /d/\nFROM scratch AS s2\nCOPY f /u/sub/deep/f\n"+
		"FROM oci:base\nCOPY d/ /opt/\nCOPY --chown=5:6 --chmod=750 d/ /opt/\nCOPY --from=s /d/ /opt/\nADD --chown=7:7 r.tar /opt/\n"+
		"COPY --from=s2 /u/ /opt/\nCOPY --from=s2 --chmod=g-x /u/ /opt/\n")
	layers := dfLayers(t, dir)
	var got []string
	for _, s := range layerLines(t, layers, 1, func(h *tar.Header) string { return fmt.Sprintf("%c %o %d:%d", h.Typeflag, h.Mode, h.Uid, h.Gid) }) {
		if strings.Contains(s, " 5 ") { // the directories
			got = append(got, s)
		}
	}
	want := []string{
		"1 opt 5 770 3:4", "1 opt/sub 5 1770 3:4", "1 opt/sub/deep 5 1770 3:4",
		"2 opt 5 770 3:4", "2 opt/sub 5 755 0:0", "2 opt/sub/deep 5 755 0:0",
		"3 opt 5 770 3:4", "3 opt/sub 5 750 5:6", "3 opt/sub/deep 5 750 5:6",
		"4 opt 5 770 3:4", "4 opt/sub 5 700 0:0", "4 opt/sub/deep 5 700 0:0",
		"5 opt 5 770 3:4", "5 opt/sub 5 755 7:7", "5 opt/sub/deep 5 700 0:0",
		"6 opt 5 770 3:4", "6 opt/sub 5 755 0:0", "6 opt/sub/deep 5 755 0:0",
		"7 opt 5 770 3:4", "7 opt/sub 5 745 0:0", "7 opt/sub/deep 5 745 0:0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directories by layer\n got %q\nwant %q", got, want)
	}
}

// Through a chain of stages, each COPY --from copies the directories as
// the stage before had them, as BuildKit v0.29 copies each stage's
// filesystem: at each depth, the directories a stage's COPY --from made
// at and above its destination are as its MkdirAll made them (its own
// --chmod's permission bits and --chown's owner, else 0755 0:0), those
// it copied below as the stage it copied from had them, with its
// --chmod and --chown (fsutil's prepareTargetDir, MkdirAll, copyDirectory
// and copyFileInfo).
func TestDockerfileStageChains(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	for _, tc := range []struct {
		df   string
		want []string
	}{
		{"FROM scratch AS a\nCOPY --chmod=700 --chown=5:6 d/ /d/\nFROM scratch AS b\nCOPY --from=a --chmod=750 /d/ /x/y/\n" +
			"FROM scratch AS c\nCOPY --from=b --chown=7:8 /x/ /p/q/\nFROM scratch\nCOPY --from=c /p/ /z/\n",
			[]string{"z 755 0:0", "z/q 755 7:8", "z/q/y 750 7:8", "z/q/y/g 750 7:8", "z/q/y/sub 750 7:8", "z/q/y/sub/f 750 7:8"}},
		{"FROM scratch AS a\nCOPY --chown=1:1 f /a1/a2/f\nFROM scratch AS b\nCOPY --from=a --chmod=711 /a1/ /b1/\n" +
			"FROM scratch AS c\nCOPY --from=b --chown=3:3 / /c1/c2/\nFROM scratch AS d\nCOPY --from=c /c1/ /d1/\nFROM scratch\nCOPY --from=d / /z/\n",
			[]string{"z 755 0:0", "z/d1 755 0:0", "z/d1/c2 755 3:3", "z/d1/c2/b1 711 3:3", "z/d1/c2/b1/a2 711 3:3", "z/d1/c2/b1/a2/f 711 3:3"}},
		{"FROM scratch AS a\nCOPY f /u/v/f\nFROM scratch AS b\nCOPY --from=a --chown=2:2 /u/ /m/\n" +
			"FROM scratch AS c\nCOPY --from=b --chmod=710 / /n/\nFROM scratch\nCOPY --from=c /n/ /o/\n",
			[]string{"o 755 0:0", "o/m 710 2:2", "o/m/v 710 2:2", "o/m/v/f 710 2:2"}},
	} {
		if got := lastLayerModes(t, dir, tc.df); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: the last layer holds\n got %q\nwant %q", tc.df, got, tc.want)
		}
	}
}

// The directories a COPY or ADD makes new in a setgid directory of the
// image take its setgid bit and, unless --chown owns them, its group,
// as BuildKit v0.29 makes them: fsutil's MkdirAll (copy/mkdir.go) calls
// os.Mkdir, where Linux gives a new directory a setgid parent's bit and
// group, and chowns only with --chown; go-archive's
// createImpliedDirectories chowns those an archive implies to 0:0,
// which keeps the bit on a directory. Those a COPY copies are chmodded
// and chowned as copied (copyFileInfo), and files too.
func TestDockerfileSetgidParent(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "broot", "data", "x"), "x\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "s"), "s\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{{Name: "t/x", Content: "x\n", Mode: 0o644}})))
	writeFile(t, filepath.Join(dir, "base.Dockerfile"), "FROM scratch\nCOPY --chmod=2775 --chown=0:50 broot/ /srv/\n")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "base.Dockerfile"), "-o", "oci:"+filepath.Join(dir, "base"))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY f /srv/data/new/deep/f\nCOPY --chown=3:3 f /srv/data/own/f\n"+
		"COPY d/ /srv/data/dd/\nCOPY --chmod=700 f /srv/data/m/f\nADD r.tar /srv/data/ar/\n")
	layers := dfLayers(t, dir)
	var got []string
	for _, s := range layerLines(t, layers[1:], 2, func(h *tar.Header) string { return fmt.Sprintf("%o %d:%d", h.Mode, h.Uid, h.Gid) }) {
		if !strings.Contains(s, " srv ") && !strings.Contains(s, " srv/data ") {
			got = append(got, s)
		}
	}
	want := []string{
		"2 srv/data/new 2755 0:50", "2 srv/data/new/deep 2755 0:50", "2 srv/data/new/deep/f 644 0:0",
		"3 srv/data/own 2755 3:3", "3 srv/data/own/f 644 3:3",
		"4 srv/data/dd 2755 0:50", "4 srv/data/dd/sub 755 0:0", "4 srv/data/dd/sub/s 644 0:0",
		"5 srv/data/m 2700 0:50", "5 srv/data/m/f 700 0:0",
		"6 srv/data/ar 2755 0:50", "6 srv/data/ar/t 2755 0:0", "6 srv/data/ar/t/x 644 0:0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers 2 to 6 hold\n got %q\nwant %q", got, want)
	}
}

// lastLayerModes builds the Dockerfile df in dir, without a cache, and
// gives the entries of its image's last layer as "name mode uid:gid".
func lastLayerModes(t *testing.T, dir, df string) []string {
	t.Helper()
	writeFile(t, filepath.Join(dir, "Dockerfile"), df)
	layers := dfLayers(t, dir)
	var got []string
	walkLayer(t, layers[len(layers)-1], func(h *tar.Header, _ io.Reader) {
		got = append(got, fmt.Sprintf("%s %o %d:%d", strings.TrimSuffix(h.Name, "/"), h.Mode, h.Uid, h.Gid))
	})
	return got
}

// A stage's symbolic --chmod changes what its COPY copies, not the
// directories the COPY makes on its way (0755: fsutil's MkdirAll, with no
// octal mode), so a COPY --from copies those as 0755, changed by its own
// symbolic --chmod only, as BuildKit v0.29 copies the stage's filesystem
// (fsutil's copyDirectory and copyFileInfo apply the ModeStr to each
// entry's own mode); through a chain of stages, each COPY --from's own
// --chmod changes what it copies, its destination it makes as 0755.
func TestDockerfileSymbolicChmodStageMadeDirs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d", "g"), "g\n")
	writeFile(t, filepath.Join(dir, "d", "sub", "f"), "f\n")
	writeFile(t, filepath.Join(dir, "f"), "f\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nCOPY --chmod=go-rx f /a/b/f\nCOPY --chmod=go-rx d/ /m/n/\n"+
		"FROM scratch AS s2\nCOPY --from=s --chmod=g+w /a/ /x/\n"+
		"FROM scratch\nCOPY --from=s /a/ /e/\nCOPY --from=s / /h/\nCOPY --from=s --chmod=g+w /a/ /k/\nCOPY --from=s2 --chmod=o+w / /z/\n")
	layers := dfLayers(t, dir)
	got := layerLines(t, layers, 1, func(h *tar.Header) string { return fmt.Sprintf("%o", h.Mode) })
	want := []string{
		"1 e 755", "1 e/b 755", "1 e/b/f 600",
		"2 h 755", "2 h/a 755", "2 h/a/b 755", "2 h/a/b/f 600", "2 h/m 755", "2 h/m/n 755", "2 h/m/n/g 600", "2 h/m/n/sub 700", "2 h/m/n/sub/f 600",
		"3 k 755", "3 k/b 775", "3 k/b/f 620",
		"4 z 755", "4 z/x 757", "4 z/x/b 777", "4 z/x/b/f 622",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
}

// The Antrea Dockerfile's header and docs/dockerfile.md give the shell
// steps that make its files; a user pastes them into a shell, where the
// Dockerfile's escape character (a backtick) ending a line opens a
// command substitution. Each must at least parse as bash reads it.
func TestAntreaDockerfileStepsParse(t *testing.T) {
	bash := needTool(t, "bash")
	df, err := os.ReadFile(filepath.Join("..", "..", "examples", "antrea-windows", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, l := range strings.Split(string(df), "\n") {
		if cmd, ok := strings.CutPrefix(l, "#   "); ok {
			header = append(header, cmd)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dockerfile.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "## Migrating a buildx Windows build")
	if ok {
		_, block, ok = strings.Cut(block, "```sh\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok || len(header) == 0 {
		t.Fatalf("no steps found: %d header lines, docs block found %v", len(header), ok)
	}
	for name, script := range map[string]string{"Dockerfile header": strings.Join(header, "\n"), "docs/dockerfile.md": block} {
		if !strings.Contains(script, "go -C agent build") || !strings.Contains(script, "pallet build -f Dockerfile") {
			t.Errorf("%s: the steps are not where this test looks for them:\n%s", name, script)
		}
		if out, err := exec.Command(bash, "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("%s: bash -n: %v\n%s\n%s", name, err, out, script)
		}
	}
}
