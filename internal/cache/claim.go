package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// A cache directory is pallet's alone: a build writes entries into it and
// removes what killed builds left there. Before doing either, Open makes
// sure the directory is one: it holds the cache directory tag pallet
// writes (the Cache Directory Tagging Specification's CACHEDIR.TAG, which
// also tells backup tools to skip it), or it is new, empty, or the cache
// of an earlier pallet, which wrote no tag. Anything else is the user's
// (--cache-dir . in a project, or $HOME) and is refused untouched.

const (
	tagName      = "CACHEDIR.TAG"
	tagSignature = "Signature: 8a477f597d28d172789f06886806bc55"
	tagContent   = tagSignature + "\n# This file is a cache directory tag created by pallet.\n# For information about cache directory tags, see https://bford.info/cachedir/\n"
	maxTag       = 4 << 10
)

// topNames are what pallet's cache holds at its top level, and what an
// earlier pallet's cache (no tag) may hold.
var topNames = map[string]bool{
	"artifacts": true, "blobs": true, "facts": true, "layers": true, "locks": true,
	"memo": true, "sources": true, "tmp": true, "uptodate": true,
	"digests.json": true, // the memo of earlier versions
	tagName:        true,
}

// claim checks that dir may be used as pallet's cache and tags it.
func claim(dir string) error {
	// A file (a mistyped --cache-dir) is refused as such, not with the
	// "not a directory" of a path under it.
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return notACache(dir, fmt.Sprintf("it is not a directory (%s)", bounded.TypeName(fi.Mode())))
	}
	tag := filepath.Join(dir, tagName)
	switch data, err := readTag(tag); {
	case err == nil && isOurTag(data):
		return nil
	case err == nil:
		return notACache(dir, tag+" was written by another program")
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		// A file being written when a build was killed (the tag, or
		// an earlier pallet's digests.json).
		if base, ok := strings.CutPrefix(name, "."); ok {
			if file, _, ok := strings.Cut(base, ".new-"); ok && (file == tagName || file == "digests.json") {
				continue
			}
		}
		// Files are the old memo and the tag, which a build opening the
		// cache at the same time may have just written.
		if !topNames[name] || !e.IsDir() && name != "digests.json" && name != tagName {
			return notACache(dir, fmt.Sprintf("it holds %s, which pallet did not write", filepath.Join(dir, name)))
		}
		if name != tagName {
			have[name] = true
		}
	}
	// An earlier pallet's cache holds the directories every Open made;
	// a new one may be half made by a build opening it at the same time,
	// which wrote its tag first.
	if len(have) > 0 && !(have["artifacts"] && have["blobs"] && have["layers"]) {
		if data, err := readTag(tag); err == nil && isOurTag(data) {
			return nil
		}
		return notACache(dir, "it is not empty and holds no cache pallet made")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	if err := tempfile.WriteFile(tag, []byte(tagContent)); err != nil {
		return fmt.Errorf("cache %s: %w", dir, err)
	}
	return nil
}

// Tagged reports whether dir holds pallet's cache tag: a cache a build
// has opened, whose notes may answer a build before the cache is opened.
func Tagged(dir string) bool {
	data, err := readTag(filepath.Join(dir, tagName))
	return err == nil && isOurTag(data)
}

// readTag reads a tag file, refusing anything but a regular file (a FIFO
// would block the open).
func readTag(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return bounded.ReadFile(path, maxTag)
}

func isOurTag(data []byte) bool {
	return bytes.HasPrefix(data, []byte(tagSignature)) && bytes.Contains(data, []byte("created by pallet"))
}

func notACache(dir, why string) error {
	return fmt.Errorf("cache %s: %s; a cache directory is pallet's alone (it writes and removes entries there), so choose a new or empty one with --cache-dir or PALLET_CACHE_DIR", dir, why)
}
