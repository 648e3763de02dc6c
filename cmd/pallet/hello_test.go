package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// The same recipe built from two different directories gives the same
// index digest, byte for byte.
func TestHelloDeterministic(t *testing.T) {
	var digests []string
	for i := 0; i < 2; i++ {
		recipe := copyExample(t, "hello")
		out := filepath.Join(t.TempDir(), "out")
		// A cache of its own: nothing the first build wrote may serve the second.
		mustPallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+out, "--cache-dir", t.TempDir())
		idx := layoutIndex(t, out)
		if len(idx.Manifests) != 2 {
			t.Fatalf("index.json has %d entries, want 2 (one per tag)", len(idx.Manifests))
		}
		digests = append(digests, idx.Manifests[0].Digest.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds differ: %s vs %s", digests[0], digests[1])
	}
}

// The linux/amd64 image is unpacked by umoci (an outside OCI reader) and
// run with runc: the program inside prints its greeting.
func TestHelloRunsWithRunc(t *testing.T) {
	runc := needTool(t, "runc")
	umoci := needTool(t, "umoci")
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("runc needs root here, and CI runs as root")
		}
		t.Skip("runc needs root here")
	}
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", copyExample(t, "hello"), "--platform", "linux/amd64", "-o", "oci:"+out)

	bundle := filepath.Join(t.TempDir(), "bundle")
	if b, err := exec.Command(umoci, "unpack", "--image", out+":latest", bundle).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, b)
	}
	cfgPath := filepath.Join(bundle, "config.json")
	var spec map[string]any
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	proc := spec["process"].(map[string]any)
	proc["terminal"] = false
	// umoci turned the image's entrypoint and user into the process; the
	// test only adds the name to greet.
	args, _ := proc["args"].([]any)
	if len(args) != 1 || args[0] != "/usr/local/bin/hello" {
		t.Fatalf("umoci made process args %v from the image config, want [/usr/local/bin/hello]", proc["args"])
	}
	if user, _ := proc["user"].(map[string]any); user["uid"] != 65532.0 || user["gid"] != 65532.0 {
		t.Errorf("process user %v, want the image's 65532:65532", proc["user"])
	}
	proc["args"] = append(args, "runc")
	data, _ = json.Marshal(spec)
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Unique per run: a container left by a killed run, or another test
	// binary on the same host, must not collide with this one.
	id := fmt.Sprintf("pallet-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(runc, "run", "--bundle", bundle, id)
	got, err := cmd.CombinedOutput()
	exec.Command(runc, "delete", "-f", id).Run()
	if err != nil {
		t.Fatalf("runc run: %v\n%s", err, got)
	}
	if want := "hello, runc (0.1.0, linux/amd64)"; strings.TrimSpace(string(got)) != want {
		t.Errorf("container printed %q, want %q", got, want)
	}
}

// skopeo reads the multi-platform layout and picks the platform it asks for.
func TestLayoutReadBySkopeo(t *testing.T) {
	skopeo := needTool(t, "skopeo")
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", copyExample(t, "hello"), "-o", "oci:"+out)
	for _, arch := range []string{"amd64", "arm64"} {
		b, err := exec.Command(skopeo, "--override-os", "linux", "--override-arch", arch, "inspect", "oci:"+out+":0.1.0").CombinedOutput()
		if err != nil {
			t.Fatalf("skopeo inspect: %v\n%s", err, b)
		}
		var info struct {
			Architecture, Os string
			Layers           []string
			Labels           map[string]string
		}
		if err := json.Unmarshal(b, &info); err != nil {
			t.Fatal(err)
		}
		if info.Architecture != arch || info.Os != "linux" || len(info.Layers) != 2 || info.Labels["org.opencontainers.image.version"] != "0.1.0" {
			t.Errorf("skopeo sees %+v", info)
		}
	}
}

