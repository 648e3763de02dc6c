package golicenses

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/modhash"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// licenseFiles are the licence files of one module, by name at its root.
type licenseFiles map[string][]byte

// capture keeps the licence files of a module (those
// artifact.ModuleLicenseFilter accepts) as they are read for hashing, so that the bytes kept are
// exactly the bytes proven.
type capture struct {
	mod      string
	prefix   string // "<path>@<version>/" in the names hashed
	maxSize  int64
	maxFiles int
	files    licenseFiles
	keep     func(rel string) bool
}

// newCapture is a capture for module v, whose files are names (as the
// hash lists them, "<path>@<version>/<file>").
func newCapture(mod string, v module.Version, opt Options, names []string) *capture {
	c := &capture{mod: mod, prefix: v.Path + "@" + v.Version + "/", maxSize: opt.MaxFileSize, maxFiles: opt.MaxFilesPerModule, files: licenseFiles{}}
	var rels []string
	for _, n := range names {
		if rel, ok := strings.CutPrefix(n, c.prefix); ok {
			rels = append(rels, rel)
		}
	}
	c.keep = artifact.ModuleLicenseFilter(rels)
	return c
}

// wrap returns r, teeing its content into c when name is a licence file
// at the module root.
func (c *capture) wrap(name string, r io.ReadCloser) (io.ReadCloser, error) {
	rel, ok := strings.CutPrefix(name, c.prefix)
	if !ok || !c.keep(rel) {
		return r, nil
	}
	if len(c.files) >= c.maxFiles {
		r.Close()
		return nil, fmt.Errorf("module %s has more than %d licence files (MaxFilesPerModule)", c.mod, c.maxFiles)
	}
	buf := &bytes.Buffer{}
	c.files[rel] = nil
	return &teeCapture{r: r, buf: buf, max: c.maxSize, done: func() { c.files[rel] = buf.Bytes() }, what: fmt.Sprintf("licence file %s of module %s", rel, c.mod)}, nil
}

// teeCapture copies what is read into buf, refusing more than max bytes,
// and hands buf over once the file has been read to its end.
type teeCapture struct {
	r    io.ReadCloser
	buf  *bytes.Buffer
	max  int64
	done func()
	what string
}

func (t *teeCapture) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if int64(t.buf.Len()+n) > t.max {
		return 0, fmt.Errorf("%s is over %d bytes (MaxFileSize)", t.what, t.max)
	}
	t.buf.Write(p[:n])
	if err == io.EOF {
		t.done()
	}
	return n, err
}

func (t *teeCapture) Close() error { return t.r.Close() }

// errMismatch marks a module whose files are not those its hash names.
var errMismatch = errors.New("hash mismatch")

// verifyZip proves a module zip against sum and returns the licence files
// at its root. Before it is hashed, the zip's names and declared sizes are
// checked (golang.org/x/mod/zip: 500 MiB in all), so hashing reads no more
// than a module may hold. The zip's hash is remembered by its stamp
// (Options.RememberHash), as pallet remembers the digests of its inputs:
// the modules a build links are many and large (a Kubernetes binary's
// hash to gigabytes), and the same modules come back in every binary and
// every build. With the hash remembered, only the licence files are read.
func verifyZip(zipFile, mod string, v module.Version, sum string, opt Options) (licenseFiles, error) {
	z, err := modhash.OpenZip(zipFile)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", mod, err)
	}
	defer z.Close()
	byName := map[string]*zip.File{}
	var names []string
	for _, f := range z.File {
		if _, dup := byName[f.Name]; dup {
			return nil, fmt.Errorf("module %s: zip %s holds %s twice", mod, zipFile, f.Name)
		}
		byName[f.Name] = f
		names = append(names, f.Name)
	}
	c := newCapture(mod, v, opt, names)
	open := func(name string) (io.ReadCloser, error) {
		r, err := byName[name].Open()
		if err != nil {
			return nil, err
		}
		return c.wrap(name, r)
	}
	hashed := false
	hash := func() (string, error) {
		hashed = true
		if err := modhash.CheckZip(v, zipFile); err != nil {
			return "", fmt.Errorf("zip: %w", err)
		}
		return modhash.Hash1(names, open)
	}
	var got string
	if opt.RememberHash != nil {
		got, err = opt.RememberHash(zipFile, "golicenses-h1-v1", hash)
	} else {
		got, err = hash()
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: hashing %s: %w", mod, zipFile, err)
	}
	if got != sum {
		return nil, fmt.Errorf("module %s: %w: %s hashes to %s, the binary records %s", mod, errMismatch, zipFile, got, sum)
	}
	if !hashed {
		// The zip is the one hashed before (same stamp): its licence
		// files are read from it alone.
		if err := c.readAll(names, open); err != nil {
			return nil, fmt.Errorf("module %s: %s: %w", mod, zipFile, err)
		}
	}
	return c.files, nil
}

// readAll reads the files c keeps through open, as hashing them would.
func (c *capture) readAll(names []string, open func(string) (io.ReadCloser, error)) error {
	for _, n := range names {
		rel, ok := strings.CutPrefix(n, c.prefix)
		if !ok || !c.keep(rel) {
			continue
		}
		r, err := open(n)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// verifyDir proves a module cache's extracted directory against sum, as
// dirhash.HashDir would, and returns the licence files at its root. Files
// are opened through an os.Root, so no symbolic link leads out of the
// directory, and at most a module's worth of bytes is read.
func verifyDir(dir, mod string, v module.Version, sum string, opt Options) (licenseFiles, error) {
	prefix := v.Path + "@" + v.Version
	names, err := dirhash.DirFiles(dir, prefix)
	if err != nil {
		return nil, fmt.Errorf("module %s: listing %s: %w", mod, dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", mod, err)
	}
	defer root.Close()
	budget := &limitedBudget{left: modzip.MaxZipFile, what: fmt.Sprintf("module %s: directory %s", mod, dir)}
	c := newCapture(mod, v, opt, names)
	got, err := modhash.Hash1(names, func(name string) (io.ReadCloser, error) {
		rel := filepath.FromSlash(strings.TrimPrefix(name, prefix+"/"))
		f, err := root.Open(rel)
		if err != nil {
			return nil, err
		}
		return c.wrap(name, &budgetReader{ReadCloser: f, b: budget})
	})
	if err != nil {
		return nil, fmt.Errorf("module %s: hashing %s: %w", mod, dir, err)
	}
	if got != sum {
		return nil, fmt.Errorf("module %s: %w: %s hashes to %s, the binary records %s", mod, errMismatch, dir, got, sum)
	}
	return c.files, nil
}

// limitedBudget is the bytes left to read across the files of a directory.
type limitedBudget struct {
	left int64
	what string
}

type budgetReader struct {
	io.ReadCloser
	b *limitedBudget
}

func (r *budgetReader) Read(p []byte) (int, error) {
	if r.b.left <= 0 {
		// A file ending exactly at the budget is fine: probe for its end.
		var probe [1]byte
		if n, err := r.ReadCloser.Read(probe[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%s holds more than a module may (%d bytes)", r.b.what, int64(modzip.MaxZipFile))
	}
	if int64(len(p)) > r.b.left {
		p = p[:r.b.left]
	}
	n, err := r.ReadCloser.Read(p)
	r.b.left -= int64(n)
	return n, err
}
