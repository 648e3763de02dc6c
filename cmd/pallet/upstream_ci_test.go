package main

import (
	"archive/tar"
	"bytes"
	"debug/pe"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The tests here check images built outside the tests from the real
// upstream examples, which need the module proxy (.ci/upstream builds
// them). Each skips unless its variable names a layout. What they expect
// (modules, versions, sums, Go) comes from the example's recipe, so a
// version bump there needs no change here.

// upstreamArtifact is what a recipe pins of one gomod artifact.
type upstreamArtifact struct {
	name, version  string
	module, modVer string
	sum            string
	packages       []string
}

// upstreamRecipe reads the examples' recipe: its GO arg and, per artifact,
// the module, version and sum it pins.
func upstreamRecipe(t *testing.T, file string) (goVersion string, arts map[string]*upstreamArtifact) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Args      map[string]string `yaml:"args"`
		Artifacts map[string]struct {
			Version string `yaml:"version"`
			Gomod   struct {
				Module   string    `yaml:"module"`
				Version  string    `yaml:"version"`
				Sum      string    `yaml:"sum"`
				Packages yaml.Node `yaml:"packages"`
			} `yaml:"gomod"`
		} `yaml:"artifacts"`
	}
	if err := yaml.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	arts = map[string]*upstreamArtifact{}
	for name, a := range r.Artifacts {
		if a.Gomod.Module == "" {
			t.Fatalf("%s: artifact %s has no gomod section; these checks know only gomod artifacts", file, name)
		}
		var pkgs []string
		switch a.Gomod.Packages.Kind {
		case yaml.ScalarNode:
			pkgs = []string{a.Gomod.Packages.Value}
		case yaml.SequenceNode:
			if err := a.Gomod.Packages.Decode(&pkgs); err != nil {
				t.Fatalf("%s: artifact %s: packages: %v", file, name, err)
			}
		}
		arts[name] = &upstreamArtifact{
			name:     name,
			version:  a.Version,
			module:   a.Gomod.Module,
			modVer:   strings.ReplaceAll(a.Gomod.Version, "{{version}}", a.Version),
			sum:      a.Gomod.Sum,
			packages: pkgs,
		}
	}
	return strings.TrimPrefix(r.Args["GO"], "go"), arts
}

// binaryName is the file go build writes for pkg of module.
func binaryName(module, pkg string) string {
	p := strings.TrimPrefix(strings.TrimPrefix(pkg, "."), "/")
	if p == "" {
		// go build names a module root's binary for the module's last
		// element that is not a major version suffix (containerd/v2 → containerd).
		p = module
		if b := path.Base(p); len(b) > 1 && b[0] == 'v' && strings.Trim(b[1:], "0123456789") == "" {
			p = path.Dir(p)
		}
	}
	return path.Base(p)
}

// goVersionM is what `go version -m` says of one binary.
type goVersionM struct {
	goVersion, path string
	mod             []string // module, version, sum
	build           map[string]string
}

// runGoVersionM reads a binary's build info with the go command, as
// vulnerability scanners read it; go version -m reads PE files as well.
func runGoVersionM(t *testing.T, file string) goVersionM {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", file, err, out)
	}
	v := goVersionM{build: map[string]string{}}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if _, after, ok := strings.Cut(lines[0], ": "); ok {
		v.goVersion = after
	}
	for _, l := range lines[1:] {
		f := strings.Split(strings.TrimPrefix(l, "\t"), "\t")
		switch f[0] {
		case "path":
			v.path = f[1]
		case "mod":
			v.mod = f[1:]
		case "build":
			if k, val, ok := strings.Cut(f[1], "="); ok {
				v.build[k] = val
			}
		}
	}
	return v
}

// peMachine is the PE machine type a Windows platform's binaries carry.
var peMachine = map[string]uint16{
	"amd64": pe.IMAGE_FILE_MACHINE_AMD64,
	"arm64": pe.IMAGE_FILE_MACHINE_ARM64,
}

