package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// Digest is the digest of a tree's paths, kinds, modes, links and file
// contents, file contents by their sha256 as digest gives it (so a caller
// with a memo of file digests does not read unchanged files again). It is
// what the record calls a local directory's digest and what a cached
// artifact is checked against; it is not a layer digest, which also covers
// owners, times and the tar encoding.
func Digest(t *Tree, digest FileDigest) (string, error) {
	h := sha256.New()
	for e := range t.All() {
		fmt.Fprintf(h, "%s\x00%s\x00%o\x00%s\x00", e.Path, e.Kind, e.Mode, e.Link)
		if e.Kind == File {
			sum, err := digest(e.Source, e.Stamp)
			if err != nil {
				return "", err
			}
			io.WriteString(h, sum)
		}
		h.Write([]byte{0})
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
