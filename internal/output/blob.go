package output

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Blobs reach a layout by copy or by reflink, never by hard link. A hard
// link is one inode for the cache entry and the output: whatever rewrites
// or truncates the output's blob in place (a tool "fixing" a layout, a
// chmod, a stray write) damages the cache entry too, and every later build
// that uses it. A reflink (FICLONE, on btrfs, XFS, bcachefs, ZFS 2.2+) is
// a file of its own whose shared extents are copied on write, so a change
// to either copy leaves the other intact, while it still costs no data
// copy or space, which is what made the hard link worth having. Where the
// file system cannot clone, the blob is copied.
//
// A blob is hashed as it is copied and the copy refused if it does not
// match its digest, unless its source is a layer file checked against its
// digest in this build (layer.File.Verified): then it is cloned or copied
// without reading it again.

// localBlob is a layer whose compressed blob is a file on local disk.
type localBlob interface{ BlobPath() string }

// layoutWriter writes blobs into the new layout p, which replaces prev,
// or, inPlace, is moved into it (update).
type layoutWriter struct {
	p       layout.Path
	prev    string
	digests func(string) (string, error)
	inPlace bool

	mu sync.Mutex
	// kept are prev's blobs the new layout takes as they are (inPlace).
	kept map[v1.Hash]bool
	// written are the layer blobs this build put into p.
	written []v1.Hash
	// removable, when set (prev holds other tools' entries), are the
	// only blobs of prev an update may remove: those of the entries
	// that went (see sharing).
	removable map[v1.Hash]bool
	// strays are the blobs an update killed before it finished may have
	// left named by no entry (strayList), removable as its own.
	strays map[v1.Hash]bool
}

func (w *layoutWriter) keep(d v1.Hash) {
	w.mu.Lock()
	w.kept[d] = true
	w.mu.Unlock()
}

// layer writes the compressed blob of l into the layout.
func (w *layoutWriter) layer(l v1.Layer) error {
	p := w.p
	d, err := l.Digest()
	if err != nil {
		return err
	}
	size, err := l.Size()
	if err != nil {
		return err
	}
	if w.reuse(d, size) {
		return nil
	}
	w.mu.Lock()
	w.written = append(w.written, d)
	w.mu.Unlock()
	verified := false
	if f, ok := l.(*layer.File); ok {
		verified = f.Verified
	}
	if lb, ok := l.(localBlob); ok {
		return putFile(p, d, size, lb.BlobPath(), verified)
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return putBlob(p, d, size, rc, !verified)
}

// reuse links the previous layout's blob d into the new one when the
// digest memory says it is still d: checked in this build without reading
// it, as the memory trusts a file only while its size, times, inode and
// device are unchanged.
func (w *layoutWriter) reuse(d v1.Hash, size int64) bool {
	if w.digests == nil || w.prev == "" || d.Algorithm != "sha256" {
		return false
	}
	old := filepath.Join(w.prev, "blobs", d.Algorithm, d.Hex)
	info, err := os.Lstat(old)
	if err != nil || !info.Mode().IsRegular() || info.Size() != size || !soleLink(info) {
		return false
	}
	if sum, err := w.digests(old); err != nil || sum != d.Hex {
		return false
	}
	if w.inPlace {
		w.keep(d)
		return true
	}
	if present(w.p, d) {
		return true
	}
	dst := blobPath(w.p, d)
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return false
	}
	return os.Link(old, dst) == nil || present(w.p, d)
}

// putBytes writes a blob held in memory (a config or manifest), checked
// against its digest like any other. A layout updated in place keeps its
// own copy when it holds these very bytes.
func (w *layoutWriter) putBytes(d v1.Hash, b []byte) error {
	if w.inPlace {
		old := filepath.Join(w.prev, "blobs", d.Algorithm, d.Hex)
		if info, err := os.Lstat(old); err == nil && info.Mode().IsRegular() && info.Size() == int64(len(b)) {
			if have, err := os.ReadFile(old); err == nil && bytes.Equal(have, b) {
				w.keep(d)
				return nil
			}
		}
	}
	return putBlob(w.p, d, int64(len(b)), bytes.NewReader(b), true)
}

