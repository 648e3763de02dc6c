// Package record describes what a build placed in its images: for each
// artifact, where it came from, the digest of every file, the licences
// shipped, and for each Go binary the toolchain and main module that built
// it (read from the binary itself, so a downloaded release is judged by
// what it is, not by what its URL claims).
package record

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pallet-dev/pallet/internal/source"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Build is the record of one `pallet build`.
type Build struct {
	Recipe    string     `json:"recipe"`
	Epoch     int64      `json:"epoch"`
	Artifacts []Artifact `json:"artifacts"`
	Images    []Image    `json:"images"`
}

// Artifact is one artifact on one platform.
type Artifact struct {
	source.Record
	Files      []File     `json:"files"`
	Licenses   []string   `json:"licenses"`
	GoBinaries []GoBinary `json:"goBinaries,omitempty"`
}

// File is one regular file of an artifact, by path in the artifact's tree.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// GoBinary is what debug/buildinfo says of a Go executable.
type GoBinary struct {
	Path        string `json:"path"`
	GoVersion   string `json:"goVersion"`
	MainModule  string `json:"mainModule,omitempty"`
	MainVersion string `json:"mainVersion,omitempty"`
}

// Image lists where each artifact went in one image manifest.
type Image struct {
	Name     string      `json:"name"`
	Platform string      `json:"platform"`
	Base     string      `json:"base"`
	Digest   string      `json:"digest"`
	Placed   []Placement `json:"placed"`
}

// Placement is one artifact put at a destination.
type Placement struct {
	Artifact string `json:"artifact"`
	Dest     string `json:"dest"`
}

// Scan records res: hashes every file (with digest) and reads Go build
// info from each.
func Scan(res *source.Result, digest func(string) (string, error)) (Artifact, error) {
	a := Artifact{Record: res.Record, Files: []File{}, Licenses: []string{}}
	for _, e := range res.Tree.Entries() {
		if e.Kind != tree.File {
			continue
		}
		sum, err := digest(e.Source)
		if err != nil {
			return a, err
		}
		a.Files = append(a.Files, File{Path: e.Path, SHA256: sum, Size: e.Size})
		// Not being a Go binary is the common case, not an error.
		if info, err := buildinfo.ReadFile(e.Source); err == nil {
			gb := GoBinary{Path: e.Path, GoVersion: info.GoVersion, MainModule: info.Main.Path, MainVersion: info.Main.Version}
			a.GoBinaries = append(a.GoBinaries, gb)
		}
	}
	for _, e := range res.Licenses.Entries() {
		if e.Kind == tree.File {
			a.Licenses = append(a.Licenses, e.Path)
		}
	}
	sort.Strings(a.Licenses)
	return a, nil
}

// Write stores b as indented JSON at path, atomically.
func Write(path string, b *Build) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PathFor is where the record of a build writing to output goes: beside
// the layout directory or archive file, or in the current directory for a
// registry push.
func PathFor(output string) string {
	kind, arg, _ := strings.Cut(output, ":")
	if kind == "oci" || kind == "docker" {
		return filepath.Clean(arg) + ".record.json"
	}
	return "pallet-record.json"
}
