package golicenses

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tree"
)

// collector carries one Collect call.
type collector struct {
	opt    Options
	binary string
	out    string // where licence copies are written
	vendor map[string]vendorEntry
	cache  string // module cache, once asked
	// vendorEmpty are the modules vendored without licence files.
	vendorEmpty map[string]bool
	// stored are the files written under out, by content.
	stored map[string]bool
	// loading says the classifier is being loaded (preload).
	loading atomic.Bool
}

// found is where a module's files were read and what they are.
type found struct {
	source Source
	sum    string
	pinned bool
	files  licenseFiles
	reason string // why nothing was found, when source is FromNowhere
}

// collect finds every module's files: first those at hand (source tree,
// vendor directory, module cache), then the rest with one batch of
// downloads. The module cache's zips are proven in parallel: hashing them
// is most of the work when their hashes are not yet remembered.
func (c *collector) collect(ctx context.Context, refs []modRef) ([]Module, error) {
	if err := c.loadVendor(); err != nil {
		return nil, err
	}
	results := make([]found, len(refs))
	at := make([]bool, len(refs)) // results[i] is found
	var inCache []int
	for i, r := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, ok, err := c.atHand(r)
		if err != nil {
			return nil, err
		}
		switch {
		case ok:
			results[i], at[i] = f, true
			c.preload(f.files)
		case r.Sum != "":
			inCache = append(inCache, i)
		}
	}
	if len(inCache) > 0 {
		if _, err := c.modCache(ctx); err != nil {
			return nil, err
		}
		// Every zip is proven, and the first failure in the binary's
		// order is the one said: the same error whatever finished first.
		errs := make([]error, len(refs))
		var g errgroup.Group
		g.SetLimit(runtime.GOMAXPROCS(0))
		for _, i := range inCache {
			g.Go(func() error {
				if errs[i] = ctx.Err(); errs[i] == nil {
					results[i], at[i], errs[i] = c.fromCache(ctx, refs[i])
				}
				if errs[i] == nil && at[i] {
					c.preload(results[i].files)
				}
				return nil
			})
		}
		g.Wait()
		for _, i := range inCache {
			if errs[i] != nil {
				return nil, errs[i]
			}
		}
	}
	var pending []int
	for i := range refs {
		if !at[i] {
			pending = append(pending, i)
		}
	}
	if len(pending) > 0 {
		var want []modRef
		for _, i := range pending {
			want = append(want, refs[i])
		}
		got, err := c.download(ctx, want)
		if err != nil {
			return nil, err
		}
		for k, i := range pending {
			results[i] = got[k]
		}
	}
	mods := make([]Module, len(refs))
	for i, r := range refs {
		m, err := c.finish(r, results[i])
		if err != nil {
			return nil, err
		}
		mods[i] = m
	}
	return mods, nil
}

// preload starts loading the classifier as soon as a text is found that
// Options.Remember keeps no classification of: the load (about a second)
// then runs while the other zips are proven, not after them.
func (c *collector) preload(files licenseFiles) {
	if c.loading.Load() {
		return
	}
	for _, text := range files {
		if !isRemembered(c.opt, text) {
			if !c.loading.Swap(true) {
				loadClassifier()
			}
			return
		}
	}
}

// atHand finds a module's files in the caller's source tree or vendor
// directory. ok is false when the module is to be looked for in the module
// cache (when the binary pins it) or downloaded.
func (c *collector) atHand(r modRef) (found, bool, error) {
	if r.Main && r.Sum == "" {
		if c.opt.SourceDir != "" {
			f, err := c.fromMainDir(r)
			return f, true, err
		}
		if !r.fetchable() {
			return found{reason: fmt.Sprintf("the main module was built from a directory (version %q) and no source directory was given", r.Version)}, true, nil
		}
		// A release binary stamped with its tag: fetched by version.
		return found{}, false, nil
	}
	if f, ok, err := c.fromVendor(r); err != nil {
		return f, true, err
	} else if ok {
		if f.files.hasRootLicence() || !r.fetchable() {
			return f, true, nil
		}
		// go mod vendor copies only capitalised LICENSE*, COPYING*,
		// NOTICE*, COPYRIGHT* files: a "LICENCE" or "license.md" is
		// left behind. Look in the module itself, keeping this answer
		// if it cannot be had.
		c.vendorEmpty[r.Path] = true
	}
	if r.local() {
		f, err := c.fromReplaceDir(r)
		return f, true, err
	}
	// Not pinned by the binary (Sum ""): only the go command can check it.
	return found{}, false, nil
}

