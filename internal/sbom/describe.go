package sbom

import (
	"crypto/sha1"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Artifact is one artifact as the documents describe it: the build
// record's view of it, and what only its files can tell (Describe).
type Artifact struct {
	record.Artifact
	// Single says the artifact's tree is one regular file and nothing
	// else: placed at a destination without a trailing slash, the file
	// takes the destination's name.
	Single bool
	// SHA1 is the SHA-1 of each file of Files, by path: SPDX 2.3 wants it
	// beside the SHA-256 of every file.
	SHA1 map[string]string
	// LicenseFiles are the artifact's licence files, by path under
	// /LICENSES/<artifact>/, where every image placing it has them, but
	// for those of modules only Go binaries a placement's path leaves
	// out link (record.Artifact.LicenceKept).
	LicenseFiles []LicenseFile
	// Go is the build info of each Go binary among Files.
	Go []GoBinary
	// LocalDir says a local artifact is a directory: its SHA256 is then
	// pallet's tree digest, not the digest of a file.
	LocalDir bool
	// License is the SPDX licence expression declared for the artifact
	// ("Apache-2.0", "MIT OR Apache-2.0"); empty says nothing is known
	// (NOASSERTION).
	License string
}

// LicenseFile is a licence file with both its digests.
type LicenseFile struct {
	record.File
	SHA1 string
}

// GoBinary is what a Go executable says of its build.
type GoBinary struct {
	// Path is the file's path in the artifact's tree.
	Path      string `json:"path,omitempty"`
	GoVersion string `json:"goVersion"`
	// Main is the module whose main package was built.
	Main Module `json:"main"`
	// Deps are the modules linked in, as the build list had them.
	Deps []Module `json:"deps,omitempty"`
	// Settings are the build settings that say what the binary is
	// (target, cgo, tags, VCS revision); flags that may carry the
	// builder's paths (-ldflags, CGO_CFLAGS) are left out.
	Settings []Setting `json:"settings,omitempty"`
}

// Module is a Go module of a binary's build list.
type Module struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Sum is the go.sum hash ("h1:..."); empty for vendored builds and
	// local replacements.
	Sum     string  `json:"sum,omitempty"`
	Replace *Module `json:"replace,omitempty"`
}

// Setting is one build setting of a Go binary.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// goSettings are the build settings kept: the rest may hold paths of the
// machine that built the binary.
var goSettings = []string{
	"-buildmode", "-compiler", "-tags", "-trimpath",
	"CGO_ENABLED", "GOARCH", "GOOS", "GOAMD64", "GOARM", "GOARM64", "GO386",
	"GOMIPS", "GOMIPS64", "GOPPC64", "GORISCV64", "GOWASM", "GOEXPERIMENT", "GOFIPS140",
	"vcs", "vcs.revision", "vcs.time", "vcs.modified",
}

// goFact names the memo entry of a file's Go build info; the version
// changes whenever GoBinary's encoding does.
const goFact = "sbom-go-buildinfo-v1"

// ReadGoBinary reads the build info of the Go executable at file. A file
// that is not a Go executable gives nil and no error: most files are not.
func ReadGoBinary(file string) (*GoBinary, error) {
	info, err := buildinfo.ReadFile(file)
	if err != nil {
		if _, statErr := os.Stat(file); statErr != nil {
			return nil, fmt.Errorf("go build info of %s: %w", file, statErr)
		}
		return nil, nil
	}
	b := &GoBinary{GoVersion: info.GoVersion, Main: fromDebug(&info.Main)}
	for _, d := range info.Deps {
		b.Deps = append(b.Deps, fromDebug(d))
	}
	slices.SortFunc(b.Deps, func(x, y Module) int { return strings.Compare(x.Path+"@"+x.Version, y.Path+"@"+y.Version) })
	for _, s := range info.Settings {
		if slices.Contains(goSettings, s.Key) {
			b.Settings = append(b.Settings, Setting{Key: s.Key, Value: s.Value})
		}
	}
	slices.SortFunc(b.Settings, func(x, y Setting) int { return strings.Compare(x.Key, y.Key) })
	return b, nil
}

// fromDebug converts debug's form of a module.
func fromDebug(m *debug.Module) Module {
	out := Module{Path: m.Path, Version: m.Version, Sum: m.Sum}
	if m.Replace != nil {
		r := fromDebug(m.Replace)
		out.Replace = &r
	}
	return out
}

// goBinaryFact is ReadGoBinary as a memo derives it: JSON, empty for a
// file that is not a Go executable.
func goBinaryFact(file string) (string, error) {
	b, err := ReadGoBinary(file)
	if err != nil || b == nil {
		return "", err
	}
	data, err := json.Marshal(b)
	return string(data), err
}

