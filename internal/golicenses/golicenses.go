// Package golicenses collects the licence and notice files of every module
// linked into a Go binary, as go-licenses does for a build, from what the
// binary itself says it contains (debug/buildinfo), and classifies each
// file to an SPDX identifier.
//
// A module's files are read, in order, from the vendor directory of the
// caller's source tree, from the Go module cache, or from the module proxy
// through the go command. Whatever comes from the cache or the proxy is
// proven against the h1: hash the binary's build info records before any
// byte of it is used: the licence bytes kept are the very bytes hashed.
package golicenses

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/tree"
)

// Default limits, used when the Options field is zero.
const (
	// DefaultMaxModules is far above the few hundred modules of the
	// largest Kubernetes binaries, and bounds the downloads and hashing a
	// binary can ask for.
	DefaultMaxModules = 4096
	// DefaultMaxFileSize bounds one licence or notice file; the longest
	// licence texts are under 100 KiB.
	DefaultMaxFileSize = 1 << 20
	// DefaultMaxFilesPerModule bounds the licence files at one module root.
	DefaultMaxFilesPerModule = 64
)

// Options say where module sources come from and what Collect may do.
type Options struct {
	// Work is a directory Collect owns: the licence files are copied
	// under it. It must not exist or be empty.
	Work string
	// Env is the environment of the go command: the build's, so that its
	// GOPROXY, GOFLAGS, GONOSUMDB, GOPRIVATE, GOMODCACHE and, offline, the
	// mirror apply. Nil means the process's environment.
	Env []string
	// SourceDir is the main module's directory for a binary built from
	// source: the main module's files, its vendor directory and the
	// directories its go.mod replaces modules with are read there. Empty
	// for a binary built elsewhere.
	SourceDir string
	// SourceSelected says SourceDir is a snapshot a cached build kept of
	// its source, holding only the files Collect reads (go.mod files,
	// vendor/modules.txt and the licence files artifact.ModuleLicenseFiles
	// chose), so every licence-named file there is taken.
	SourceSelected bool
	// ModCache is the module cache to read (GOMODCACHE); empty asks the go
	// command with Env. It is only read: downloads go where Env says.
	ModCache string
	// Offline refuses an Env whose GOPROXY or GOSUMDB could reach the
	// network: modules then come only from the vendor directory, the
	// module cache, or a file:// proxy (a mirror).
	Offline bool
	// Remember, when set, keeps the classification of licence texts
	// across calls: given a text's sha256, the text, and how to derive its
	// classification (a string), it returns the one kept or derives and
	// keeps it. Loading the classifier costs about a second and 65 MiB,
	// which a build whose licence texts were all seen before need not pay.
	Remember func(sum string, text []byte, derive func() (string, error)) (string, error)
	// RememberHash, when set, keeps the h1: hash of a module zip in the
	// module cache across calls and builds, by the zip's stamp: given the
	// zip's path, the fact's name and how to hash it, it returns the hash
	// kept for the zip as it is now, or hashes and keeps it. It is called
	// for several zips at once.
	RememberHash func(path, fact string, hash func() (string, error)) (string, error)
	// ShareZip, when set, shares between calls what a module zip of the
	// module cache gave: its licence files, read once its hash was proven
	// against the binary's. key names the zip as it is now (its path and
	// stamp), the module and hash it was proven as, and the bounds; the
	// hook returns what read gave for that key, reading it at most once.
	// Every platform of an artifact links the same modules: without it
	// each read every zip's directory and licence files again (a build of
	// pallet for two platforms, 34 modules: 35 of its no-op's 170 ms of
	// CPU). What it returns is not changed.
	ShareZip func(key string, read func() (map[string][]byte, error)) (map[string][]byte, error)
	// Name is how errors name the binary, when its path on disk (a
	// cache entry, a work directory) would say nothing to the reader:
	// the caller's name for it. Empty: the path.
	Name string
	// RequireLicenses makes a module without any licence file an error.
	RequireLicenses bool
	// MaxModules, MaxFileSize and MaxFilesPerModule bound the work; zero
	// takes the defaults above.
	MaxModules        int
	MaxFileSize       int64
	MaxFilesPerModule int
}

