package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"debug/pe"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// readWindowsImage verifies every layer of img in the Windows format and
// returns the regular files (path → content) found under Files/.
func readWindowsImage(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	// The built-in base's layer has the shape of Microsoft's base (Files/
	// only, no Windows records); pallet's own layers the full format.
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, h := range cf.History {
		if !h.EmptyLayer {
			created = append(created, h.CreatedBy)
		}
	}
	files := map[string][]byte{}
	for i, l := range layers {
		mt, _ := l.MediaType()
		if !mt.IsDistributable() {
			continue
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if i < len(created) && created[i] == "pallet: windows-hostprocess-scratch" {
			_, err = layer.VerifyWindowsBase(bytes.NewReader(buf.Bytes()))
		} else {
			_, err = layer.VerifyWindows(bytes.NewReader(buf.Bytes()))
		}
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
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
			if h.Typeflag == tar.TypeReg {
				b, _ := io.ReadAll(tr)
				files[strings.TrimPrefix(h.Name, "Files/")] = b
			}
		}
	}
	return files
}

func buildAntrea(t *testing.T, extra ...string) (string, *fixture.Server) {
	t.Helper()
	srv := fixture.Serve(t, fixture.AntreaReleases())
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"build", "-q", "-f", copyExample(t, "antrea-windows"), "--arg", "RELEASES=" + srv.URL, "-o", "oci:" + out}, extra...)
	mustPallet(t, args...)
	return out, srv
}

func TestAntreaWindowsExample(t *testing.T) {
	// Caches of its own: the downloads are counted, and the second build
	// must not reuse the first one's layers.
	sboms := [2]string{filepath.Join(t.TempDir(), "sbom"), filepath.Join(t.TempDir(), "sbom")}
	out, srv := buildAntrea(t, "--cache-dir", t.TempDir(), "--sbom", "--sbom-dir", sboms[0])
	img := layoutImage(t, out, "windows/amd64")
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "windows" || cf.Architecture != "amd64" || cf.OSVersion != "" {
		t.Errorf("config platform %s/%s os.version %q; a host-process image has no os.version", cf.OS, cf.Architecture, cf.OSVersion)
	}
	if len(cf.Config.Env) != 1 || !strings.HasPrefix(cf.Config.Env[0], `PATH=C:\Windows\system32;C:\Windows;C:\Windows\System32\WindowsPowerShell\v1.0\;`) {
		t.Errorf("env %q: want upstream's PATH, PowerShell included", cf.Config.Env)
	}
	checkWindowsLayout(t, out, "")
	files := readWindowsImage(t, img)
	var exes []string
	for p, b := range files {
		if !strings.HasSuffix(p, ".exe") {
			continue
		}
		exes = append(exes, p)
		f, err := pe.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s is not a PE file: %v", p, err)
			continue
		}
		if f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			t.Errorf("%s: machine %#x, want amd64", p, f.Machine)
		}
	}
	sort.Strings(exes)
	want := []string{
		// Upstream's layout: the CNI plugin is antrea.exe beside
		// host-local.exe, and not in bin/.
		"k/antrea/bin/antctl.exe", "k/antrea/bin/antrea-agent.exe",
		"k/antrea/cni/antrea.exe", "k/antrea/cni/host-local.exe",
		"openvswitch/usr/bin/ovs-appctl.exe", "openvswitch/usr/bin/ovs-ofctl.exe", "openvswitch/usr/bin/ovs-vsctl.exe",
		"openvswitch/usr/bin/ovsdb-client.exe", "openvswitch/usr/bin/ovsdb-tool.exe",
		"openvswitch/usr/sbin/ovs-vswitchd.exe", "openvswitch/usr/sbin/ovsdb-server.exe",
	}
	if strings.Join(exes, "\n") != strings.Join(want, "\n") {
		t.Errorf("executables:\n%s\nwant:\n%s", strings.Join(exes, "\n"), strings.Join(want, "\n"))
	}
	if !bytes.Contains(files["k/antrea/cni/antrea.exe"], []byte("antrea-cni")) {
		t.Error("k/antrea/cni/antrea.exe is not the antrea-cni program")
	}
	if !bytes.HasPrefix(files["k/antrea/Install-OVS.ps1"], []byte("# Stand-in for Antrea's hack/windows/Install-OVS.ps1")) {
		t.Errorf("k/antrea/Install-OVS.ps1 is %q", files["k/antrea/Install-OVS.ps1"])
	}
	for p := range files {
		if strings.HasPrefix(p, "k/") && !strings.HasPrefix(p, "k/antrea/bin/") && !strings.HasPrefix(p, "k/antrea/cni/") && p != "k/antrea/Install-OVS.ps1" {
			t.Errorf("%s placed: only the named paths of an artifact go in", p)
		}
	}
	for _, p := range []string{"openvswitch/usr/bin/libssl-3-x64.dll", "openvswitch/driver/ovsext.inf", "Windows/System32/config/SYSTEM", "LICENSES/antrea-scripts/LICENSE"} {
		if _, ok := files[p]; !ok {
			t.Errorf("%s missing", p)
		}
	}
	if !bytes.Contains(files["k/antrea/bin/antrea-agent.exe"], []byte("v2.2.0")) {
		t.Error("the agent lacks the version stamped by ldflags")
	}
	if got := srv.Requests(); len(got) != 2 {
		t.Errorf("release server saw %v, want one request per archive", got)
	}
	// Same recipe, same inputs, another directory: same digest.
	// The same server: its address is in the SBOMs, as the download location.
	again := filepath.Join(t.TempDir(), "out")
	mustPallet(t, "build", "-q", "-f", copyExample(t, "antrea-windows"), "--arg", "RELEASES="+srv.URL, "-o", "oci:"+again,
		"--cache-dir", t.TempDir(), "--sbom", "--sbom-dir", sboms[1])
	if a, b := layoutIndex(t, out).Manifests[0].Digest, layoutIndex(t, again).Manifests[0].Digest; a != b {
		t.Errorf("rebuild digest %s, first %s", b, a)
	}
	// And the same SBOMs, byte for byte.
	entries, err := os.ReadDir(sboms[0])
	if err != nil || len(entries) != 2 {
		t.Fatalf("SBOM files %v (%v), want SPDX and CycloneDX", entries, err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(sboms[0], e.Name()))
		b, err := os.ReadFile(filepath.Join(sboms[1], e.Name()))
		if err != nil || !bytes.Equal(a, b) || !bytes.Contains(a, []byte("antrea-agent")) {
			t.Errorf("%s differs between two builds in separate caches, or does not list the agent (%v)", e.Name(), err)
		}
	}
}