// Describe completes the record of an artifact with what the documents
// need from its files: the SHA-1 of each, the modules of its Go binaries,
// its licence files and its shape. memo (the cache's Remember, or
// record.NoMemo) keeps a build that changed nothing from reading them
// again.
func Describe(a record.Artifact, res *artifact.Result, memo record.Memo) (Artifact, error) {
	if memo == nil {
		memo = record.NoMemo
	}
	out := Artifact{Artifact: a, SHA1: map[string]string{}}
	entries := res.Tree.Entries()
	out.Single = len(entries) == 1 && entries[0].Kind == tree.File
	if a.Kind == "local" && a.Path != "" {
		if info, err := os.Stat(a.Path); err == nil && info.IsDir() {
			out.LocalDir = true
		}
	}
	for _, e := range entries {
		if e.Kind != tree.File {
			continue
		}
		sum, err := memo(e.Source, e.Stamp, "sha1", hashSHA1)
		if err != nil {
			return out, fmt.Errorf("artifact %s: sha1 of %s: %w", a.Name, e.Path, err)
		}
		out.SHA1[e.Path] = sum
	}
	for _, gb := range a.GoBinaries {
		e, ok := res.Tree.Get(gb.Path)
		if !ok || e.Kind != tree.File {
			return out, fmt.Errorf("artifact %s: Go binary %s is not a file of its tree", a.Name, gb.Path)
		}
		info, err := memo(e.Source, e.Stamp, goFact, goBinaryFact)
		if err != nil {
			return out, fmt.Errorf("artifact %s: %w", a.Name, err)
		}
		if info == "" {
			return out, fmt.Errorf("artifact %s: %s has no Go build info, though the record says it has", a.Name, gb.Path)
		}
		var b GoBinary
		if err := json.Unmarshal([]byte(info), &b); err != nil {
			return out, fmt.Errorf("artifact %s: Go build info of %s: %w", a.Name, gb.Path, err)
		}
		b.Path = gb.Path
		out.Go = append(out.Go, b)
	}
	slices.SortFunc(out.Go, func(x, y GoBinary) int { return strings.Compare(x.Path, y.Path) })
	if res.Licenses != nil {
		for _, e := range res.Licenses.Entries() {
			if e.Kind != tree.File {
				continue
			}
			sum256, err := memo(e.Source, e.Stamp, "sha256", cache.HashFile)
			if err != nil {
				return out, fmt.Errorf("artifact %s: licence %s: %w", a.Name, e.Path, err)
			}
			sum1, err := memo(e.Source, e.Stamp, "sha1", hashSHA1)
			if err != nil {
				return out, fmt.Errorf("artifact %s: licence %s: %w", a.Name, e.Path, err)
			}
			out.LicenseFiles = append(out.LicenseFiles, LicenseFile{File: record.File{Path: e.Path, SHA256: sum256, Size: e.Size}, SHA1: sum1})
		}
	}
	return out, nil
}

// hashSHA1 is the hex SHA-1 of a file's content.
func hashSHA1(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha1.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("sha1 of %s: %w", file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// RecipeFile names the recipe at file by its base name, which is the same
// on every machine, and pins it by the sha256 of its bytes.
func RecipeFile(file string) (File, error) {
	f, err := os.Open(file)
	if err != nil {
		return File{}, fmt.Errorf("recipe digest: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return File{}, fmt.Errorf("recipe digest of %s: %w", file, err)
	}
	return File{Name: filepath.Base(file), SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// goBinary returns the build info of the Go binary at p in the
// artifact's tree, if it is one.
func (a *Artifact) goBinary(p string) *GoBinary {
	for i := range a.Go {
		if a.Go[i].Path == p {
			return &a.Go[i]
		}
	}
	return nil
}

// check refuses an artifact whose digests or licence could not be
// written as the formats require.
func (a *Artifact) check() error {
	for _, f := range a.Files {
		if !isHex(f.SHA256, 64) {
			return fmt.Errorf("sbom: artifact %s: %s: sha256 %q is not 64 lowercase hex digits", a.Name, f.Path, f.SHA256)
		}
		if !isHex(a.SHA1[f.Path], 40) {
			return fmt.Errorf("sbom: artifact %s: %s has no SHA-1 (make the artifact with Describe)", a.Name, f.Path)
		}
	}
	for _, f := range a.LicenseFiles {
		if !isHex(f.SHA256, 64) || !isHex(f.SHA1, 40) {
			return fmt.Errorf("sbom: artifact %s: licence %s: digests %q, %q are not hex", a.Name, f.Path, f.SHA256, f.SHA1)
		}
	}
	if a.URL != "" && sha256Hex(a.SHA256) == "" {
		return fmt.Errorf("sbom: artifact %s: download %s pinned by %q, not a sha256", a.Name, a.URL, a.SHA256)
	}
	if a.Repo != "" && !isHex(a.Commit, 40) && !isHex(a.Commit, 64) {
		return fmt.Errorf("sbom: artifact %s: repository %s at %q, not a full commit hash", a.Name, a.Repo, a.Commit)
	}
	if a.License != "" {
		if err := checkLicenseExpression(a.License); err != nil {
			return fmt.Errorf("sbom: artifact %s: licence %q: %w", a.Name, a.License, err)
		}
	}
	return nil
}