// TestUpstreamWindowsAt checks the .exe files of a layout built from
// examples/windows-upstream: every one the recipe builds is in each
// platform's image, each is a PE for that platform's machine, and go
// version -m names the pinned module, version and sum, windows and the
// platform's architecture, and the recipe's Go. The layers themselves are
// TestWindowsLayoutAt's.
//
//	PALLET_UPSTREAM_WINDOWS=$PWD/out go test -run TestUpstreamWindowsAt ./cmd/pallet
func TestUpstreamWindowsAt(t *testing.T) {
	dir := os.Getenv("PALLET_UPSTREAM_WINDOWS")
	if dir == "" {
		t.Skip("PALLET_UPSTREAM_WINDOWS names no layout")
	}
	recipe := os.Getenv("PALLET_UPSTREAM_WINDOWS_RECIPE")
	if recipe == "" {
		recipe = filepath.Join("..", "..", "examples", "windows-upstream", "pallet.yaml")
	}
	goVersion, arts := upstreamRecipe(t, recipe)
	byExe := map[string]*upstreamArtifact{}
	for _, a := range arts {
		for _, p := range a.packages {
			byExe[binaryName(a.module, p)+".exe"] = a
		}
	}
	scratch := t.TempDir()
	seen := map[string]map[string]bool{} // architecture → .exe names seen
	n := 0
	for _, li := range layoutImages(t, dir) {
		img := li.img
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "windows" {
			continue
		}
		arch := cf.Architecture
		machine, ok := peMachine[arch]
		if !ok {
			t.Errorf("a Windows image for %s, which these checks do not know", arch)
			continue
		}
		if seen[arch] == nil {
			seen[arch] = map[string]bool{}
		}
		walkImage(t, img, func(h *tar.Header, r io.Reader) {
			name := strings.TrimPrefix(h.Name, "Files/")
			if h.Typeflag != tar.TypeReg || name == h.Name || !strings.EqualFold(path.Ext(name), ".exe") {
				return
			}
			where := fmt.Sprintf("windows/%s %s", arch, name)
			a := byExe[strings.ToLower(path.Base(name))]
			if a == nil {
				t.Errorf("%s: no artifact of %s builds it", where, recipe)
				return
			}
			seen[arch][path.Base(name)] = true
			n++
			file := filepath.Join(scratch, fmt.Sprintf("%d-%s", n, path.Base(name)))
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := pe.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s: not a PE file: %v", where, err)
				return
			}
			if f.Machine != machine {
				t.Errorf("%s: PE machine %#x, want %#x", where, f.Machine, machine)
			}
			v := runGoVersionM(t, file)
			if want := []string{a.module, a.modVer, a.sum}; strings.Join(v.mod, " ") != strings.Join(want, " ") {
				t.Errorf("%s: go version -m says mod %q, want %q (artifact %s)", where, v.mod, want, a.name)
			}
			if !strings.HasPrefix(v.path, a.module) {
				t.Errorf("%s: go version -m says path %q, not in module %s", where, v.path, a.module)
			}
			if v.goVersion != "go"+goVersion {
				t.Errorf("%s: built with %q, want go%s (the recipe's GO)", where, v.goVersion, goVersion)
			}
			if v.build["GOOS"] != "windows" || v.build["GOARCH"] != arch || v.build["CGO_ENABLED"] != "0" {
				t.Errorf("%s: built for GOOS=%s GOARCH=%s CGO_ENABLED=%s, want windows, %s, 0", where, v.build["GOOS"], v.build["GOARCH"], v.build["CGO_ENABLED"], arch)
			}
		})
	}
	for _, arch := range []string{"amd64", "arm64"} {
		var missing []string
		for exe := range byExe {
			if !seen[arch][exe] {
				missing = append(missing, exe)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("windows/%s: no image of %s holds %s", arch, dir, strings.Join(missing, ", "))
		}
	}
	t.Logf("%d .exe files checked", n)
}

