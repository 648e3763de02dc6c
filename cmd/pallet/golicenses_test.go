package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/record"
)

// goLicensesVersion is the go-licenses whose output pallet's module
// licences are measured against.
const goLicensesVersion = "github.com/google/go-licenses@v1.6.0"

// goLicenses builds go-licenses: see goTool.
func goLicenses(t *testing.T) string {
	t.Helper()
	return goTool(t, goLicensesVersion, "go-licenses")
}

// goTool builds an outside tool (MODULE/cmd@VERSION) with the go command,
// from the module proxy `go env GOPROXY` names: the one download these
// tests make. It skips the test when that cannot be done on a developer
// machine, and fails it in CI.
func goTool(t *testing.T, version, bin string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("builds %s and whole programs; not in -short", bin)
	}
	// One already on PATH at that version (.ci/run installs them ahead,
	// outside the tests' time limit) is used as it is.
	if p, err := exec.LookPath(bin); err == nil {
		pkg, ver, _ := strings.Cut(version, "@")
		if info, err := buildinfo.ReadFile(p); err == nil && info.Path == pkg && info.Main.Version == ver {
			return p
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "install", version)
	// Its own go.mod pins its dependencies; the host's knobs are not
	// wanted, the host's proxy and caches are.
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod -modcacherw", "GOWORK=off", "CGO_ENABLED=0", "GOOS=", "GOARCH=")
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("go install %s: %v\n%s", version, err, out)
		}
		t.Skipf("go install %s (needs the module proxy): %v\n%s", version, err, out)
	}
	return filepath.Join(dir, bin)
}

// savedFile is one file go-licenses saved, by where it put it.
type savedFile struct {
	rel, sha256 string
}

