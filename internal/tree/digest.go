package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Digest is the digest of a tree's paths, kinds, modes, links and file
// contents, file contents by their sha256 as digest gives it (so a caller
// with a memo of file digests does not read unchanged files again). It is
// what the record calls a local directory's digest and what a cached
// artifact is checked against; it is not a layer digest, which also covers
// owners, times and the tar encoding.
func Digest(t *Tree, digest FileDigest) (string, error) {
	h := sha256.New()
	// What fmt.Fprintf(h, "%s\x00%s\x00%o\x00%s\x00", ...) wrote, put
	// together in one buffer: fmt was a tenth of a no-op build's CPU.
	var buf []byte
	for e := range t.All() {
		buf = append(buf[:0], e.Path...)
		buf = append(buf, 0)
		buf = append(buf, e.Kind.String()...)
		buf = append(buf, 0)
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, 0)
		buf = append(buf, e.Link...)
		buf = append(buf, 0)
		if e.Kind == File {
			sum, err := digest(e.Source, e.Stamp)
			if err != nil {
				return "", err
			}
			buf = append(buf, sum...)
		}
		buf = append(buf, 0)
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// FileDigest gives the hex sha256 of the file at source, whose stamp is
// st when known (zero: stat it).
type FileDigest func(source string, st Stamp) (string, error)

// Hashing is a FileDigest that reads every file.
func Hashing(hash func(path string) (string, error)) FileDigest {
	return func(source string, _ Stamp) (string, error) { return hash(source) }
}