// skopeo reads a docker archive both ways: as docker load does, from
// manifest.json, and as an OCI layout archive, as containerd's import and
// docker load from Docker 25 on do, where the manifest is pallet's own
// and keeps the digest the build printed.
func TestDockerArchiveReadBySkopeo(t *testing.T) {
	skopeo := needTool(t, "skopeo")
	file := filepath.Join(t.TempDir(), "hello.tar")
	built := strings.TrimSpace(mustPallet(t, "build", "-q", "-f", copyExample(t, "hello"), "--platform", "linux/amd64", "-o", "docker:"+file))
	for _, ref := range []string{"docker-archive:" + file + ":hello:latest", "oci-archive:" + file + ":latest"} {
		b, err := exec.Command(skopeo, "inspect", ref).CombinedOutput()
		if err != nil {
			t.Fatalf("skopeo inspect %s: %v\n%s", ref, err, b)
		}
		var info struct {
			Digest, Architecture string
			Layers               []string
		}
		if err := json.Unmarshal(b, &info); err != nil {
			t.Fatal(err)
		}
		if info.Architecture != "amd64" || len(info.Layers) != 2 {
			t.Errorf("skopeo sees %s as %+v", ref, info)
		}
		if strings.HasPrefix(ref, "oci-archive:") && info.Digest != built {
			t.Errorf("skopeo sees %s as manifest %s, pallet built %s", ref, info.Digest, built)
		}
	}
}

