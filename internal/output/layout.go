package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gofrs/flock"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Layout writes an OCI image layout directory. Each image appears in
// index.json once per tag, annotated with org.opencontainers.image.ref.name
// set to the tag, as the OCI spec and most readers expect (`skopeo inspect
// oci:DIR:TAG`, `umoci unpack --image DIR:TAG`), and io.containerd.image.name
// set to the full reference for `ctr import` (containerdName).
type Layout struct {
	Dir string
	// Digests, when set, gives a file's sha256 from the cache's memory of
	// it (size, times, inode and device unchanged). With it, a layer blob
	// of the layout being replaced that is still what its name says is
	// linked into the new layout instead of copied: a rebuild that changed
	// nothing then copies nothing. The link is between two outputs of
	// pallet's, never with the cache, and the old one is gone once the
	// new one is in place.
	Digests func(path string) (string, error)
	// Learn, when set, is told the sha256 of each layer blob the layout
	// got from this build, once in place: the blob was checked as it was
	// written (or cloned from one checked), so that the next build need
	// not read it to know it is still whole.
	Learn func(path, sha256 string) error
}

func (l *Layout) String() string { return "oci:" + l.Dir }

// Write replaces Dir with a layout holding images. The new layout is
// written next to Dir and swapped in only when complete, so a failed build
// leaves the previous output untouched. Dir is replaced only when it is
// missing, empty or an OCI layout; when it is a symlink, the layout is
// written where it points and the link is kept.
//
// An earlier layout is updated in place instead: the blobs it lacks are
// written next to it and moved in, its index.json is replaced in one
// rename (only when it changed), and then the blobs the new index does
// not name are removed. Entries other tools put there stay, with their
// blobs (readSharing). At every moment Dir holds a whole layout, the old
// or the new one, and a build that changed nothing writes nothing in it.
func (l *Layout) Write(ctx context.Context, images []Image) error {
	dir, err := resolve(l.Dir)
	if err != nil {
		return fmt.Errorf("output %s: %w", l, err)
	}
	if err := replaceable(dir); err != nil {
		return fmt.Errorf("output %s: %w", l, err)
	}
	if err := movableInto(dir); err != nil {
		return fmt.Errorf("output %s: %w", l, err)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tempfile.SweepBeside(dir)
	// The stray list is written beside the layout too, its temporary
	// named after it.
	tempfile.SweepBeside(strayList(dir))
	inPlace := false
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		// Two builds updating one layout must not remove each other's
		// blobs: the layout's marker file is the lock.
		lock, err := lockLayout(dir)
		if err != nil {
			return fmt.Errorf("output %s: %w", l, err)
		}
		defer lock.Unlock()
		inPlace = true
	}
	tmp, release, err := tempfile.DirLocked(parent, tempfile.Beside(dir))
	if err != nil {
		return err
	}
	defer release()
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	w := &layoutWriter{p: p, prev: dir, digests: l.Digests, inPlace: inPlace, kept: map[v1.Hash]bool{}}
	// A layout names its entries by tag, as skopeo and umoci read them.
	// When two images of the build share a tag, every entry is named by
	// its full reference instead (repository:tag, which the OCI ref.name
	// grammar allows), so one layout still holds them all.
	full := sharedTags(images)
	refName := func(repository, tag string) string {
		if full {
			return RefName(repository, tag)
		}
		return tag
	}
	var sh *sharing
	if inPlace {
		taken := map[string]bool{}
		for _, im := range images {
			for _, tag := range im.Tags {
				taken[refName(im.Repository, tag)] = true
			}
		}
		if sh, err = readSharing(dir, taken); err != nil {
			return fmt.Errorf("output %s: %w", l, err)
		}
	}
	// index.json is made in memory and written once: appending entry by
	// entry (layout.Path.AppendDescriptor) reads and rewrites the whole
	// file for each, which costs time quadratic in the number of tags.
	var manifests []v1.Descriptor
	for _, im := range images {
		// An image's blobs are written, and its descriptor made, once
		// for all its tags.
		var desc *v1.Descriptor
		for _, tag := range im.Tags {
			if err := ctx.Err(); err != nil {
				return err
			}
			ref := RefName(im.Repository, tag)
			cname, err := containerdName(ref)
			if err != nil {
				return fmt.Errorf("write %s to %s: %w", ref, l.Dir, err)
			}
			if desc == nil {
				if im.Index != nil {
					desc, err = w.index(im.Index)
				} else if desc, err = w.image(im.Image); err == nil {
					err = describeImage(desc, im.Image)
				}
				if err != nil {
					return fmt.Errorf("write %s to %s: %w", ref, l.Dir, err)
				}
			}
			manifests = append(manifests, withAnnotations(*desc, map[string]string{
				refNameKey:                 refName(im.Repository, tag),
				"io.containerd.image.name": cname,
				writtenKey:                 refName(im.Repository, tag),
			}))
		}
		// Referrers are untagged entries of index.json: a layout has no
		// referrers API, and readers (oras, pallet sbom) find them by
		// their subject.
		for _, r := range im.Referrers {
			desc, err := w.image(r)
			if err == nil {
				var mf *v1.Manifest
				if mf, err = r.Manifest(); err == nil {
					desc.ArtifactType = mf.ArtifactType
					a := maps.Clone(desc.Annotations)
					if a == nil {
						a = map[string]string{}
					}
					a[writtenKey] = attachmentMark
					manifests = append(manifests, withAnnotations(*desc, a))
				}
			}
			if err != nil {
				return fmt.Errorf("write an attachment of %s to %s: %w", im.Repository, l.Dir, err)
			}
		}
	}
	var (
		top  map[string]json.RawMessage
		kept []json.RawMessage
	)
	if sh != nil {
		// Other tools' entries follow pallet's, in their order.
		sh.settle(string(p), manifests)
		manifests = append(manifests, sh.keep...)
		for h := range sh.keepBlobs {
			w.keep(h)
		}
		if len(sh.keep) > 0 {
			w.removable = sh.dropBlobs
		}
		top, kept = sh.top, sh.keepRaw
	}
	raw, err := indexJSON(manifests)
	if err == nil {
		raw, err = keepForeignFields(top, raw, kept)
	}
	if err != nil {
		return fmt.Errorf("output %s: %w", l, err)
	}
	if err := writeIndexJSON(filepath.Join(string(p), "index.json"), raw); err != nil {
		return err
	}
	// go-containerregistry creates oci-layout executable (os.ModePerm);
	// it is data, as the blobs are.
	if err := os.Chmod(filepath.Join(string(p), "oci-layout"), 0o644); err != nil {
		return err
	}
	if inPlace {
		if layoutStep != nil {
			layoutStep("update")
		}
		err = w.update(dir)
	} else {
		if layoutStep != nil {
			layoutStep("swap")
		}
		var again bool
		if again, err = l.swapIn(tmp, dir); again {
			// Another build put a layout at dir since this one found
			// none: update it in place, as if it had been there.
			return l.Write(ctx, images)
		}
		if err == nil {
			// The list of a killed update of a layout no longer there
			// names nothing of this one's.
			os.Remove(strayList(dir))
		}
	}
	if err != nil || l.Learn == nil {
		return err
	}
	for _, d := range w.written {
		if d.Algorithm != "sha256" {
			continue // the cache knows files by their sha256 only
		}
		// Not learning a blob only costs reading it once more.
		_ = l.Learn(filepath.Join(dir, "blobs", d.Algorithm, d.Hex), d.Hex)
	}
	return nil
}

