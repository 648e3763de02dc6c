// Package record describes what a build placed in its images: for each
// artifact, where it came from, the digest of every file, the licences
// shipped, and for each Go binary the toolchain and main module that built
// it (read from the binary itself, so a downloaded release is judged by
// what it is, not by what its URL claims).
package record

import (
	"bufio"
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/regfile"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Build is the record of one `pallet build`.
type Build struct {
	Recipe    string     `json:"recipe"`
	Epoch     int64      `json:"epoch"`
	Artifacts []Artifact `json:"artifacts"`
	Images    []Image    `json:"images"`
	// Results are what the outputs hold: per image, its index (or its
	// one manifest) and names.
	Results []Result `json:"results"`
}

// Result is one image as the outputs hold it.
type Result struct {
	Name       string   `json:"name"`
	Repository string   `json:"repository"`
	Tags       []string `json:"tags"`
	// Digest is the index's digest, or the manifest's for one platform.
	Digest    string `json:"digest"`
	MediaType string `json:"mediaType"`
}

// Artifact is one artifact on one platform.
type Artifact struct {
	artifact.Record
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
	// Modules are the licences of every module linked, when asked for.
	Modules []Module `json:"modules,omitempty"`
	// GoLicense is the licence of the Go toolchain pallet ran for the
	// artifact, the standard library's, shipped under
	// /LICENSES/<artifact>/ ("std@go1.26.8/LICENSE"), when module
	// licences are asked for.
	GoLicense string `json:"goLicense,omitempty"`
	// Static says a cgo binary has no ELF interpreter and loads no
	// shared library; CLibraries are the
	// C libraries it contains, each with the Debian package owning it and
	// the copyright file shipped under /LICENSES/<artifact>/
	// (debian/<package>/copyright), and Needed the shared libraries it
	// loads at run time (DT_NEEDED), which are the base image's to ship.
	// Set for binaries pallet built with cgo, when module licences are
	// asked for.
	Static     bool            `json:"static,omitempty"`
	CLibraries []clibs.Library `json:"cLibraries,omitempty"`
	Needed     []string        `json:"needed,omitempty"`
}

// Module is one module linked into a Go binary and its licences.
type Module struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	// Sum is the h1: hash its files were proven against.
	Sum string `json:"sum,omitempty"`
	// Licenses are SPDX identifiers, and Files the licence files shipped
	// under /LICENSES/<artifact>/<path>/.
	Licenses []string `json:"licenses,omitempty"`
	Files    []string `json:"files,omitempty"`
	Missing  bool     `json:"missing,omitempty"`
}

// Image lists where each artifact went in one image manifest.
type Image struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	Base     string `json:"base"`
	Digest   string `json:"digest"`
	// Config is the config's digest: the image ID docker shows for the
	// image once loaded (from a docker archive, which holds no manifest)
	// or pulled.
	Config string      `json:"config"`
	Placed []Placement `json:"placed"`
}

// Placement is one artifact put at a destination.
type Placement struct {
	Artifact string `json:"artifact"`
	Dest     string `json:"dest"`
	// Path, when set, is the one file or directory of the artifact
	// placed (clean, relative to the artifact's root): for a path written
	// with a '\', the name the build took (tree.UserPath), which may hold
	// the '\'.
	Path string `json:"path,omitempty"`
}

// Memo derives a fact about a file's content, possibly from memory (the
// cache's RememberAt); st is the file's stamp if the caller took it (a
// tree entry's), else zero. A Memo may also just call derive.
type Memo func(path string, st tree.Stamp, fact string, derive func(string) (string, error)) (string, error)

// NoMemo derives every fact afresh.
func NoMemo(path string, _ tree.Stamp, _ string, derive func(string) (string, error)) (string, error) {
	return derive(path)
}