// A push goes to a real registry; pulled back, it has the digest the
// layout has, under every tag.
func TestPushToRegistry(t *testing.T) {
	reg := testregistry.Start(t, nil)
	recipe := copyExample(t, "hello")
	out := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", recipe, "-o", "oci:"+out, "-o", "registry:"+reg.Host+"/team/hello")
	want := layoutIndex(t, out).Manifests[0].Digest

	for _, tag := range []string{"0.1.0", "latest"} {
		ref, err := name.ParseReference(reg.Host + "/team/hello:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(ref)
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		got, _ := idx.Digest()
		if got != want {
			t.Errorf("%s: pulled %s, built %s", ref, got, want)
		}
		m, _ := idx.IndexManifest()
		for _, d := range m.Manifests {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			layers, _ := img.Layers()
			for _, l := range layers {
				rc, err := l.Compressed()
				if err != nil {
					t.Fatalf("blob missing from registry: %v", err)
				}
				rc.Close()
			}
		}
	}
	// inspect reads the pushed image back through the registry API.
	insp := mustPallet(t, "inspect", reg.Host+"/team/hello:latest")
	for _, s := range []string{"linux/amd64", "linux/arm64", want.String()} {
		if !strings.Contains(insp, s) {
			t.Errorf("inspect output lacks %q:\n%s", s, insp)
		}
	}
}

// A docker archive holds one platform and loads back as the same image.
func TestDockerArchive(t *testing.T) {
	recipe := copyExample(t, "hello")
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "hello.tar")
	built := strings.Fields(mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/arm64", "-o", "docker:"+tarPath, "-o", "oci:"+filepath.Join(dir, "out")))

	tag, _ := name.NewTag("hello:0.1.0")
	img, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "arm64" || cf.Config.Entrypoint[0] != "/usr/local/bin/hello" {
		t.Errorf("docker archive config: %+v", cf)
	}
	p, err := layout.FromPath(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	m, _ := idx.IndexManifest()
	fromLayout, _ := idx.Image(m.Manifests[0].Digest)
	a, _ := img.ConfigName()
	b, _ := fromLayout.ConfigName()
	if a != b {
		t.Errorf("docker archive config %s differs from layout's %s", a, b)
	}

	// inspect reads both back: the archive and, as JSON, the layout.
	insp := mustPallet(t, "inspect", "docker:"+tarPath)
	if !strings.Contains(insp, "linux/arm64") || !strings.Contains(insp, "hello:0.1.0") || !strings.Contains(insp, "2 layers") {
		t.Errorf("inspect docker archive:\n%s", insp)
	}
	// The digest the build printed, the archive's layout's: not one
	// made up from manifest.json.
	if len(built) == 0 || !strings.Contains(insp, "image "+built[0]+" (oci manifest)") {
		t.Errorf("inspect docker archive shows not the digest the build printed (%q):\n%s", built, insp)
	}
	var report struct {
		Images []struct {
			Name, Platform string
			Layers         []struct{ Digest string }
		}
	}
	js := mustPallet(t, "inspect", "--json", "oci:"+filepath.Join(dir, "out"))
	if err := json.Unmarshal([]byte(js), &report); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, js)
	}
	if len(report.Images) != 1 || report.Images[0].Platform != "linux/arm64" || len(report.Images[0].Layers) != 2 {
		t.Errorf("inspect --json of the layout: %+v", report)
	}

	_, err = pallet(t, "build", "-q", "-f", recipe, "-o", "docker:"+filepath.Join(dir, "multi.tar"))
	if err == nil || !strings.Contains(err.Error(), "a docker archive holds one per name; build one platform for it") {
		t.Errorf("multi-platform docker archive: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "multi.tar")); err == nil {
		t.Error("a failed docker output left a file")
	}
}

// What a developer's shell or go env file says about Go builds does not
// reach the image: the recipe alone decides, so the digests match a clean
// machine's, with or without the cache.
func TestGoBuildIgnoresHostKnobs(t *testing.T) {
	// One copy of the example, so that a shared cache can serve it (the
	// module's path is part of the artifact's key).
	recipe := copyExample(t, "hello")
	var log string
	build := func(cacheDir string) string {
		out := filepath.Join(t.TempDir(), "out")
		log = mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--platform", "linux/amd64", "-o", "oci:"+out, "--cache-dir", cacheDir)
		return layoutIndex(t, out).Manifests[0].Digest.String()
	}
	clean := build(t.TempDir())
	shared := t.TempDir()
	build(shared)

	goenv := filepath.Join(t.TempDir(), "go.env")
	writeFile(t, goenv, "GOAMD64=v3\nGOFLAGS=-ldflags=-X=main.version=from-go-env\nGOEXPERIMENT=boringcrypto\nCGO_ENABLED=1\n")
	t.Setenv("GOENV", goenv)
	t.Setenv("GOAMD64", "v2")
	t.Setenv("GOFLAGS", "-ldflags=-X=main.version=from-shell")
	t.Setenv("CGO_ENABLED", "1")
	t.Setenv("GOEXPERIMENT", "loopvar")
	if got := build(t.TempDir()); got != clean {
		t.Errorf("host Go settings changed the image: %s, clean machine %s", got, clean)
	}
	// The settings are not part of the key either: the cache built without
	// them serves the build with them.
	if got := build(shared); got != clean {
		t.Errorf("host Go settings changed the cached build: %s, clean machine %s", got, clean)
	}
	if !strings.Contains(log, "artifact hello (linux/amd64) [go, cached]") {
		t.Errorf("the shared cache did not serve the build:\n%s", log)
	}
}

// zstd layers, written with one job or several, give the same digests, and
// the image still runs: its layers are zstd to an outside reader.
func TestZstdLayers(t *testing.T) {
	var digests []string
	for _, jobs := range []string{"1", "2"} {
		out := filepath.Join(t.TempDir(), "out")
		mustPallet(t, "build", "-q", "-f", copyExample(t, "hello"), "--compression", "zstd", "--jobs", jobs, "--cache-dir", t.TempDir(), "-o", "oci:"+out)
		digests = append(digests, layoutIndex(t, out).Manifests[0].Digest.String())
		img := layoutImage(t, out, "linux/arm64")
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range layers {
			mt, _ := l.MediaType()
			if mt != "application/vnd.oci.image.layer.v1.tar+zstd" {
				t.Errorf("layer media type %s", mt)
			}
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			magic := make([]byte, 4)
			_, err = io.ReadFull(rc, magic)
			rc.Close()
			if err != nil || !bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
				t.Errorf("layer blob starts %x, not a zstd frame", magic)
			}
		}
		if files := readImageFiles(t, out, "linux/arm64"); !strings.HasPrefix(files["etc/hello/hello.conf"], "greeting") {
			t.Errorf("zstd layer reads back as %v", files)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("--jobs 1 gave %s, --jobs 2 gave %s", digests[0], digests[1])
	}
}

// Registry credentials come from the docker config, as docker login writes
// them, or from the credential helper it names.
func TestPushWithCredentials(t *testing.T) {
	reg := testregistry.StartWithAuth(t, "ci", "s3cret")
	recipe := copyExample(t, "hello")
	push := func(repo string) error {
		_, err := pallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "-o", "registry:"+reg.Host+"/"+repo)
		return err
	}
	pulled := func(repo string, auth authn.Authenticator) error {
		ref, err := name.ParseReference(reg.Host + "/" + repo + ":0.1.0")
		if err != nil {
			return err
		}
		_, err = remote.Image(ref, remote.WithAuth(auth))
		return err
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if err := push("anon/hello"); err == nil || !strings.Contains(err.Error(), reg.Host+" asks for credentials, and pallet found none for it in the docker config") {
		t.Errorf("push without credentials: %v, want an authorization error", err)
	}
	if err := pulled("anon/hello", &authn.Basic{Username: "ci", Password: "s3cret"}); err == nil {
		t.Error("a push without credentials left an image")
	}

	// docker login's config.json.
	cfg := t.TempDir()
	writeFile(t, filepath.Join(cfg, "config.json"), fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`,
		reg.Host, base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))))
	t.Setenv("DOCKER_CONFIG", cfg)
	if err := push("login/hello"); err != nil {
		t.Fatalf("push with docker config credentials: %v", err)
	}
	if err := pulled("login/hello", &authn.Basic{Username: "ci", Password: "s3cret"}); err != nil {
		t.Errorf("pull back: %v", err)
	}

	// A credential helper, docker-credential-NAME on PATH.
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "docker-credential-pallet-test"), "#!/bin/sh\n"+
		"read server\n"+
		"[ \"$1\" = get ] && [ \"$server\" = \""+reg.Host+"\" ] || exit 1\n"+
		"echo '{\"Username\": \"ci\", \"Secret\": \"s3cret\"}'\n")
	if err := os.Chmod(filepath.Join(bin, "docker-credential-pallet-test"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	helperCfg := t.TempDir()
	writeFile(t, filepath.Join(helperCfg, "config.json"), fmt.Sprintf(`{"credHelpers": {%q: "pallet-test"}}`, reg.Host))
	t.Setenv("DOCKER_CONFIG", helperCfg)
	if err := push("helper/hello"); err != nil {
		t.Fatalf("push with a credential helper: %v", err)
	}
	if err := pulled("helper/hello", &authn.Basic{Username: "ci", Password: "s3cret"}); err != nil {
		t.Errorf("pull back: %v", err)
	}
}

// Outputs come out like any file the user makes (umask 022 here: readable
// by all), not private like the temporary files they are written as: a
// layout or archive is often read by another user, a registry or a web
// server.
func TestOutputPermissions(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	mustPallet(t, "build", "-q", "-f", copyExample(t, "hello"), "--platform", "linux/amd64", "--cache-dir", t.TempDir(),
		"-o", "oci:"+filepath.Join(dir, "out"), "-o", "docker:"+filepath.Join(dir, "hello.tar"))
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o644)
		if d.IsDir() {
			want = 0o755
		}
		// ggcr writes index.json and oci-layout 0755; readable is what counts.
		if info.Mode().Perm()&want != want {
			t.Errorf("%s: mode %v, want at least %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