// indexJSON is the index.json listing manifests, in the bytes
// go-containerregistry's layout.Path.AppendDescriptor writes (an empty
// index as layout.Write writes it), so that a layout pallet wrote before
// and rewrites unchanged is left as it is.
func indexJSON(manifests []v1.Descriptor) ([]byte, error) {
	if len(manifests) == 0 {
		return empty.Index.RawManifest()
	}
	m, err := empty.Index.IndexManifest()
	if err != nil {
		return nil, err
	}
	m.Manifests = manifests
	return json.MarshalIndent(m, "", "   ")
}

// layoutStep, when set (by tests), is called as a layout is about to be
// put in place: "swap" for a new layout, "update" for one updated in place.
var layoutStep func(step string)

// indexJSONOps, when set (by tests), is told of each read and write of an
// index.json the layout writer makes.
var indexJSONOps func(op string)

func writeIndexJSON(path string, b []byte) error {
	if indexJSONOps != nil {
		indexJSONOps("write")
	}
	// WriteFile keeps the mode of a file already there: the one
	// layout.Write made is executable.
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

func readIndexBytes(path string) ([]byte, error) {
	if indexJSONOps != nil {
		indexJSONOps("read")
	}
	// The previous layout's index was checked when the build began, but
	// may have been replaced since: read as a regular file, and bounded
	// as layout indexes are.
	return bounded.ReadRegular(path, maxIndexJSON)
}

// sharedTags reports whether two images carry the same tag.
func sharedTags(images []Image) bool {
	seen := map[string]bool{}
	for _, im := range images {
		for _, tag := range im.Tags {
			if seen[tag] {
				return true
			}
			seen[tag] = true
		}
	}
	return false
}

// describeImage gives a single-platform entry its platform, as an index
// entry has it: a layout that also holds the image's attachments holds
// several manifests, and readers (syft's oci-dir, containerd's import)
// pick the image among them by platform. The artifactType go-containerregistry
// copies from the config is dropped: an image is not an artifact, and
// the image spec reserves that field for artifacts.
func describeImage(d *v1.Descriptor, img v1.Image) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	d.Platform = image.PlatformOf(cf)
	d.ArtifactType = ""
	return nil
}

func withAnnotations(d v1.Descriptor, a map[string]string) v1.Descriptor {
	d.Annotations = a
	return d
}

