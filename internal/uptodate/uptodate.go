// Package uptodate tells, from file stamps alone, that a build would
// write what its outputs already hold: make's answer, with ninja's care.
// A build that finished writes a Note: a digest of the stamps (size,
// times, inode, device, mode) of every input path it read and of every
// output it wrote, under a key naming everything else the build depended
// on. The next build with the same key takes the stamps again; when both
// digests match, nothing changed since, and the outputs are left as they
// are without reading a byte.
//
// Stamps are taken before the build reads its inputs, so a change made
// while it runs is seen next time. A Note is kept only when every input
// had settled (was last changed longer ago than timestamps can tell
// apart) when the build began: a file changed twice within one tick keeps
// its stamp, and would otherwise be taken as unchanged.
package uptodate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Settle is how long a file must have been left alone for its stamp to
// stand for its content (the digest memo's rule, for the same reason).
const Settle = 2 * time.Second

// Snapshot is the digest of the stamps of a set of paths, whole trees
// under directories included.
type Snapshot struct {
	Digest string
	// Unsettled names a path changed within Settle of the snapshot, ""
	// when there is none.
	Unsettled string
	// Entries counts the files, directories and links stamped.
	Entries int
}

// ErrNoStamps is returned where the platform gives no change time or
// inode: without them a rewrite in place cannot be told from no change.
var ErrNoStamps = errors.New("this system's file status has no change time or inode")

// Take stamps paths, in their order, each with everything under it when
// it is a directory. A path that is a symlink is stamped as a link and as
// what it points at. Directories are read by up to jobs goroutines; the
// digest does not depend on how many. With a zero now, nothing is
// checked for having settled (outputs, which the build itself wrote).
func Take(paths []string, jobs int, now time.Time) (Snapshot, error) {
	w := &walker{now: now, sem: make(chan struct{}, max(1, jobs)-1)}
	h := sha256.New()
	for _, p := range paths {
		d, err := w.root(p)
		if err != nil {
			return Snapshot{}, err
		}
		writeString(h, p)
		h.Write(d[:])
	}
	s := Snapshot{Digest: hex.EncodeToString(h.Sum(nil)), Entries: int(w.entries.Load())}
	w.mu.Lock()
	s.Unsettled = w.unsettled
	w.mu.Unlock()
	return s, nil
}

type walker struct {
	now time.Time
	// sem holds a token per extra goroutine reading a directory.
	sem       chan struct{}
	entries   atomic.Int64
	mu        sync.Mutex
	unsettled string
}

func (w *walker) root(p string) ([32]byte, error) {
	st, err := tree.Lstat(p)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	if err := w.stamp(h, p, st); err != nil {
		return [32]byte{}, err
	}
	if st.Mode&fs.ModeSymlink != 0 {
		// Resolved, as the build opens it: the link's stamp alone would
		// not change when its target is rewritten.
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return [32]byte{}, err
		}
		if st, err = tree.Lstat(real); err != nil {
			return [32]byte{}, err
		}
		writeString(h, real)
		if err := w.stamp(h, real, st); err != nil {
			return [32]byte{}, err
		}
		p = real
	}
	if st.Mode.IsDir() {
		d, err := w.dir(p)
		if err != nil {
			return [32]byte{}, err
		}
		h.Write(d[:])
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// dir digests the stamps of everything under dir, by name; its
// subdirectories are read concurrently while tokens last. A tree of many
// small files costs what listing and stat'ing it costs: the stamps go to
// the hash through one buffer per directory, and no path is built but
// for a directory or one found unsettled.
func (w *walker) dir(dir string) ([32]byte, error) {
	ents, err := tree.ReadDirStats(dir)
	if err != nil {
		return [32]byte{}, err
	}
	type sub struct {
		sum  [32]byte
		err  error
		done chan struct{}
	}
	var subs []*sub
	for _, e := range ents {
		if !e.Mode.IsDir() {
			continue
		}
		s := &sub{done: make(chan struct{})}
		subs = append(subs, s)
		path := filepath.Join(dir, e.Name)
		select {
		case w.sem <- struct{}{}:
			go func() {
				defer func() { <-w.sem; close(s.done) }()
				s.sum, s.err = w.dir(path)
			}()
		default:
			s.sum, s.err = w.dir(path)
			close(s.done)
		}
	}
	h := sha256.New()
	buf := make([]byte, 0, 4<<10)
	for _, e := range ents {
		if len(buf) > 3<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = appendString(buf, e.Name)
		buf, err = appendStamp(buf, e)
		if err != nil {
			return [32]byte{}, err
		}
		if !w.settled(e.Stamp) {
			w.unsettle(filepath.Join(dir, e.Name))
		}
		if e.Mode.IsDir() {
			s := subs[0]
			subs = subs[1:]
			<-s.done
			if s.err != nil {
				return [32]byte{}, s.err
			}
			buf = append(buf, s.sum[:]...)
		}
	}
	h.Write(buf)
	w.entries.Add(int64(len(ents)))
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

func (w *walker) stamp(h hash.Hash, path string, st tree.Stat) error {
	b, err := appendStamp(nil, st)
	if err != nil {
		return err
	}
	h.Write(b)
	w.entries.Add(1)
	if !w.settled(st.Stamp) {
		w.unsettle(path)
	}
	return nil
}

// appendStamp appends the bytes st is hashed as.
func appendStamp(b []byte, st tree.Stat) ([]byte, error) {
	s := st.Stamp
	if s.CTime == 0 || s.Ino == 0 {
		return b, ErrNoStamps
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Mode))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.ModTime))
	b = binary.LittleEndian.AppendUint64(b, uint64(s.CTime))
	b = binary.LittleEndian.AppendUint64(b, s.Ino)
	return binary.LittleEndian.AppendUint64(b, s.Dev), nil
}