// Scan records res: the digest of every file and the Go build info of each
// Go binary, through memo.
func Scan(res *artifact.Result, memo Memo) (Artifact, error) {
	// Sized for every entry, directories too, at once: grown by
	// appending, the list of 100,000 files was copied some 30 times, the
	// last copies while the memo and the tree were in memory.
	a := Artifact{Record: res.Record, Files: make([]File, 0, res.Tree.Len()), Licenses: []string{}}
	for e := range res.Tree.All() {
		if e.Kind != tree.File {
			continue
		}
		sum, err := memo(e.Source, e.Stamp, "sha256", cache.HashFile)
		if err != nil {
			return a, err
		}
		a.Files = append(a.Files, File{Path: e.Path, SHA256: sum, Size: e.Size})
		if e.Size < minGoBinary {
			continue
		}
		info, err := memo(e.Source, e.Stamp, "go-buildinfo", goBuildInfo)
		if err != nil {
			return a, err
		}
		if info != "" {
			var gb GoBinary
			if err := json.Unmarshal([]byte(info), &gb); err != nil {
				return a, err
			}
			gb.Path = e.Path
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

// minGoBinary is a size under which no file is a Go binary: the runtime
// alone makes the smallest program (an empty main, stripped) over 1 MB on
// every GOOS/GOARCH of Go 1.26, and no release has made one under a few
// hundred KB. Most files of a tree are smaller; each would be opened and
// read for build info it cannot hold, one at a time (a tenth of a cold
// build of 100,000 small files).
const minGoBinary = 64 << 10

// goBuildInfo is the JSON of a GoBinary (without path) for a Go binary,
// and empty for any other file: not being a Go binary is the common case,
// not an error.
func goBuildInfo(path string) (string, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	info, err := buildinfo.Read(f)
	if err != nil {
		return "", nil
	}
	data, err := json.Marshal(GoBinary{GoVersion: info.GoVersion, MainModule: info.Main.Path, MainVersion: info.Main.Version})
	return string(data), err
}

// Write stores b as indented JSON at path, atomically, as
// json.Encoder with SetIndent("", "  ") writes it. The artifacts' files
// are encoded one at a time, straight into the file: the record of a
// 100,000-file build is 17 MB, and encoded whole it took two buffers
// that size and more (the compact encoding, then its indented copy, each
// grown by doubling), the largest part of that build's heap.
func Write(path string, b *Build) error {
	s, err := Stage(path, b)
	if err != nil {
		return err
	}
	return s.Commit()
}

// Staged is a record written in full beside its path, not in place yet:
// a build encodes and writes its record while the output it sits beside
// is written, and puts it in place (Commit) only once that output is,
// or drops it (Discard). Put in place is then a rename, where encoding
// and writing the record after a push took a few milliseconds after its
// last request.
type Staged struct {
	tmp, path string
	// made is the outermost directory Stage created for path, if any:
	// a record discarded because its output failed leaves no directory
	// behind where, written after the output, it made none.
	made string
	// release frees the lock that marks tmp as a live build's: a record
	// staged by a build killed during its push (SIGKILL runs no
	// Discard) is swept by the next build at once, not after an hour.
	release func()
}

// Commit puts the record in place, replacing what is at its path.
func (s *Staged) Commit() error {
	defer s.release()
	if err := os.Rename(s.tmp, s.path); err != nil {
		os.Remove(s.tmp)
		return err
	}
	return nil
}

// Discard removes the record written beside its path, and the
// directories Stage made for it that are still empty.
func (s *Staged) Discard() {
	os.Remove(s.tmp)
	// The lock file goes with it, before the directories it is in.
	s.release()
	if s.made == "" {
		return
	}
	for d := filepath.Dir(s.path); ; d = filepath.Dir(d) {
		if os.Remove(d) != nil || d == s.made {
			return
		}
	}
}

// missingDir is the outermost directory of dir and its parents that does
// not exist (what os.MkdirAll(dir) would create first), or "".
func missingDir(dir string) string {
	made := ""
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			return made
		}
		made = d
		if filepath.Dir(d) == d {
			return made
		}
	}
}

// Stage writes b as Write does, into a temporary file beside path, and
// leaves it for Commit or Discard.
func Stage(path string, b *Build) (*Staged, error) {
	// The record with every file list empty, to be filled in as it is
	// written out.
	bare := *b
	bare.Artifacts = make([]Artifact, len(b.Artifacts))
	for i, a := range b.Artifacts {
		a.Files = []File{}
		bare.Artifacts[i] = a
	}
	rest, err := json.MarshalIndent(&bare, "", "  ")
	if err != nil {
		return nil, err
	}
	made := missingDir(filepath.Dir(path))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	tempfile.SweepBeside(path)
	tmp, release, err := tempfile.CreateLocked(filepath.Dir(path), tempfile.Beside(path))
	if err != nil {
		return nil, err
	}
	// A record written in part is not left beside its path; one written
	// whole is Commit's or Discard's.
	staged := false
	defer func() {
		if !staged {
			os.Remove(tmp.Name())
			release()
		}
	}()
	w := bufio.NewWriterSize(tmp, 64<<10)
	for _, a := range b.Artifacts {
		// An artifact's own list comes before its Go binaries, whose
		// module file lists are never empty (omitempty); a key inside a
		// string would have its quotes escaped.
		i := bytes.Index(rest, []byte(noFiles))
		if i < 0 {
			tmp.Close()
			return nil, fmt.Errorf("record: the file list of %s is not where it was written", a.Name)
		}
		indent := rest[bytes.LastIndexByte(rest[:i], '\n')+1 : i]
		w.Write(rest[:i+len(noFiles)-1])
		if err := writeFiles(w, a.Files, string(indent)); err != nil {
			tmp.Close()
			return nil, err
		}
		rest = rest[i+len(noFiles)-1:]
	}
	w.Write(rest)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	staged = true
	return &Staged{tmp: tmp.Name(), path: path, made: made, release: release}, nil
}

// noFiles is an empty file list as json.MarshalIndent writes it.
const noFiles = `"files": []`

// writeFiles writes the elements of a file list whose key is indented by
// indent, as json.MarshalIndent would between the brackets.
func writeFiles(w *bufio.Writer, files []File, indent string) error {
	if len(files) == 0 {
		return nil
	}
	item := indent + "  "
	for i, f := range files {
		data, err := json.MarshalIndent(f, item, "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString("\n")
		w.WriteString(item)
		w.Write(data)
	}
	w.WriteString("\n")
	w.WriteString(indent)
	return nil
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