// writeImage writes img's blobs. Unlike layout.Path.WriteImage it leaves
// out non-distributable (foreign) layers: their blobs live at the URLs the
// manifest lists, and fetching them (from Microsoft, for Windows bases) is
// neither needed nor allowed.
func (w *layoutWriter) image(img v1.Image) (*v1.Descriptor, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var g errgroup.Group
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			return nil, err
		}
		if !mt.IsDistributable() {
			continue
		}
		g.Go(func() error { return w.layer(l) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, blob := range []func() (v1.Hash, []byte, error){
		func() (v1.Hash, []byte, error) {
			h, err := img.ConfigName()
			if err != nil {
				return h, nil, err
			}
			b, err := img.RawConfigFile()
			return h, b, err
		},
		func() (v1.Hash, []byte, error) {
			h, err := img.Digest()
			if err != nil {
				return h, nil, err
			}
			b, err := img.RawManifest()
			return h, b, err
		},
	} {
		h, b, err := blob()
		if err != nil {
			return nil, err
		}
		if err := w.putBytes(h, b); err != nil {
			return nil, err
		}
	}
	return partial.Descriptor(img)
}

// writeIndex writes every image of idx, then idx's own manifest.
func (w *layoutWriter) index(idx v1.ImageIndex) (*v1.Descriptor, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, err
			}
			if _, err := w.image(img); err != nil {
				return nil, err
			}
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			if _, err := w.index(child); err != nil {
				return nil, err
			}
		}
	}
	h, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return nil, err
	}
	if err := w.putBytes(h, raw); err != nil {
		return nil, err
	}
	return partial.Descriptor(idx)
}

// check refuses, before the build, a layout directory pallet could not
// write (movableInto), and names it could not write in full for
// containerd (checkContainerdNames).
func (l *Layout) check(images []Planned) error {
	if err := checkContainerdNames(images); err != nil {
		return err
	}
	dir, err := resolve(l.Dir)
	if err != nil {
		return err
	}
	return movableInto(dir)
}

// movableInto refuses a directory that is a mount point (a container's
// volume, a CI cache mount): a layout is written beside its directory and
// renamed into place, new or blob by blob, and a rename cannot cross
// into another file system, nor move a mount point. Without this, the
// build failed at its end with "device or resource busy" or "invalid
// cross-device link".
func movableInto(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return nil // missing, or not a directory: replaceable tells
	}
	other, err := otherFileSystem(dir)
	if err != nil || !other {
		return err
	}
	return fmt.Errorf("%s is a mount point (another file system than %s): pallet writes a layout beside its directory and renames it into place, which cannot cross file systems; write into a directory inside it instead (oci:%s)", dir, filepath.Dir(dir), filepath.Join(dir, "NAME"))
}

// lockLayout takes the lock of the layout at dir, its oci-layout file, as
// every build writing that layout does. A build that swaps a new layout in
// replaces the file: a lock on the one it replaced guards nothing, so the
// lock is taken again until it is on the file at dir. The file is
// checked as a layout's when the build begins; one replaced since by a
// link or a named pipe is neither followed nor waited on (NewLock).
func lockLayout(dir string) (*flock.Flock, error) {
	path := filepath.Join(dir, "oci-layout")
	for {
		lock, err := tempfile.NewLock(path, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		if err := lock.Lock(); err != nil {
			return nil, err
		}
		held, herr := lock.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return lock, nil
		}
		lock.Unlock()
		if herr != nil {
			return nil, herr
		}
		if nerr != nil {
			return nil, nerr
		}
	}
}

// swapIn puts the new layout tmp at dir, which held no layout when the
// build began. If a layout is there now (another build's, written since),
// it swaps nothing and reports again: replacing it whole would drop what
// other tools keep in it, and the blobs a build updating it in place
// counts on. While it swaps, it holds the lock of what is at dir, so that
// no update in place is under way.
func (l *Layout) swapIn(tmp, dir string) (again bool, err error) {
	if _, err := os.Lstat(filepath.Join(dir, "oci-layout")); err == nil {
		lock, err := lockLayout(dir)
		if err != nil {
			return false, fmt.Errorf("output %s: %w", l, err)
		}
		defer lock.Unlock()
	}
	if _, err := os.Lstat(filepath.Join(dir, "index.json")); err == nil {
		return true, nil
	}
	if err := replaceable(dir); err != nil {
		return false, fmt.Errorf("output %s: %w", l, err)
	}
	err = swapDir(tmp, dir)
	if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
		// dir appeared, not empty, between the look and the rename.
		return true, nil
	}
	return false, err
}

// swapDir puts the directory tmp at dir, replacing what was there. Where
// the kernel can exchange two paths in one step, dir always holds either
// the old layout or the new one, even if the process dies in between.
//
// Once the new layout is in place, the old one is removed; if that fails,
// the output is still written (the next build sweeps the leftover).
func swapDir(tmp, dir string) error {
	if _, err := os.Lstat(dir); err != nil {
		return os.Rename(tmp, dir)
	}
	if tempfile.Exchange(tmp, dir) == nil {
		os.RemoveAll(tmp) // now the old layout
		return nil
	}
	// No exchange (another OS, an old kernel, some file systems): two
	// renames.
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("%w; the previous output is at %s", err, old)
		}
		return err
	}
	os.RemoveAll(old)
	return nil
}