// settled says whether s has been left alone for Settle, as Take's now
// sees it (always, for a Take without one).
func (w *walker) settled(s tree.Stamp) bool { return w.now.IsZero() || s.Settled(w.now, Settle) }

// unsettle keeps path as the unsettled one, unless there is one.
func (w *walker) unsettle(path string) {
	w.mu.Lock()
	if w.unsettled == "" {
		w.unsettled = path
	}
	w.mu.Unlock()
}

func writeString(h hash.Hash, s string) {
	h.Write(appendString(nil, s))
}

// appendString appends s, length first.
func appendString(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
}

// Note is what a finished build leaves for the next one with the same
// key: the digests of its inputs' and outputs' stamps, and what it
// reported, to be reported again.
type Note struct {
	Inputs  string `json:"inputs"`
	Outputs string `json:"outputs"`
	// Result is the build's result as the caller encodes it.
	Result json.RawMessage `json:"result"`
	// Warnings are the build's warnings, said again by a build that
	// finds its outputs up to date.
	Warnings []string `json:"warnings,omitempty"`
	// Seal digests the rest with the note's key. A note answers a build
	// in place of reading anything, so a damaged one would print a result
	// the outputs do not hold: Get takes only a note whose seal matches.
	Seal string `json:"seal"`
}

// seal is the digest Note.Seal holds for n under key.
func (n *Note) seal(key string) string {
	parts := [][]byte{[]byte("pallet note 1"), []byte(key), []byte(n.Inputs), []byte(n.Outputs), n.Result}
	for _, w := range n.Warnings {
		parts = append(parts, []byte(w))
	}
	return Key(parts...)
}

// Store keeps notes in a directory, one file per key.
type Store struct{ Dir string }

// Key digests parts, each length-prefixed, into the name of a note.
func Key(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		writeString(h, string(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Get returns the note under key, or nil when there is none (or it
// cannot be read, or is damaged: a lost note costs one build).
func (s Store) Get(key string) *Note {
	b, err := bounded.ReadFile(filepath.Join(s.Dir, key+".json"), maxNote)
	if err != nil {
		return nil
	}
	var n Note
	if json.Unmarshal(b, &n) != nil || n.Inputs == "" || n.Outputs == "" || n.Seal != n.seal(key) {
		return nil
	}
	return &n
}

// maxNote bounds a note read back; notes hold results, not file lists.
const maxNote = 16 << 20

// Put writes the note under key, whole or not at all.
func (s Store) Put(key string, n *Note) error {
	sealed := *n
	sealed.Seal = n.seal(key)
	b, err := json.Marshal(&sealed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(s.Dir, key+".json")
	err = tempfile.WriteFile(path, b)
	// A directory under a note's name (no rename replaces one) would
	// keep every later build from noting its result.
	if info, lerr := os.Lstat(path); err != nil && lerr == nil && info.IsDir() {
		if rerr := os.RemoveAll(path); rerr != nil {
			return errors.Join(err, rerr)
		}
		err = tempfile.WriteFile(path, b)
	}
	return err
}

// Touch marks the note under key as used at t, for Prune. Only a
// regular file is touched: Chtimes follows a link, whose target, wherever
// it is, is no note of pallet's.
func (s Store) Touch(key string, t time.Time) {
	path := filepath.Join(s.Dir, key+".json")
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
		_ = os.Chtimes(path, t, t)
	}
}

// Prune removes the notes no build has written for maxAge.
func (s Store) Prune(maxAge time.Duration, now time.Time) error {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || filepath.Ext(e.Name()) != ".json" || len(e.Name()) != 64+len(".json") {
			continue
		}
		if now.Sub(info.ModTime()) > maxAge {
			if err := os.Remove(filepath.Join(s.Dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Describe is the reason a snapshot cannot be noted, for logs.
func (s Snapshot) Describe() string {
	if s.Unsettled == "" {
		return ""
	}
	return fmt.Sprintf("%s changed less than %s before the build", s.Unsettled, Settle)
}