// windowsBase writes an OCI layout holding a Windows base image shaped
// like a nanoserver release: a Docker v2 manifest with os.version and a
// foreign layer whose blob lives elsewhere (and is deleted from the
// layout, so any attempt to read it fails).
func windowsBase(t *testing.T, dir, osVersion string) string {
	t.Helper()
	foreign := static.NewLayer([]byte("foreign base layer for "+osVersion), types.DockerForeignLayer)
	img := mutate.MediaType(empty.Image, types.DockerManifestSchema2)
	img = mutate.ConfigMediaType(img, types.DockerConfigJSON)
	fd, _ := foreign.Digest()
	img, err := mutate.Append(img, mutate.Addendum{Layer: foreign, MediaType: types.DockerForeignLayer,
		URLs: []string{"https://mcr.example.invalid/v2/windows/nanoserver/blobs/" + fd.String()}})
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.OSVersion = "windows", "amd64", osVersion
	cf.Config.Env = []string{`PATH=C:\Windows\system32;C:\Windows`}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "blobs", "sha256", fd.Hex)); err != nil {
		t.Fatal(err)
	}
	return fd.String()
}

// One recipe gives one index with linux/amd64, linux/arm64, and
// windows/amd64 rebased on two Windows versions; pushing it skips the
// foreign layers and keeps their URLs.
func TestMixedIndexRebaseAndForeignLayers(t *testing.T) {
	dir := t.TempDir()
	foreign2019 := windowsBase(t, filepath.Join(dir, "ltsc2019"), "10.0.17763.6054")
	foreign2022 := windowsBase(t, filepath.Join(dir, "ltsc2022"), "10.0.20348.2582")
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nfunc main() { println(\"app\") }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go:
      module: app
      packages: .
images:
  app:
    base:
      linux: scratch
      windows: [oci:ltsc2019, oci:ltsc2022]
    platforms: [linux/amd64, linux/arm64, windows/amd64]
    files:
      - artifact: app
        dest: /app/
`)
	out := filepath.Join(dir, "out")
	reg := testregistry.Start(t, nil)
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out, "-o", "registry:"+reg.Host+"/app:v1")

	p, err := layout.FromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := p.ImageIndex()
	rm, _ := root.IndexManifest()
	idx, err := root.ImageIndex(rm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, "layout", idx, foreign2019, foreign2022)
	checkWindowsLayout(t, out, "10.0.17763.6054", "10.0.20348.2582")
	for _, f := range []string{foreign2019, foreign2022} {
		h, _ := v1.NewHash(f)
		if _, err := os.Stat(filepath.Join(out, "blobs", "sha256", h.Hex)); err == nil {
			t.Errorf("foreign blob %s was written to the layout", f)
		}
	}

	ref, _ := name.ParseReference(reg.Host + "/app:v1")
	pushed, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, "registry", pushed, foreign2019, foreign2022)
	for _, f := range []string{foreign2019, foreign2022} {
		resp, err := http.Head(reg.Server.URL + "/v2/app/blobs/" + f)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("foreign blob %s: registry answers %s; it must never be pushed", f, resp.Status)
		}
	}
}

func checkIndex(t *testing.T, where string, idx v1.ImageIndex, foreign ...string) {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	var winLayers [][]v1.Descriptor
	for _, d := range m.Manifests {
		plats = append(plats, fmt.Sprintf("%s/%s %s", d.Platform.OS, d.Platform.Architecture, d.Platform.OSVersion))
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.OSVersion != d.Platform.OSVersion {
			t.Errorf("%s: config os.version %q, index entry %q", where, cf.OSVersion, d.Platform.OSVersion)
		}
		if d.Platform.OS == "windows" {
			im, _ := img.Manifest()
			winLayers = append(winLayers, im.Layers)
		}
	}
	want := "linux/amd64 ,linux/arm64 ,windows/amd64 10.0.17763.6054,windows/amd64 10.0.20348.2582"
	if strings.Join(plats, ",") != want {
		t.Errorf("%s: index platforms %q, want %q", where, strings.Join(plats, ","), want)
	}
	if len(winLayers) != 2 {
		t.Fatalf("%s: %d windows images", where, len(winLayers))
	}
	for i, layers := range winLayers {
		if len(layers) != 2 {
			t.Fatalf("%s: windows image %d has %d layers", where, i, len(layers))
		}
		base := layers[0]
		if base.MediaType != types.DockerForeignLayer || base.Digest.String() != foreign[i] || len(base.URLs) != 1 {
			t.Errorf("%s: base layer %+v is not the foreign layer %s with its URL", where, base, foreign[i])
		}
		if layers[1].MediaType != types.DockerLayer {
			t.Errorf("%s: pallet layer on a Docker base has media type %s", where, layers[1].MediaType)
		}
	}
	if winLayers[0][1].Digest != winLayers[1][1].Digest {
		t.Errorf("%s: rebased images do not share pallet's layer: %s vs %s", where, winLayers[0][1].Digest, winLayers[1][1].Digest)
	}
}

// A Linux binary placed in a Windows image is refused before any layer is
// written, naming the file and both platforms; check: false allows it.
func TestPlatformCheck(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bin", "agent.exe"), string(fixture.ELF(elf.EM_X86_64, "linux program")))
	writeFile(t, filepath.Join(dir, "bin", "tool.exe"), string(fixture.PE(fixture.PEARM64, "arm64 program")))
	recipe := `version: 1
artifacts:
  agent:
    local:
      path: bin/agent.exe
    licenses: none
  tool:
    local:
      path: bin/tool.exe
    licenses: none
images:
  win:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
    files:
      - artifact: %s
        dest: /k/bin/
`
	for _, tc := range []struct{ artifact, want string }{
		{"agent", "/k/bin/agent.exe: built for linux/amd64 (ELF), image is windows/amd64"},
		{"tool", "/k/bin/tool.exe: built for windows/arm64 (PE), image is windows/amd64"},
	} {
		writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(recipe, tc.artifact))
		out := filepath.Join(dir, "out")
		_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "artifact "+tc.artifact) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("output written despite the failed check")
		}
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), strings.Replace(fmt.Sprintf(recipe, "agent"), "    licenses: none\n  tool:", "    licenses: none\n    check: false\n  tool:", 1))
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
}

// The host-process base given by registry reference, as Antrea's recipe
// names mcr.microsoft.com's: here the same shape pushed to the loopback
// registry under the upstream name. No os.version appears anywhere.
func TestAntreaOnHostProcessBaseByReference(t *testing.T) {
	reg := testregistry.Start(t, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
images:
  hpc:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
`)
	ref := reg.Host + "/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "registry:"+ref)

	out, _ := buildAntrea(t, "--arg", "BASE="+ref)
	img := layoutImage(t, out, "windows/amd64")
	cf, _ := img.ConfigFile()
	if cf.OSVersion != "" || cf.OS != "windows" || len(cf.Config.Cmd) != 1 {
		t.Errorf("config on the hpc base: os %s os.version %q cmd %q", cf.OS, cf.OSVersion, cf.Config.Cmd)
	}
	if d := layoutIndex(t, out).Manifests[0]; d.Platform != nil && d.Platform.OSVersion != "" {
		t.Errorf("index entry has os.version %q", d.Platform.OSVersion)
	}
	checkWindowsLayout(t, out, "")
	files := readWindowsImage(t, img)
	if _, ok := files["Windows/System32/config/SAM"]; !ok {
		t.Error("the base's hive files are missing")
	}
}

// zstd on a Windows image needs asking for by name, and is still warned of.
func TestWindowsZstdNeedsOptIn(t *testing.T) {
	srv := fixture.Serve(t, fixture.AntreaReleases())
	out := filepath.Join(t.TempDir(), "out")
	recipe := copyExample(t, "antrea-windows")
	_, err := pallet(t, "build", "-q", "-f", recipe, "--arg", "RELEASES="+srv.URL, "-o", "oci:"+out, "--compression", "zstd")
	if err == nil || !strings.Contains(err.Error(), "image antrea-agent-windows (windows/amd64): zstd layers are not pulled by every Windows runtime") {
		t.Fatalf("zstd on a Windows image without opting in: %v", err)
	}
	log := mustPallet(t, "build", "--progress", "plain", "-f", recipe, "--arg", "RELEASES="+srv.URL, "-o", "oci:"+out, "--compression", "zstd", "--windows-zstd")
	if !strings.Contains(log, "image antrea-agent-windows (windows/amd64): zstd layers, which Docker on Windows") {
		t.Errorf("no zstd warning for the Windows image:\n%s", log)
	}
	if files := readWindowsImage(t, layoutImage(t, out, "windows/amd64")); len(files["k/antrea/bin/antrea-agent.exe"]) == 0 {
		t.Error("the agent is missing from the zstd image")
	}
}

// An index that mixes Linux images with a host-process Windows image (no
// os.version) is built, with a warning about the containerd it needs.
func TestMixedIndexWithHostProcessWarns(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nfunc main() { println(\"app\") }\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: .}
    licenses: none
images:
  app:
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: [linux/amd64, windows/amd64]
    files:
      - {artifact: app, dest: /app/}
`)
	log := mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
	if !strings.Contains(log, "image app: its index holds Linux images and a Windows image without os.version (host-process); Windows nodes need containerd 1.6.18") {
		t.Errorf("no warning:\n%s", log)
	}
}

// A file a layer cannot hold as placed (a name Windows cannot create, a
// whiteout's name) is said at the line of the placement that put it
// there, with the name quoted when it does not print.
func TestUnplaceableNamesSaidAtTheirPlacement(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "x")
	writeFile(t, filepath.Join(dir, "b", "sub", "aux.txt"), "x")
	writeFile(t, filepath.Join(dir, "c", ".wh.gone"), "x")
	writeFile(t, filepath.Join(dir, "d", "f\xff"), "x")
	writeFile(t, filepath.Join(dir, "e", "x.$wcidirs$"), "x")
	recipe := filepath.Join(dir, "pallet.yaml")
	for _, tc := range []struct {
		windows      bool
		artifact     string
		line         int
		want1, want2 string
	}{
		{true, "b", 15, "layer files: k/b/sub/aux.txt: \"aux.txt\" is a reserved device name on Windows", ""},
		{false, "c", 15, "layer files: opt/c/.wh.gone: a name starting with .wh.", ""},
		{true, "d", 15, `"k/d/f\xff": "f\xff" is not UTF-8`, ""},
		{true, "e", 15, "layer files: k/e/x.$wcidirs$: \"x.$wcidirs$\" ends with .$WCIDIRS$, which the Windows layer importer reserves", ""},
	} {
		base, plat, dest := "scratch", "linux/amd64", "/opt/"+tc.artifact+"/"
		if tc.windows {
			base, plat, dest = "windows-hostprocess-scratch", "windows/amd64", "/k/"+tc.artifact+"/"
		}
		writeFile(t, recipe, fmt.Sprintf(`version: 1
artifacts:
  a:
    local: {path: ./a}
    licenses: none
  x:
    local: {path: ./%s}
    licenses: none
images:
  img:
    base: %s
    platforms: [%s]
    files:
      - {artifact: a, dest: /k/a/, layer: files}
      - {artifact: x, dest: %s, layer: files}
`, tc.artifact, base, plat, dest))
		_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
		want := fmt.Sprintf("%s:%d:", recipe, tc.line)
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tc.want1) || !strings.Contains(err.Error(), tc.want2) {
			t.Errorf("%s: got %v, want it at %s with %q", tc.artifact, err, want, tc.want1)
		}
	}
}

// Two entries of one archive that differ only in case are one path in a
// Windows layer: the error is said at the line of the placement that
// unpacks that archive, not of the layer's first placement, and names
// the archive and the entry.
func TestCaseCollisionInAnArchiveSaidAtItsPlacement(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "ok.txt"), "x")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"bin/Tool.exe", "bin/tool.exe"} {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte("x"))
	}
	tw.Close()
	writeFile(t, filepath.Join(dir, "x.tar"), buf.String())
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  a:
    local: {path: ./a}
    licenses: none
  x:
    local: {path: ./x.tar, extract: {}}
    licenses: none
images:
  img:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: a, dest: /k/a/, layer: files}
      - {artifact: x, dest: /k/x/, layer: files}
`)
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(dir, "out"))
	want := fmt.Sprintf("%s:15: image img (windows/amd64), layer files: /k/x/bin/Tool.exe (a file, layer files) and /k/x/bin/tool.exe (a file, layer files) are one path on Windows, which compares names without case: the later would hide the earlier; place it once, spelled one way (artifact x: the archive %s, its entry bin/tool.exe)", recipe, filepath.Join(dir, "x.tar"))
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

// A link into the built-in base is typed by what the base holds: a
// directory link to Windows/System32, a file link to a hive, with no
// warning; Windows must know which at creation.
func TestLinksIntoBuiltinBaseAreTyped(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "l"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"sys32": "../Windows/System32", "sam": "../Windows/System32/config/SAM"} {
		if err := os.Symlink(target, filepath.Join(dir, "l", name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  l: {local: {path: l, links: keep}, licenses: none}
images:
  app:
    base: windows-hostprocess-scratch
    platforms: windows/amd64
    files:
      - {artifact: l, dest: /links/}
`)
	out := filepath.Join(dir, "out")
	log := mustPallet(t, "build", "--progress", "plain", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out)
	if strings.Contains(log, "not in the image's layers") {
		t.Errorf("a link into the built-in base was not typed:\n%s", log)
	}
	checkWindowsLayout(t, out, "")
	img := dfImage(t, out)
	readWindowsImage(t, img) // every layer verified
	attrs := map[string]string{}
	walkImage(t, img, func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeSymlink {
			attrs[h.Name] = h.PAXRecords["MSWINDOWS.fileattr"]
		}
	})
	// FILE_ATTRIBUTE_REPARSE_POINT (0x400) with DIRECTORY (0x10) or ARCHIVE (0x20).
	if attrs["Files/links/sys32"] != "1040" || attrs["Files/links/sam"] != "1056" {
		t.Errorf("link attributes %v, want sys32 a directory link (1040) and sam a file link (1056)", attrs)
	}
}

// Two layers' paths that are one on Windows are named by the layers'
// names, as every other error of a layer names it, not by an ordinal
// that reads as another layer's name.
func TestCaseCollisionNamesBothLayers(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "h.txt"), "h")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  h: {local: {path: h.txt}, licenses: none}
images:
  app:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files:
      - {artifact: h, dest: /k/App.txt}
      - {artifact: h, dest: /K/app.txt}
`)
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	want := recipe + ":10: image app (windows/amd64), layer 1-h: /k/App.txt (a file, layer 0-h) and /K/app.txt (a file, layer 1-h) are one path on Windows"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v\nwant    %s...", err, want)
	}
}