// TestUpstreamKindAt runs, with runc, the binaries of the linux/amd64
// image of a layout built from examples/kind-upstream on a Debian base
// (unpacked by umoci): each says the version the recipe pins, and runc
// that it links libseccomp, loaded from the base.
//
//	PALLET_UPSTREAM_KIND=$PWD/out go test -run TestUpstreamKindAt ./cmd/pallet
func TestUpstreamKindAt(t *testing.T) {
	dir := os.Getenv("PALLET_UPSTREAM_KIND")
	if dir == "" {
		t.Skip("PALLET_UPSTREAM_KIND names no layout")
	}
	runc := needTool(t, "runc")
	umoci := needTool(t, "umoci")
	if os.Geteuid() != 0 {
		t.Fatal("runc needs root here")
	}
	recipe := os.Getenv("PALLET_UPSTREAM_KIND_RECIPE")
	if recipe == "" {
		recipe = filepath.Join("..", "..", "examples", "kind-upstream", "pallet.yaml")
	}
	_, arts := upstreamRecipe(t, recipe)
	need := func(name string) *upstreamArtifact {
		a := arts[name]
		if a == nil {
			t.Fatalf("%s has no artifact %s", recipe, name)
		}
		return a
	}
	runcA, ctrd, shim, crictl, cni := need("runc"), need("containerd"), need("containerd-shim"), need("crictl"), need("cni-plugins")

	// umoci unpacks one image by its ref; the layout's index names it.
	var ref string
	for _, d := range layoutIndex(t, dir).Manifests {
		if r := d.Annotations["org.opencontainers.image.ref.name"]; r != "" {
			ref = r
			break
		}
	}
	if ref == "" {
		t.Fatalf("%s: index.json names no image (org.opencontainers.image.ref.name)", dir)
	}
	bundle := filepath.Join(t.TempDir(), "bundle")
	if b, err := exec.Command(umoci, "unpack", "--image", dir+":"+ref, bundle).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack %s:%s: %v\n%s", dir, ref, err, b)
	}
	cfgPath := filepath.Join(bundle, "config.json")
	var spec map[string]any
	readJSON(t, cfgPath, &spec)

	run := func(want []string, args ...string) {
		t.Helper()
		proc := spec["process"].(map[string]any)
		proc["terminal"] = false
		proc["args"] = args
		data, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("pallet-upstream-%d-%d", os.Getpid(), time.Now().UnixNano())
		got, err := exec.Command(runc, "run", "--bundle", bundle, id).CombinedOutput()
		exec.Command(runc, "delete", "-f", id).Run()
		if err != nil {
			t.Errorf("in the container, %s: %v\n%s", strings.Join(args, " "), err, got)
			return
		}
		for _, w := range want {
			if !strings.Contains(string(got), w) {
				t.Errorf("in the container, %s says %q, without %q", strings.Join(args, " "), got, w)
			}
		}
		t.Logf("%s: %s", strings.Join(args, " "), strings.TrimSpace(string(got)))
	}
	// runc prints "libseccomp: X.Y.Z" only when built with the seccomp
	// tag, and starts at all only where the base has libseccomp.so.2.
	run([]string{"runc version " + runcA.version + "\n", "\nlibseccomp: 2."}, "/usr/local/sbin/runc", "--version")
	run([]string{"containerd " + ctrd.module + " " + ctrd.modVer + " "}, "/usr/local/bin/containerd", "--version")
	run([]string{"ctr " + ctrd.module + " " + ctrd.modVer + "\n"}, "/usr/local/bin/ctr", "--version")
	run([]string{"containerd-shim-runc-v2:\n  Version:  " + shim.modVer + "\n"}, "/usr/local/bin/containerd-shim-runc-v2", "-v")
	run([]string{"crictl version " + crictl.modVer + "\n"}, "/usr/local/bin/crictl", "--version")
	// A CNI plugin run with no CNI_COMMAND prints what it is.
	for _, p := range cni.packages {
		name := binaryName(cni.module, p)
		run([]string{"CNI " + name + " plugin " + cni.modVer + "\n"}, "/opt/cni/bin/"+name)
	}
}