// fromMainDir reads the main module's files from the source directory,
// after checking it is that module.
func (c *collector) fromMainDir(r modRef) (found, error) {
	gomod := filepath.Join(c.opt.SourceDir, "go.mod")
	data, err := bounded.ReadFile(gomod, artifact.MaxGoMod)
	if err == nil {
		if p := modfile.ModulePath(data); p != r.Path {
			return found{}, fmt.Errorf("main module %s: the source directory %s holds module %q", r.Path, c.opt.SourceDir, p)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return found{}, fmt.Errorf("main module %s: %w", r.Path, err)
	}
	files, err := readDirLicenses(c.opt.SourceDir, r.ref(), c.opt, nil)
	return found{source: FromSourceDir, files: files}, err
}

// fromReplaceDir reads a module the build replaced with a directory,
// named relative to the main module's directory as in its go.mod.
func (c *collector) fromReplaceDir(r modRef) (found, error) {
	if c.opt.SourceDir == "" {
		return found{reason: "built from a directory on the build machine, and no source directory was given"}, nil
	}
	dir := filepath.FromSlash(r.From.Path)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(c.opt.SourceDir, dir)
	}
	files, err := readDirLicenses(dir, r.ref(), c.opt, nil)
	return found{source: FromSourceDir, files: files}, err
}

// fromCache proves the module cache's zip (or, without one, its extracted
// directory) against the binary's hash. Either failing is an error: a
// module cache holding other files than go.sum names has been tampered
// with, and downloading again would hide it.
func (c *collector) fromCache(ctx context.Context, r modRef) (found, bool, error) {
	cache, err := c.modCache(ctx)
	if err != nil {
		return found{}, false, err
	}
	if cache == "" {
		return found{}, false, nil
	}
	download, dir, err := artifact.ModuleCachePaths(cache, r.From)
	if err != nil {
		return found{}, false, fmt.Errorf("module %s: %w", r.ref(), err)
	}
	zipFile := download + ".zip"
	if regular(zipFile) {
		files, err := c.verifyZip(zipFile, r)
		return found{source: FromCacheZip, sum: r.Sum, pinned: true, files: files}, true, err
	}
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		files, err := verifyDir(dir, r.ref(), r.From, r.Sum, c.opt)
		return found{source: FromCacheDir, sum: r.Sum, pinned: true, files: files}, true, err
	}
	return found{}, false, nil
}

// verifyZip proves the module cache's zip of r and reads its licence
// files (verifyZip), or takes what another call of the build did for
// the zip as it is now (Options.ShareZip). The map is the caller's own:
// finish deletes from it the files it does not ship, while another
// platform's call may be reading the shared one.
func (c *collector) verifyZip(zipFile string, r modRef) (licenseFiles, error) {
	read := func() (map[string][]byte, error) { return verifyZip(zipFile, r.ref(), r.From, r.Sum, c.opt) }
	if c.opt.ShareZip == nil {
		return read()
	}
	info, err := os.Stat(zipFile)
	if err != nil {
		return read()
	}
	key := fmt.Sprintf("%s\x00%+v\x00%s\x00%s@%s\x00%s\x00%d\x00%d", zipFile, tree.StampOf(info), r.ref(), r.From.Path, r.From.Version, r.Sum, c.opt.MaxFileSize, c.opt.MaxFilesPerModule)
	files, err := c.opt.ShareZip(key, read)
	return maps.Clone(files), err
}

func regular(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && info.Mode().IsRegular()
}

// readDirLicenses reads the licence files of the module in dir, at its
// root and in the directories below that hold its packages (see
// artifact.ModuleLicenseFiles): regular files only (a module zip holds no links, and a
// link could lead out of the tree), opened through an os.Root. skip, when
// set, leaves out subdirectories (slash-separated, relative to dir) that
// belong to other modules, as in a vendor directory.
func readDirLicenses(dir, mod string, opt Options, skip func(rel string) bool) (licenseFiles, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", mod, err)
	}
	defer root.Close()
	names, err := artifact.ModuleLicenseFiles(dir, skip, opt.SourceSelected)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", mod, err)
	}
	files := licenseFiles{}
	for _, rel := range names {
		if err := module.CheckFilePath(rel); err != nil {
			return nil, fmt.Errorf("module %s: licence file %q in %s: %w", mod, rel, dir, err)
		}
		if len(files) >= opt.MaxFilesPerModule {
			return nil, fmt.Errorf("module %s has more than %d licence files in %s (MaxFilesPerModule)", mod, opt.MaxFilesPerModule, dir)
		}
		data, err := readRegular(root, filepath.FromSlash(rel), opt.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("module %s: licence file %s in %s: %w", mod, rel, dir, err)
		}
		files[rel] = data
	}
	return files, nil
}

// readRegular reads a regular file of root, at most max bytes.
func readRegular(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := bounded.ReadAll(f, max)
	var tl *bounded.TooLargeError
	if errors.As(err, &tl) {
		return nil, fmt.Errorf("%w (MaxFileSize)", err)
	}
	return data, err
}