// update moves the new layout p into the layout prev: first the blobs
// prev lacks (or holds damaged), so that prev's index, still in place,
// names only whole blobs; then index.json, in one rename, if it changed;
// last, prev's blobs the new index does not name. A build killed in
// between leaves a whole layout, with blobs to spare that the next
// update removes.
func (w *layoutWriter) update(prev string) error {
	src := filepath.Join(string(w.p), "blobs")
	var moved, added []string
	// Until the new index is in place, the blobs moved in are named by
	// no index: a failure takes them out again, so that the layout is
	// the old one, not the old one with strays that only a later build
	// of pallet would know to remove. (A damaged blob replaced stays
	// replaced: the old index names it.)
	placed := false
	defer func() {
		if !placed {
			for _, f := range added {
				os.Remove(f)
			}
		}
	}()
	algs, err := os.ReadDir(src)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	type move struct {
		alg, name string
		h         v1.Hash
	}
	var moves []move
	for _, a := range algs {
		files, err := os.ReadDir(filepath.Join(src, a.Name()))
		if err != nil {
			return err
		}
		for _, f := range files {
			h := v1.Hash{Algorithm: a.Name(), Hex: f.Name()}
			moves = append(moves, move{a.Name(), f.Name(), h})
			w.keep(h)
		}
	}
	// Until the update ends, a kill leaves named by no entry the blobs
	// moved in (before the new index is in place) or those only the old
	// index named (after). In a layout of pallet's alone the next update
	// removes every such blob; where other tools' entries are kept, it
	// removes only what the list beside the layout says is pallet's, as
	// a blob no entry names may be another tool's, being written.
	strays := strayList(prev)
	w.strays = readStrays(strays)
	if w.removable != nil {
		unused, _, err := w.sortBlobs(prev)
		if err != nil {
			return err
		}
		var pending []string
		for _, f := range unused {
			pending = append(pending, filepath.Base(filepath.Dir(f))+":"+filepath.Base(f))
		}
		for _, m := range moves {
			if _, err := os.Lstat(filepath.Join(prev, "blobs", m.alg, m.name)); errors.Is(err, fs.ErrNotExist) {
				pending = append(pending, m.h.String())
			}
		}
		if len(pending) > 0 {
			if err := tempfile.WriteFile(strays, []byte(strings.Join(pending, "\n")+"\n")); err != nil {
				return err
			}
		}
	}
	for _, a := range algs {
		if err := os.MkdirAll(filepath.Join(prev, "blobs", a.Name()), 0o755); err != nil {
			return err
		}
	}
	for _, m := range moves {
		dst := filepath.Join(prev, "blobs", m.alg, m.name)
		_, statErr := os.Lstat(dst)
		if err := os.Rename(filepath.Join(src, m.alg, m.name), dst); err != nil {
			return err
		}
		moved = append(moved, dst)
		if errors.Is(statErr, fs.ErrNotExist) {
			added = append(added, dst)
		}
	}
	// oci-layout stays as it is, even when another tool wrote it in
	// other bytes (replaceable checked it is a layout marker): it is the
	// file builds lock, and a new inode under that name would let a
	// second build take the lock while this one still holds the old.
	fresh, err := readIndexBytes(filepath.Join(string(w.p), "index.json"))
	if err != nil {
		return err
	}
	unused, recent, err := w.sortBlobs(prev)
	if err != nil {
		return err
	}
	if have, err := readIndexBytes(filepath.Join(prev, "index.json")); err != nil || !bytes.Equal(have, fresh) {
		// The blobs the new index names reach the disk before it does: a
		// crash must not leave an index.json naming blobs whose content
		// was never written (delayed allocation keeps new files' data in
		// memory for seconds), with the old index, which was whole,
		// gone. That is the blobs moved in, with their directories (a new
		// <alg> is an entry of blobs/), and the kept ones changed
		// recently (a layout written a moment ago, never flushed).
		// The blobs moved in were written in this build: recent holds
		// them already.
		toSync := recent
		if len(moved) > 0 {
			for _, a := range algs {
				toSync = append(toSync, filepath.Join(prev, "blobs", a.Name()))
			}
		}
		toSync = append(toSync, filepath.Join(string(w.p), "index.json"))
		if err := syncFiles(toSync); err != nil {
			return err
		}
		if err := renameIndex(filepath.Join(string(w.p), "index.json"), filepath.Join(prev, "index.json")); err != nil {
			return err
		}
		// And the new index is in place before the blobs only the old
		// one named are removed.
		placed = true
		if err := syncFiles([]string{filepath.Join(prev, "index.json")}); err != nil {
			return err
		}
	}
	placed = true
	for _, f := range unused {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := os.Remove(strays); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// strayList is the file beside the layout dir that lists, while an
// update runs, the blobs it may leave named by no entry if it is killed.
func strayList(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".strays")
}

// maxStrayList bounds the stray list read: a line per blob of a layout,
// 72 bytes for a sha256.
const maxStrayList = 16 << 20

// readStrays reads the blobs a stray list names; anything unreadable
// names none, which only leaves them where they are.
func readStrays(file string) map[v1.Hash]bool {
	b, err := bounded.ReadRegular(file, maxStrayList)
	if err != nil {
		return nil
	}
	strays := map[v1.Hash]bool{}
	for line := range strings.Lines(string(b)) {
		if h, err := v1.NewHash(strings.TrimSpace(line)); err == nil {
			strays[h] = true
		}
	}
	return strays
}

// renameIndex moves the new index.json into the layout; a variable, so
// that a test can make it fail.
var renameIndex = os.Rename

// unflushedAge is how long written data may stay in memory before the
// kernel writes it back (dirty_expire_centisecs is 30 s by default).
const unflushedAge = time.Minute

// sortBlobs lists prev's blobs: those the new index does not name, and
// those it names that were changed within unflushedAge.
func (w *layoutWriter) sortBlobs(prev string) (unused, recent []string, err error) {
	algs, err := os.ReadDir(filepath.Join(prev, "blobs"))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	for _, a := range algs {
		files, err := os.ReadDir(filepath.Join(prev, "blobs", a.Name()))
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			path := filepath.Join(prev, "blobs", a.Name(), f.Name())
			if h := (v1.Hash{Algorithm: a.Name(), Hex: f.Name()}); !w.kept[h] {
				if w.removable == nil || w.removable[h] || w.strays[h] {
					unused = append(unused, path)
				}
				continue
			}
			info, err := f.Info()
			if err != nil {
				return nil, nil, err
			}
			if !tree.StampOf(info).Settled(now, unflushedAge) {
				recent = append(recent, path)
			}
		}
	}
	return unused, recent, nil
}

