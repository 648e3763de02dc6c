package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
)

// Digest is the digest of a tree's paths, kinds, modes, links and file
// contents, file contents by their sha256 as digest gives it (so a caller
// with a memo of file digests does not read unchanged files again). It is
// what the record calls a local directory's digest and what a cached
// artifact is checked against; it is not a layer digest, which also covers
// owners, times and the tar encoding.
//
// The files' digests are asked for a window of entries at a time, by a
// few goroutines at once (digest must be safe for that): reading 100,000
// small files one after another left a CPU idle while the other waited
// on the disk. They are hashed in the tree's order all the same.
func Digest(t *Tree, digest FileDigest) (string, error) {
	h := sha256.New()
	var buf []byte
	window := make([]Entry, 0, digestWindow)
	sums := make([]string, digestWindow)
	errs := make([]error, digestWindow)
	flush := func() error {
		if err := digestFiles(window, sums, errs, digest); err != nil {
			return err
		}
		for i, e := range window {
			// What fmt.Fprintf(h, "%s\x00%s\x00%o\x00%s\x00", ...)
			// wrote, put together in one buffer: fmt was a tenth of a
			// no-op build's CPU.
			buf = append(buf[:0], e.Path...)
			buf = append(buf, 0)
			buf = append(buf, e.Kind.String()...)
			buf = append(buf, 0)
			buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
			buf = append(buf, 0)
			buf = append(buf, e.Link...)
			buf = append(buf, 0)
			if e.Kind == File {
				buf = append(buf, sums[i]...)
			}
			buf = append(buf, 0)
			h.Write(buf)
		}
		window = window[:0]
		return nil
	}
	for e := range t.All() {
		if window = append(window, e); len(window) == digestWindow {
			if err := flush(); err != nil {
				return "", err
			}
		}
	}
	if err := flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestWindow is how many entries Digest reads ahead.
const digestWindow = 512

// digestFiles sets sums[i] to the digest of each file of entries, a few
// at a time, and gives the error of the first that failed.
func digestFiles(entries []Entry, sums []string, errs []error, digest FileDigest) error {
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(entries) {
				return
			}
			sums[i], errs[i] = "", nil
			if e := &entries[i]; e.Kind == File {
				sums[i], errs[i] = digest(e.Source, e.Stamp)
			}
		}
	}
	var wg sync.WaitGroup
	for range ioWorkers() - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for _, err := range errs[:len(entries)] {
		if err != nil {
			return err
		}
	}
	return nil
}

// FileDigest gives the hex sha256 of the file at source, whose stamp is
// st when known (zero: stat it).
type FileDigest func(source string, st Stamp) (string, error)

// Hashing is a FileDigest that reads every file.
func Hashing(hash func(path string) (string, error)) FileDigest {
	return func(source string, _ Stamp) (string, error) { return hash(source) }
}