// goLicensesSave runs go-licenses save on pkg in dir and lists what it
// wrote.
func goLicensesSave(t *testing.T, tool, dir, pkg string, env []string, ignore ...string) []savedFile {
	t.Helper()
	save := filepath.Join(t.TempDir(), "save")
	args := []string{"save", pkg, "--save_path", save}
	for _, i := range ignore {
		args = append(args, "--ignore", i)
	}
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	// GOPROXY=off: go-licenses save needs no network, only the module
	// cache (its corpus is embedded; only report and csv look up URLs).
	cmd.Env = append(os.Environ(), append([]string{"GOPROXY=off", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "GOOS=linux", "GOARCH=amd64"}, env...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go-licenses %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	var files []savedFile
	err := filepath.WalkDir(save, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(save, p)
		sum := sha256.Sum256(data)
		files = append(files, savedFile{rel: filepath.ToSlash(rel), sha256: hex.EncodeToString(sum[:])})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("go-licenses saved nothing for %s", pkg)
	}
	return files
}

// licenceCounts are what each tool found for one program.
type licenceCounts struct {
	modules, files, notices int
}

// compareWithGoLicenses checks that every file go-licenses saved for a
// program is in pallet's /LICENSES/<artifact>/ of the image (files as
// readImageFiles gives them): the same content, for the same module,
// under the same file name. go-licenses saves under the common import
// path of the packages a licence covers; pallet under the module path,
// so files are matched by module (the longest module path that is a
// prefix) and base name. The main module's files are the artifact's own,
// at the top. go-licenses copies the whole source of a module under a
// reciprocal or restricted licence (MPL, EPL, GPL...); pallet ships its
// licence files and a SOURCE-OFFER.txt naming the exact module version
// instead, which these files are checked against. It returns both tools'
// counts and how many source files were left to the source offer.
func compareWithGoLicenses(t *testing.T, name string, saved []savedFile, files map[string]string, gb record.GoBinary) (gl, pl licenceCounts, offered int) {
	t.Helper()
	prefix := "LICENSES/" + name + "/"
	// pallet's files: by module, base name and hash.
	type key struct{ mod, base, sum string }
	have := map[key]bool{}
	modOf := func(p string) string {
		best := ""
		for _, m := range gb.Modules {
			if (p == m.Path || strings.HasPrefix(p, m.Path+"/")) && len(m.Path) > len(best) {
				best = m.Path
			}
		}
		return best
	}
	plMods := map[string]bool{}
	offers := map[string]bool{}
	for p, content := range files {
		rel, ok := strings.CutPrefix(p, prefix)
		if !ok || strings.HasSuffix(p, "/") {
			continue
		}
		data := strings.TrimSuffix(content, " (644)")
		sum := sha256.Sum256([]byte(data))
		mod := gb.MainModule // the artifact's own licences, at the top
		if strings.Contains(rel, "/") {
			mod = modOf(path.Dir(rel))
		}
		if path.Base(rel) == "SOURCE-OFFER.txt" {
			offers[mod] = true
			continue
		}
		pl.files++
		if strings.HasPrefix(strings.ToLower(path.Base(rel)), "notice") {
			pl.notices++
		}
		plMods[mod] = true
		have[key{mod, path.Base(rel), hex.EncodeToString(sum[:])}] = true
	}
	pl.modules = len(plMods)
	glMods := map[string]bool{}
	for _, f := range saved {
		mod := modOf(path.Dir(f.rel))
		if mod == "" {
			t.Errorf("%s: go-licenses saved %s, of no module the binary links", name, f.rel)
			continue
		}
		glMods[mod] = true
		gl.files++
		base := path.Base(f.rel)
		if strings.HasPrefix(strings.ToLower(base), "notice") {
			gl.notices++
		}
		if have[key{mod, base, f.sha256}] {
			continue
		}
		if offers[mod] && !artifact.IsLicenseName(base) {
			offered++
			continue
		}
		t.Errorf("%s: go-licenses saved %s (module %s), which pallet does not ship under %s", name, f.rel, mod, prefix)
	}
	gl.modules = len(glMods)
	return gl, pl, offered
}

// goBinaryOf finds a Go binary in the record.
func goBinaryOf(t *testing.T, rec *record.Build, artifactName, binPath string) record.GoBinary {
	t.Helper()
	for _, a := range rec.Artifacts {
		if a.Name != artifactName {
			continue
		}
		for _, gb := range a.GoBinaries {
			if gb.Path == binPath {
				return gb
			}
		}
	}
	t.Fatalf("no Go binary %s in artifact %s", binPath, artifactName)
	return record.GoBinary{}
}

// pallet's module licences hold everything go-licenses saves, for the
// kind-base stand-ins (replaced modules, notices, a nested licence, an
// MPL-2.0 module) and for pallet itself (dozens of real modules from the
// module cache).
func TestModuleLicencesCoverGoLicenses(t *testing.T) {
	tool := goLicenses(t)

	t.Run("kind-base", func(t *testing.T) {
		e := newKindEnv(t)
		out, rec := e.build(t, "--platform", "linux/amd64")
		files := readImageFiles(t, out, "linux/amd64")
		for _, p := range []struct {
			artifact, repo, pkg, bin string
			cgo                      bool
			ignore                   []string
		}{
			{"containerd", "containerd", "./cmd/containerd", "containerd", false, nil},
			// go-licenses refuses a package without a licence (pallet
			// warns, or fails with --require-licenses): it is left out.
			{"crictl", "cri-tools", "./cmd/crictl", "crictl", false, []string{"example.com/standin/bare"}},
			{"cni-plugins", "plugins", "./plugins/ipam/host-local", "host-local", false, nil},
			{"runc", "runc", ".", "runc", true, nil},
		} {
			cgo := "CGO_ENABLED=0"
			if p.cgo {
				cgo = "CGO_ENABLED=1"
			}
			saved := goLicensesSave(t, tool, filepath.Join(e.dir, "git", p.repo), p.pkg, []string{cgo}, p.ignore...)
			gl, pl, offered := compareWithGoLicenses(t, p.artifact, saved, files, goBinaryOf(t, rec, p.artifact, p.bin))
			t.Logf("%s (%s): go-licenses %d modules, %d files (%d NOTICE); pallet (whole artifact) %d modules, %d files (%d NOTICE); %d source files left to a source offer",
				p.artifact, p.pkg, gl.modules, gl.files, gl.notices, pl.modules, pl.files, pl.notices, offered)
		}
	})

	t.Run("pallet", func(t *testing.T) {
		root, out := buildPalletImage(t)
		files := readImageFiles(t, out, "linux/amd64")
		rec := readRecord(t, out+".record.json")
		gb := goBinaryOf(t, rec, "pallet", "pallet")
		// pallet's own module has no licence file of its own yet: both
		// tools are told it is the program's, not a dependency's.
		saved := goLicensesSave(t, tool, root, "./cmd/pallet", []string{"CGO_ENABLED=0"}, "github.com/pallet-dev/pallet")
		gl, pl, offered := compareWithGoLicenses(t, "pallet", saved, files, gb)
		t.Logf("pallet (./cmd/pallet, %d modules linked): go-licenses %d modules, %d files (%d NOTICE); pallet %d modules, %d files (%d NOTICE); %d source files left to a source offer",
			len(gb.Modules), gl.modules, gl.files, gl.notices, pl.modules, pl.files, pl.notices, offered)
		if gl.modules < 20 {
			t.Errorf("go-licenses found %d modules in pallet; the comparison needs a real program", gl.modules)
		}
	})
}

// buildPalletImage builds pallet's own command with pallet, from this
// checkout, onto scratch for linux/amd64 (a real program with a few dozen
// modules), and returns the checkout's root and the layout written.
func buildPalletImage(t *testing.T, extra ...string) (root, out string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  pallet:
    go: {module: `+root+`, packages: ./cmd/pallet, ldflags: ["-s", "-w"]}
    licenses: none
images:
  pallet:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: pallet, dest: /usr/local/bin/}
`)
	out = filepath.Join(dir, "out")
	mustPallet(t, append([]string{"build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", t.TempDir(), "-o", "oci:" + out}, extra...)...)
	return root, out
}

// A module that requires no other links none, so its module licences
// never need the module cache: the build does not ask the go command
// where it is (a go command beside go build takes a core from it), and
// still records the main module.
func TestStdOnlyModuleAsksNoModuleCache(t *testing.T) {
	log := logGoCalls(t)
	rec := filepath.Join(t.TempDir(), "r.json")
	mustPallet(t, "build", "-q", "-f", copyExample(t, "hello"), "--platform", "linux/amd64", "--cache-dir", t.TempDir(),
		"--record", rec, "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(calls), "build ") {
		t.Fatalf("go build did not go through the wrapper: %q", calls)
	}
	if strings.Contains(string(calls), "GOMODCACHE") {
		t.Errorf("the build asked for the module cache of a module that requires nothing:\n%s", calls)
	}
	var mods []string
	for _, a := range readRecord(t, rec).Artifacts {
		for _, gb := range a.GoBinaries {
			for _, m := range gb.Modules {
				mods = append(mods, m.Path)
			}
		}
	}
	if strings.Join(mods, " ") != "example.com/hello" {
		t.Errorf("modules recorded: %v, want the main module alone", mods)
	}
}

// logGoCalls puts a go command first on PATH that writes the arguments
// of each call, a line each, to the returned file, then runs the real
// one.
func logGoCalls(t *testing.T) (log string) {
	t.Helper()
	real, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "go.log")
	writeFile(t, filepath.Join(bin, "go"), "#!/bin/sh\necho \"$*\" >>"+log+"\nexec "+real+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}
