package image

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/tree"
)

// maxBaseEntries bounds the directories and links DirLinks keeps from a
// base: a distribution's base holds some thousands.
const maxBaseEntries = 4 << 20

// maxInflate bounds a base layer's uncompressed size by its compressed
// size: deflate cannot exceed about 1032 to 1, so only a zstd layer made
// to explode (or a lying size) reaches it.
const maxInflate = 1100

// LinksKey names what DirLinks reads from img: its layers' diffIDs, in
// order. Two images with the same key hold the same files.
func LinksKey(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	io.WriteString(h, "pallet dir links v1\n")
	for _, d := range cf.RootFS.DiffIDs {
		io.WriteString(h, d.String()+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// DirLinks reads img's layers in order, as an importer applies them
// (whiteouts included), and returns the symlinks of the result that lead
// to a directory (see tree.Links). Only tar headers matter, but every
// layer is read whole: its uncompressed bytes are checked against the
// config's diffID, so what the links are derived from is what the image
// names.
func DirLinks(img v1.Image) (tree.Links, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != len(cf.RootFS.DiffIDs) {
		return nil, fmt.Errorf("base has %d layers and %d diffIDs", len(layers), len(cf.RootFS.DiffIDs))
	}
	fs := &baseFS{links: map[string]string{}, dirs: map[string]bool{}}
	for i, l := range layers {
		// A foreign layer is never downloaded (a Windows base's): its
		// links, if any, are not known.
		if mt, err := l.MediaType(); err == nil && !mt.IsDistributable() {
			continue
		}
		if err := fs.apply(l, cf.RootFS.DiffIDs[i]); err != nil {
			d, _ := l.Digest()
			return nil, fmt.Errorf("base layer %d (%s): %w", i+1, d, err)
		}
	}
	all := tree.Links(fs.links)
	out := tree.Links{}
	for p, target := range fs.links {
		// A link that loops, or leads to a file or nowhere, is no
		// directory to place anything into: an entry under it is
		// written as it is, and the importer says what is wrong.
		if r, err := all.Resolve(p); err == nil && fs.dirs[r] {
			out[p] = target
		}
	}
	return out, nil
}

// baseFS is what DirLinks keeps of a base's file system: its links and
// its directories, by clean path.
type baseFS struct {
	links map[string]string
	dirs  map[string]bool
}

func (fs *baseFS) apply(l v1.Layer, diffID v1.Hash) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	limit := maxInflate*size + 1<<20
	h := sha256.New()
	lr := &io.LimitedReader{R: rc, N: limit + 1}
	tr := tar.NewReader(io.TeeReader(lr, h))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		fs.entry(hdr)
		if len(fs.links)+len(fs.dirs) > maxBaseEntries {
			return fmt.Errorf("more than %d directories and links", maxBaseEntries)
		}
	}
	// The end of the archive is not the end of the stream: the rest
	// (padding) is part of what the diffID covers.
	if _, err := io.Copy(h, lr); err != nil {
		return err
	}
	if lr.N <= 0 {
		return fmt.Errorf("more than %d bytes uncompressed, from %d compressed", limit, size)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); diffID.String() != got {
		return fmt.Errorf("uncompressed, its content is %s, not the diffID %s the config gives", got, diffID)
	}
	return nil
}

// entry applies one tar header.
func (fs *baseFS) entry(hdr *tar.Header) {
	p := path.Clean("/" + hdr.Name)[1:]
	if p == "" {
		return
	}
	// The importer writes through a parent that is a link, and creates
	// missing parents as directories.
	dir, name := path.Split(p)
	if dir = strings.TrimSuffix(dir, "/"); dir != "" {
		if r, err := tree.Links(fs.links).Resolve(dir); err == nil {
			dir = r
		}
		for d := dir; d != "." && !fs.dirs[d]; d = path.Dir(d) {
			if _, ok := fs.links[d]; ok {
				break
			}
			fs.dirs[d] = true
		}
		p = path.Join(dir, name)
	}
	switch {
	case name == ".wh..wh..opq":
		fs.remove(path.Dir(p), false)
		return
	case strings.HasPrefix(name, ".wh."):
		fs.remove(path.Join(path.Dir(p), name[len(".wh."):]), true)
		return
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		delete(fs.links, p)
		fs.dirs[p] = true
	case tar.TypeSymlink:
		if fs.dirs[p] {
			fs.remove(p, true)
		}
		fs.links[p] = hdr.Linkname
	default:
		if fs.dirs[p] {
			fs.remove(p, true)
		}
		delete(fs.links, p)
	}
}

// remove forgets what is under p, and p itself if self.
func (fs *baseFS) remove(p string, self bool) {
	if self {
		delete(fs.links, p)
		delete(fs.dirs, p)
	}
	prefix := p + "/"
	if p == "" || p == "." {
		prefix = ""
	}
	for q := range fs.links {
		if strings.HasPrefix(q, prefix) {
			delete(fs.links, q)
		}
	}
	for q := range fs.dirs {
		if strings.HasPrefix(q, prefix) {
			delete(fs.dirs, q)
		}
	}
}
