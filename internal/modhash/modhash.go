// Package modhash hashes a Go module's files as go.sum's h1: does
// (golang.org/x/mod/sumdb/dirhash.Hash1), from a directory or a module
// zip, without the garbage dirhash makes of it: its io.Copy takes a fresh
// 32 KiB buffer for every file (neither an os.File nor a zip entry has a
// WriteTo that avoids one). Proving the modules of a binary like
// containerd's reads tens of thousands of files, and with the licence
// classifier's tens of megabytes live, every collection that garbage sets
// off scans them: a cold build spent some 40 % of its CPU in the
// collector. Here a module's files share one pooled buffer, and Deflate
// entries are read by pooled klauspost decoders: with them, hashing a
// 69 MB module zip (azure-sdk-for-go) took two thirds of the time it
// took with compress/flate's.
package modhash

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	kflate "github.com/klauspost/compress/flate"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// Hash1 is dirhash.Hash1, the h1: hash of files as open gives them,
// reading every file through one buffer.
func Hash1(files []string, open func(string) (io.ReadCloser, error)) (string, error) {
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	return dirhash.Hash1(files, func(name string) (io.ReadCloser, error) {
		r, err := open(name)
		if err != nil {
			return nil, err
		}
		return &copyReader{ReadCloser: r, buf: *bp}, nil
	})
}

// Dir is dirhash.HashDir(dir, prefix, dirhash.Hash1): the h1: hash of the
// files under dir, named prefix/<path under dir>. The same files are
// opened the same way, so it fails as HashDir does.
func Dir(dir, prefix string) (string, error) {
	files, err := dirhash.DirFiles(dir, prefix)
	if err != nil {
		return "", err
	}
	return Hash1(files, func(name string) (io.ReadCloser, error) {
		return os.Open(filepath.Join(dir, strings.TrimPrefix(name, prefix)))
	})
}

// Zip is dirhash.HashZip(zipFile, dirhash.Hash1): the h1: hash of the
// entries of a module zip, by name. It reads the same entries and fails
// as HashZip does; a corrupt deflate stream is a
// compress/flate.CorruptInputError in both.
func Zip(zipFile string) (string, error) {
	z, err := OpenZip(zipFile)
	if err != nil {
		return "", err
	}
	defer z.Close()
	var files []string
	entries := make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		files = append(files, f.Name)
		// As in HashZip, a name held twice is hashed twice, with the
		// content of its last entry.
		entries[f.Name] = f
	}
	return Hash1(files, func(name string) (io.ReadCloser, error) {
		f := entries[name]
		if f == nil {
			return nil, fmt.Errorf("file %q not found in zip", name)
		}
		return f.Open()
	})
}

// CheckZip refuses a zip that is not one of module v as
// golang.org/x/mod/zip lays one out: names under path@version/, each
// once, and declared sizes within a module's 500 MiB unpacked. It reads
// the zip's directory only, so that hashing a zip it passes reads no
// more than a module may hold.
func CheckZip(v module.Version, zipFile string) error {
	// Its error is CheckedFiles.Err where an entry is at fault, as
	// documented: the list need not be asked again.
	_, err := modzip.CheckZip(v, zipFile)
	return err
}

// OpenZip is zip.OpenReader, with Deflate entries read by pooled
// decoders: each is handed back when its entry is closed.
func OpenZip(name string) (*zip.ReadCloser, error) {
	z, err := zip.OpenReader(name)
	if err != nil {
		return nil, err
	}
	z.RegisterDecompressor(zip.Deflate, inflater)
	return z, nil
}

// bufSize is io.Copy's own.
const bufSize = 32 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// copyReader gives io.Copy, as dirhash calls it for every file, the
// buffer of the module it is hashing.
type copyReader struct {
	io.ReadCloser
	buf []byte
}

func (r *copyReader) WriteTo(w io.Writer) (int64, error) {
	// Wrapped so that CopyBuffer does not call this WriteTo again, nor
	// an os.File's, which takes a buffer of its own.
	return io.CopyBuffer(w, struct{ io.Reader }{r.ReadCloser}, r.buf)
}

// inflaters are the deflate decoders of module zips, kept for the next
// entry: a decoder holds a 32 KiB window and its tables. klauspost's
// decoder (failing with compress/flate's error types) wraps a source
// that is not an io.ByteReader (archive/zip gives it a section of the
// file) in a new 4 KiB bufio.Reader at every Reset, so the pooled state
// keeps one of its own and resets it.
var inflaters sync.Pool

type inflaterState struct {
	d  io.ReadCloser
	br *bufio.Reader
}

// inflater is archive/zip's Deflate decompressor, from the pool.
func inflater(r io.Reader) io.ReadCloser {
	if st, ok := inflaters.Get().(*inflaterState); ok {
		st.br.Reset(r)
		if err := st.d.(kflate.Resetter).Reset(st.br, nil); err == nil {
			return &pooledInflater{st: st}
		}
	}
	st := &inflaterState{br: bufio.NewReader(r)}
	st.d = kflate.NewReader(st.br)
	return &pooledInflater{st: st}
}

type pooledInflater struct{ st *inflaterState }

func (p *pooledInflater) Read(b []byte) (int, error) {
	if p.st == nil {
		return 0, errors.New("flate: read after close")
	}
	return p.st.d.Read(b)
}

func (p *pooledInflater) Close() error {
	if p.st == nil {
		return nil
	}
	err := p.st.d.Close()
	// The buffer lets go of the zip it read, which the pool would keep.
	p.st.br.Reset(nil)
	inflaters.Put(p.st)
	p.st = nil
	return err
}
