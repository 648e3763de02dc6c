package sbom

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/record"
)

func hexSHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func hexSHA1(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// h1 is a go.sum-shaped hash of s.
func h1(s string) string {
	h := sha256.Sum256([]byte(s))
	return "h1:" + base64.StdEncoding.EncodeToString(h[:])
}

// content gives an artifact files with these contents, by path, with
// their digests as Describe would have found them.
func content(a *Artifact, files map[string]string) {
	a.Files = []record.File{}
	a.SHA1 = map[string]string{}
	for p, c := range files {
		a.Files = append(a.Files, record.File{Path: p, SHA256: hexSHA256(c), Size: int64(len(c))})
		a.SHA1[p] = hexSHA1(c)
	}
}

func licenses(a *Artifact, files map[string]string) {
	for p, c := range files {
		a.LicenseFiles = append(a.LicenseFiles, LicenseFile{File: record.File{Path: p, SHA256: hexSHA256(c), Size: int64(len(c))}, SHA1: hexSHA1(c)})
		a.Licenses = append(a.Licenses, p)
	}
}

// recipeDir is where sampleInput's recipe lives: a path of the machine
// that must not show in any document.
const recipeDir = "/home/builder/src/kind-base"

// sampleInput is one linux/amd64 image made of every kind of artifact: a
// release download of a Go binary, a git source build with licences, a Go
// module, a local directory under the recipe and a local file outside it,
// on a registry base; plus an artifact of another platform, not in it.
func sampleInput() Input {
	goDeps := []Module{
		{Path: "golang.org/x/sys", Version: "v0.20.0", Sum: h1("x/sys v0.20.0")},
		{Path: "github.com/docker/go-units", Version: "v0.5.0", Sum: h1("go-units")},
		{Path: "github.com/old/thing", Version: "v1.0.0", Sum: h1("old"), Replace: &Module{Path: "github.com/fork/thing", Version: "v1.0.1", Sum: h1("fork")}},
		{Path: "example.com/patched", Version: "v0.3.0", Replace: &Module{Path: "../patched"}},
	}
	runc := Artifact{Artifact: record.Artifact{Record: artifact.Record{
		Name: "runc", Mode: "release", Kind: "url", Version: "1.1.12", Platform: "linux/amd64",
		Origin: artifact.Origin{URL: "https://user:s3cret@github.com/opencontainers/runc/releases/download/v1.1.12/runc.amd64", SHA256: hexSHA256("runc binary")},
	}}, Single: true}
	content(&runc, map[string]string{"runc.amd64": "runc binary"})
	runc.GoBinaries = []record.GoBinary{{Path: "runc.amd64", GoVersion: "go1.21.6"}}
	runc.Go = []GoBinary{{Path: "runc.amd64", GoVersion: "go1.21.6", Main: Module{Path: "github.com/opencontainers/runc", Version: "(devel)"}, Deps: goDeps[:2],
		Settings: []Setting{{Key: "CGO_ENABLED", Value: "1"}, {Key: "GOARCH", Value: "amd64"}, {Key: "GOOS", Value: "linux"}}}}
	runc.License = "Apache-2.0"

	containerd := Artifact{Artifact: record.Artifact{Record: artifact.Record{
		Name: "containerd", Mode: "source", Kind: "git", Version: "2.0.0", Platform: "linux/amd64", GoVersion: "go1.22.7",
		Origin: artifact.Origin{Repo: "https://github.com/containerd/containerd", Commit: hexSHA1("containerd commit")},
	}}}
	content(&containerd, map[string]string{"bin/containerd": "containerd binary", "bin/ctr": "ctr binary"})
	licenses(&containerd, map[string]string{"LICENSE": "Apache License 2.0 text", "NOTICE": "notice"})
	containerd.GoBinaries = []record.GoBinary{{Path: "bin/containerd", GoVersion: "go1.22.7"}, {Path: "bin/ctr", GoVersion: "go1.22.7"}}
	// ctr built with cgo, static: libseccomp and glibc's archives, by
	// their Debian packages, and one no package owns.
	deb := clibs.Package{Arch: "amd64", OS: "debian", Distro: "debian-12"}
	seccomp, libc := deb, deb
	seccomp.Name, seccomp.Version, seccomp.Source = "libseccomp-dev", "2.5.4-1+deb12u1", "libseccomp"
	libc.Name, libc.Version, libc.Source = "libc6-dev", "2.36-9+deb12u14", "glibc"
	containerd.GoBinaries[1].Static = true
	containerd.GoBinaries[1].CLibraries = []clibs.Library{
		{File: "/usr/lib/x86_64-linux-gnu/libc.a", Flag: "-lc", Package: libc, Copyright: "debian/libc6-dev/copyright"},
		{File: "/usr/lib/x86_64-linux-gnu/libpthread.a", Flag: "-lpthread", Package: libc, Copyright: "debian/libc6-dev/copyright"},
		{File: "/usr/lib/x86_64-linux-gnu/libseccomp.a", Flag: "-lseccomp", Package: seccomp, Copyright: "debian/libseccomp-dev/copyright", Licenses: []string{"LGPL-2.1-only"}},
		{File: recipeDir + "/../usr-local/lib/libfoo.a", Flag: "-lfoo"},
	}
	for _, p := range []string{"bin/containerd", "bin/ctr"} {
		containerd.Go = append(containerd.Go, GoBinary{Path: p, GoVersion: "go1.22.7", Main: Module{Path: "github.com/containerd/containerd/v2", Version: "(devel)"}, Deps: goDeps})
	}
	containerd.License = "Apache-2.0"

	crictl := Artifact{Artifact: record.Artifact{Record: artifact.Record{
		Name: "crictl", Kind: "gomod", Platform: "linux/amd64", GoVersion: "go1.22.7",
		Origin: artifact.Origin{Module: "sigs.k8s.io/cri-tools@v1.30.0", SHA256: h1("cri-tools v1.30.0")},
	}}, Single: true}
	content(&crictl, map[string]string{"crictl": "crictl binary"})
	crictl.GoBinaries = []record.GoBinary{{Path: "crictl", GoVersion: "go1.22.7"}}
	crictl.Go = []GoBinary{{Path: "crictl", GoVersion: "go1.22.7", Main: Module{Path: "sigs.k8s.io/cri-tools", Version: "v1.30.0", Sum: h1("cri-tools v1.30.0")}, Deps: goDeps[:1]}}

	config := Artifact{Artifact: record.Artifact{Record: artifact.Record{
		Name: "config", Kind: "local", Platform: "linux/amd64",
		Origin: artifact.Origin{Path: recipeDir + "/files/etc", SHA256: hexSHA256("tree")},
	}}, LocalDir: true}
	content(&config, map[string]string{"containerd/config.toml": "version = 2", "crictl.yaml": "runtime-endpoint: x"})

	entry := Artifact{Artifact: record.Artifact{Record: artifact.Record{
		Name: "entrypoint", Mode: "local", Kind: "local", Platform: "linux/amd64",
		Origin: artifact.Origin{Path: "/home/builder/private/entrypoint.sh", SHA256: hexSHA256("#!/bin/sh")},
	}}, Single: true}
	content(&entry, map[string]string{"entrypoint.sh": "#!/bin/sh"})

	other := containerd
	other.Platform = "linux/arm64"

	return Input{
		Image:     "kind-base",
		Platform:  "linux/amd64",
		Digest:    "sha256:" + hexSHA256("manifest amd64"),
		Base:      Base{Ref: "docker.io/library/debian:bookworm-slim", Digest: "sha256:" + hexSHA256("debian amd64")},
		Epoch:     time.Unix(1700000000, 0),
		Recipe:    File{Name: "pallet.yaml", SHA256: hexSHA256("recipe")},
		Dir:       recipeDir,
		Args:      map[string]string{"VERSION": "v1", "BASE": "debian"},
		Platforms: []string{"linux/arm64", "linux/amd64"},
		Artifacts: []Artifact{runc, containerd, crictl, config, entry, other},
		Placed: []record.Placement{
			{Artifact: "runc", Dest: "/usr/local/sbin/runc"},
			{Artifact: "containerd", Dest: "/usr/local/"},
			{Artifact: "crictl", Dest: "/usr/local/bin/crictl"},
			{Artifact: "config", Dest: "/etc"},
			{Artifact: "entrypoint", Dest: "/usr/local/bin/"},
		},
		Builder: Builder{ID: "https://ci.example.com/pallet", Version: "v0.9.0"},
	}
}

// decode unmarshals a document into generic JSON.
func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return v
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// spdxStatement is sampleInput, its SPDX document and the statement
// wrapping that document.
func spdxStatement(t *testing.T) (in Input, spdx, statement []byte) {
	t.Helper()
	in = sampleInput()
	spdx, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	statement, err = Statement(in, PredicateSPDX, spdx)
	if err != nil {
		t.Fatal(err)
	}
	return in, spdx, statement
}