func (o Options) withDefaults() Options {
	if o.MaxModules <= 0 {
		o.MaxModules = DefaultMaxModules
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxFilesPerModule <= 0 {
		o.MaxFilesPerModule = DefaultMaxFilesPerModule
	}
	return o
}

// Source says where a module's licence files were read.
type Source string

// The places a module's files come from.
const (
	// FromSourceDir: the caller's source tree (main module, or a module
	// replaced with a directory); pinned by whatever pins that tree.
	FromSourceDir Source = "source"
	// FromVendor: the vendor directory of the caller's source tree.
	FromVendor Source = "vendor"
	// FromCacheZip: the module cache's zip, proven against Sum.
	FromCacheZip Source = "modcache-zip"
	// FromCacheDir: the module cache's extracted directory (no zip
	// there), proven against Sum.
	FromCacheDir Source = "modcache-dir"
	// FromProxy: downloaded by the go command, its zip proven against Sum.
	FromProxy Source = "proxy"
	// FromNowhere: no source could be had (see Module.Reason).
	FromNowhere Source = ""
)

// Result is what Collect found for one binary.
type Result struct {
	// GoVersion and Modules come from the binary's build info; Modules
	// are sorted by path. A binary built outside module mode has none.
	GoVersion string
	Modules   []Module
	// Package is the main package's import path ("cmd/asm").
	Package string
}

// OutsideModules says the binary was built outside module mode, and was
// not one of the Go distribution's commands (cmd/...), whose licence is
// Go's: what it links is not known.
func (r *Result) OutsideModules() bool {
	return len(r.Modules) == 0 && r.Package != "cmd" && !strings.HasPrefix(r.Package, "cmd/")
}

// Module is one module linked into the binary.
type Module struct {
	// Path and Version are as linked; Main marks the main module.
	Path    string
	Version string
	Main    bool
	// Replace is the module whose files were built in its place, when the
	// build replaced it: a module version, or a directory (Version "").
	Replace *Replacement `json:",omitempty"`
	// Sum is the h1: hash the files were proven against; empty for
	// modules read from a source tree.
	Sum string `json:",omitempty"`
	// Pinned is true when Sum is the binary's own record. A binary built
	// in vendor mode records no sums: such a module is fetched by version
	// and proven against the sum the go command reports, which it checks
	// with the checksum database (GOSUMDB) unless told not to.
	Pinned bool
	Source Source
	// Files are its licence and notice files, at the module root and in
	// the directories that can hold its packages, sorted by Name.
	Files []File
	// Licenses are the distinct SPDX identifiers found in Files, sorted;
	// empty with Files present means no file could be classified.
	Licenses []string
	// SourceOffer is the path of a note saying where the module's source
	// is, written when one of its licences obliges distributors to offer
	// the source (MPL, EPL, CDDL, GPL family); empty otherwise.
	SourceOffer string `json:",omitempty"`
	// Missing is true when the module has no licence file, or its files
	// could not be looked for (Reason says which).
	Missing bool
	Reason  string `json:",omitempty"`
}

// Replacement is what a build used in place of a module.
type Replacement struct {
	Path    string
	Version string `json:",omitempty"`
}

// File is one licence or notice file of a module.
type File struct {
	// Name is its slash-separated path in the module ("LICENSE",
	// "NOTICE.txt", "goyaml.v2/LICENSE").
	Name string
	// Path is the copy Collect wrote under Options.Work.
	Path string
	Size int64
	// SPDX is the licence expression the classifier found ("MIT",
	// "Apache-2.0", "MIT AND BSD-3-Clause"), or NoAssertion.
	SPDX string
	// Confidence is the classifier's lowest confidence among the licences
	// in SPDX, from 0 to 1; 0 with NoAssertion.
	Confidence float64
}

// NoAssertion is SPDX's word for a licence that could not be determined.
const NoAssertion = "NOASSERTION"

// ErrMissing is wrapped by Collect's error when RequireLicenses is set and
// modules have no licence file.
var ErrMissing = errors.New("modules without licence files")

// Collect lists the modules in binary's build info and copies the licence
// and notice files of each under opt.Work, classified. A module whose
// files fail their hash, or that cannot be had, is an error naming it.
// With RequireLicenses, modules without any licence file are an error
// wrapping ErrMissing that names them all; the Result is returned with it.
func Collect(ctx context.Context, binary string, opt Options) (*Result, error) {
	opt = opt.withDefaults()
	if opt.Work == "" {
		return nil, errors.New("golicenses: Options.Work is required")
	}
	name := binary
	if opt.Name != "" {
		name = opt.Name
	}
	if err := prepareWork(opt.Work); err != nil {
		return nil, fmt.Errorf("licences of %s: %w", name, err)
	}
	if opt.Offline {
		if err := checkOffline(opt.Env); err != nil {
			return nil, fmt.Errorf("licences of %s: %w", name, err)
		}
	}
	info, refs, err := readBuildInfo(binary, name, opt.MaxModules)
	if err != nil {
		return nil, err
	}
	c := &collector{opt: opt, binary: binary, out: filepath.Join(opt.Work, "files"), vendorEmpty: map[string]bool{}, stored: map[string]bool{}}
	mods, err := c.collect(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("licences of %s: %w", name, err)
	}
	res := &Result{GoVersion: info.GoVersion, Modules: mods, Package: info.Path}
	if opt.RequireLicenses {
		if err := res.checkMissing(); err != nil {
			return res, fmt.Errorf("licences of %s: %w", name, err)
		}
	}
	return res, nil
}

// checkMissing names every module reported missing.
func (r *Result) checkMissing() error {
	var names []string
	for _, m := range r.Modules {
		if m.Missing {
			names = append(names, fmt.Sprintf("%s (%s)", m.ref(), m.Reason))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrMissing, strings.Join(names, "; "))
}

func (m Module) ref() string {
	if m.Version == "" {
		return m.Path
	}
	return m.Path + "@" + m.Version
}

// prepareWork creates dir, which must be missing or empty: Collect never
// writes over files it did not make.
func prepareWork(dir string) error {
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("golicenses: work directory %s is not empty", dir)
	}
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("golicenses: work directory: %w", err)
	}
	return os.MkdirAll(dir, 0o755)
}

// Tree lists the files to ship, each at "<module path>/<name>" (the
// caller places it under /LICENSES/<artifact>/), with the source-offer
// notes as "<module path>/SOURCE-OFFER.txt".
func (r *Result) Tree() (*tree.Tree, error) {
	t := tree.New()
	add := func(p, src string, size int64) error {
		if err := t.Add(tree.Entry{Path: p, Kind: tree.File, Mode: 0o644, Source: src, Size: size}); err != nil {
			return fmt.Errorf("licence tree: %s: %w", p, err)
		}
		return nil
	}
	for _, m := range r.Modules {
		for _, f := range m.Files {
			if err := add(m.Path+"/"+f.Name, f.Path, f.Size); err != nil {
				return nil, err
			}
		}
		if m.SourceOffer != "" {
			info, err := os.Stat(m.SourceOffer)
			if err != nil {
				return nil, fmt.Errorf("licence tree: %w", err)
			}
			if err := add(m.Path+"/"+sourceOfferName, m.SourceOffer, info.Size()); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// Missing lists the modules without licence files, as path@version.
func (r *Result) Missing() []string {
	var out []string
	for _, m := range r.Modules {
		if m.Missing {
			out = append(out, m.ref())
		}
	}
	return slices.Clip(out)
}