// finish writes a module's files under the work directory, classifies
// them and writes the source-offer note its licences call for.
func (c *collector) finish(r modRef, f found) (Module, error) {
	m := Module{Path: r.Path, Version: r.Version, Main: r.Main, Source: f.source, Sum: f.sum, Pinned: f.pinned, Files: []File{}, Licenses: []string{}}
	if r.Replaced {
		m.Replace = &Replacement{Path: r.From.Path, Version: r.From.Version}
	}
	if f.source == FromNowhere {
		m.Missing, m.Reason = true, f.reason
		return m, nil
	}
	if f.reason == "" {
		f.reason = "no licence file at the module root"
	}
	names := make([]string, 0, len(f.files))
	for n, text := range f.files {
		// Only the text tells a licence-named script without an
		// extension (a module's LICENSE-check) from a licence.
		if artifact.IsScriptText(text) {
			delete(f.files, n)
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	classified := map[string]classification{}
	for _, n := range names {
		cl, err := c.classify(f.files[n])
		if err != nil {
			return m, err
		}
		classified[n] = cl
	}
	keep := nestedKept(classified)
	for _, n := range names {
		if !keep(n) {
			delete(f.files, n)
			continue
		}
		file, err := c.writeFile(r, n, f.files[n], classified[n])
		if err != nil {
			return m, err
		}
		m.Files = append(m.Files, file.File)
		for _, id := range file.ids {
			if !slices.Contains(m.Licenses, id) {
				m.Licenses = append(m.Licenses, id)
			}
		}
	}
	slices.Sort(m.Licenses)
	if len(m.Files) == 0 {
		m.Missing, m.Reason = true, f.reason
	} else if !f.files.hasLicence() {
		m.Missing, m.Reason = true, "only notice files, no licence file"
	}
	if ids := needsSourceOffer(m.Licenses); len(ids) > 0 {
		note, err := c.store(sourceOffer(m, ids))
		if err != nil {
			return m, fmt.Errorf("module %s: %w", r.ref(), err)
		}
		m.SourceOffer = note
	}
	return m, nil
}

// hasLicence tells whether any of the files is a licence rather than a
// notice: a NOTICE names the authors, it grants nothing.
func (l licenseFiles) hasLicence() bool {
	for name := range l {
		if !isNotice(name) {
			return true
		}
	}
	return false
}

// nestedKept decides which files below a module's root ship: as
// go-licenses takes a file below the root only when it is a licence the
// classifier knows, a licence-named file there that is not one
// ("license_ids.txt", a list of identifiers) stays out. NOTICE files
// there ship (go-licenses takes only those beside the licence it chose):
// attributions are cheap to carry and costly to miss. Files at the root
// all ship: there a licence the classifier does not know is still the
// module's licence.
func nestedKept(classified map[string]classification) func(string) bool {
	return func(n string) bool {
		return path.Dir(n) == "." || isNotice(n) || classified[n].spdx != NoAssertion
	}
}

// isNotice tells a notice file (it names authors, it grants nothing) from
// a licence, by name.
func isNotice(name string) bool {
	return strings.HasPrefix(strings.ToLower(path.Base(name)), "notice")
}

// hasRootLicence tells whether a licence (not a notice) is at the root.
func (l licenseFiles) hasRootLicence() bool {
	for name := range l {
		if !isNotice(name) && !strings.Contains(name, "/") {
			return true
		}
	}
	return false
}

type classifiedFile struct {
	File
	ids []string
}

// writeFile keeps a licence file's bytes under the work directory once per
// content: the many modules shipping the same Apache-2.0 text share one
// copy, and a binary linking a hundred modules writes a few dozen files in
// one directory, not a directory per module path (creating those was most
// of a rebuild's licence work).
func (c *collector) writeFile(r modRef, name string, data []byte, cl classification) (classifiedFile, error) {
	p, err := c.store(data)
	if err != nil {
		return classifiedFile{}, fmt.Errorf("module %s: %w", r.ref(), err)
	}
	return classifiedFile{File: File{Name: name, Path: p, Size: int64(len(data)), SPDX: cl.spdx, Confidence: cl.confidence}, ids: cl.ids}, nil
}

// store writes data under the work directory by its sha256, once.
func (c *collector) store(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	p := filepath.Join(c.out, hex.EncodeToString(sum[:]))
	if c.stored[p] {
		return p, nil
	}
	if err := writeNew(p, data); err != nil {
		return "", err
	}
	c.stored[p] = true
	return p, nil
}

// writeNew writes a file that must not exist yet: Collect writes over
// nothing, its own files included.
func writeNew(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