// syncFiles flushes files, concurrently (each waits on the disk), and
// then the directories holding them.
func syncFiles(paths []string) error {
	var g errgroup.Group
	g.SetLimit(8)
	dirs := map[string]bool{}
	for _, p := range paths {
		g.Go(func() error { return syncPath(p) })
		dirs[filepath.Dir(p)] = true
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		return nil // directories cannot be opened for syncing there
	}
	for d := range dirs {
		if err := syncPath(d); err != nil {
			return err
		}
	}
	return nil
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return nil
}

// putFile writes the blob at src: a verified one is cloned where the file
// system can, else it is copied, hashed unless verified.
func putFile(p layout.Path, d v1.Hash, size int64, src string, verified bool) error {
	if verified {
		done, err := cloneBlob(p, d, size, src)
		if done || err != nil {
			return err
		}
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return putBlob(p, d, size, f, !verified)
}

func blobPath(p layout.Path, d v1.Hash) string {
	return filepath.Join(string(p), "blobs", d.Algorithm, d.Hex)
}

// present says whether the blob is in the layout already: an image can
// list a layer twice, and images share layers.
func present(p layout.Path, d v1.Hash) bool {
	_, err := os.Stat(blobPath(p, d))
	return err == nil
}

// create opens a new temporary file beside the blob's place; the caller
// renames it there once complete, so a blob in the layout is always whole
// and blobs written concurrently under one digest do not interleave.
func create(p layout.Path, d v1.Hash) (*os.File, error) {
	dir := filepath.Dir(blobPath(p, d))
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	return tempfile.Create(dir, "."+d.Hex+".new-*")
}

// cloneBlob clones src to the blob's place. It reports false, and no error,
// when the file system cannot clone, so the caller copies instead.
func cloneBlob(p layout.Path, d v1.Hash, size int64, src string) (bool, error) {
	if present(p, d) {
		return true, nil
	}
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := create(p, d)
	if err != nil {
		return false, err
	}
	defer os.Remove(out.Name())
	if err := clone(out, in); err != nil {
		out.Close()
		return false, nil
	}
	fi, err := out.Stat()
	if err == nil && fi.Size() != size {
		err = fmt.Errorf("blob %s: %s has %d bytes, want %d", d, src, fi.Size(), size)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	return true, os.Rename(out.Name(), blobPath(p, d))
}

// putBlob copies r to the blob's place, hashing it on the way when check
// is set, and refuses content that is not the digest's or not size bytes
// long (size < 0: unknown).
func putBlob(p layout.Path, d v1.Hash, size int64, r io.Reader, check bool) error {
	if present(p, d) {
		return nil
	}
	var h hash.Hash
	if check {
		var err error
		if h, err = hasher(d); err != nil {
			return err
		}
		r = io.TeeReader(r, h)
	}
	out, err := create(p, d)
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	n, err := io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("blob %s: %w", d, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("blob %s: got %d bytes, want %d", d, n, size)
	}
	if h != nil {
		if got := hex.EncodeToString(h.Sum(nil)); got != d.Hex {
			return fmt.Errorf("blob %s: content has digest %s:%s; the source is damaged", d, d.Algorithm, got)
		}
	}
	if err := os.Rename(out.Name(), blobPath(p, d)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

func hasher(d v1.Hash) (hash.Hash, error) {
	switch d.Algorithm {
	case "sha256":
		return sha256.New(), nil
	case "sha512":
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("blob %s: cannot check digest algorithm %q", d, d.Algorithm)
}
