package output

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// DockerArchive writes a tarball that `docker load` accepts. That format
// holds one platform per name, so a multi-platform image must be narrowed
// with --platform first.
//
// The archive is written here rather than by tarball.MultiRefWrite because
// that function walks Go maps: the order of RepoTags and of the blobs in the
// tar changes from run to run, and a byte-identical archive for identical
// inputs is a promise pallet makes for every output. It also fetches foreign
// layers, which pallet never does.
//
// An image with foreign (non-distributable) layers, a Windows base's, is
// refused: `docker save` writes such an archive with the foreign layers
// named under LayerSources but not carried, and `docker load` then opens
// the missing layer file unless the host already has that layer, so the
// archive loads on some hosts and fails on others. Fetching the layers
// from their URLs is not pallet's to do (they are not to be
// redistributed); a layout or a push keeps them by reference and works
// everywhere.
type DockerArchive struct {
	File string
	// Writer, when set, receives the archive instead of File (which then
	// only names the output, "-" for standard output). A stream cannot be
	// swapped in whole: a build failing midway leaves a truncated archive
	// there, which `docker load` refuses.
	Writer io.Writer
}

func (d *DockerArchive) String() string { return "docker:" + d.File }

// Write writes the archive to a temporary file and renames it into place.
// File is replaced only when it is missing or a docker archive; when it
// is a symlink, the archive is written where it points and the link is
// kept.
func (d *DockerArchive) Write(ctx context.Context, images []Image) error {
	entries, err := dockerEntries(images)
	if err != nil {
		return fmt.Errorf("docker archive %s: %w", d.File, err)
	}
	if d.Writer != nil {
		if err := writeDocker(ctx, d.Writer, entries); err != nil {
			return fmt.Errorf("docker archive %s: %w", d.File, err)
		}
		return nil
	}
	file, err := resolve(d.File)
	if err != nil {
		return fmt.Errorf("output %s: %w", d, err)
	}
	if err := replaceableArchive(file); err != nil {
		return fmt.Errorf("output %s: %w", d, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tempfile.SweepBeside(file)
	tmp, release, err := tempfile.CreateLocked(filepath.Dir(file), tempfile.Beside(file))
	if err != nil {
		return err
	}
	defer release()
	defer os.Remove(tmp.Name())
	if err := writeDocker(ctx, tmp, entries); err != nil {
		tmp.Close()
		return fmt.Errorf("docker archive %s: %w", d.File, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

type dockerEntry struct {
	img  v1.Image
	tags []string
	// refNames are the tags as the archive's index.json names them
	// (org.opencontainers.image.ref.name), in the order of tags.
	refNames []string
}

// runnable is the one image of im a docker archive can hold: im's image,
// or the only runnable entry of its index (attestation manifests, which
// docker load cannot take, are left out, as BuildKit's docker exporter
// does).
func runnable(im Image) (v1.Image, error) {
	if im.Image != nil {
		return im.Image, nil
	}
	m, err := im.Index.IndexManifest()
	if err != nil {
		return nil, err
	}
	var only *v1.Descriptor
	for i, d := range m.Manifests {
		if d.Annotations[sbom.RefTypeAnnotation] == sbom.AttestationManifest {
			continue
		}
		if only != nil {
			return nil, fmt.Errorf("image %s has several platforms and a docker archive holds one; build one platform for it", im.Repository)
		}
		only = &m.Manifests[i]
	}
	if only == nil {
		return nil, fmt.Errorf("image %s has no image to write", im.Repository)
	}
	return im.Index.Image(only.Digest)
}

// dockerEntries groups tags by image, in the order the images and their tags
// were given, so that two names for one image share one manifest entry.
func dockerEntries(images []Image) ([]*dockerEntry, error) {
	var out []*dockerEntry
	byDigest := map[v1.Hash]*dockerEntry{}
	seen := map[string]bool{}
	// As in a layout: tags name the entries unless two images share one.
	full := sharedTags(images)
	for _, im := range images {
		img, err := runnable(im)
		if err != nil {
			return nil, err
		}
		dg, err := img.Digest()
		if err != nil {
			return nil, err
		}
		e := byDigest[dg]
		if e == nil {
			e = &dockerEntry{img: img}
			byDigest[dg] = e
			out = append(out, e)
		}
		for _, tag := range im.Tags {
			t, err := name.NewTag(RefName(im.Repository, tag))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", RefName(im.Repository, tag), err)
			}
			if seen[t.String()] {
				continue
			}
			seen[t.String()] = true
			e.tags = append(e.tags, t.String())
			if full {
				e.refNames = append(e.refNames, t.String())
			} else {
				e.refNames = append(e.refNames, tag)
			}
		}
	}
	return out, nil
}

// writeDocker writes the archive as `docker save` has since Docker 25: a
// manifest.json for `docker load` (and podman, skopeo, ggcr, which read
// only that) that is also an OCI image layout, index.json and blobs under
// blobs/sha256/. containerd's import, and docker load from 25 on, read the
// layout when there is one: the image keeps the manifest pallet built and
// its digest, the one a push gives. From manifest.json alone, they make up
// a docker manifest of their own, with another digest.
func writeDocker(ctx context.Context, w io.Writer, entries []*dockerEntry) error {
	tw := tar.NewWriter(w)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	written := map[string]bool{}
	// Not nil: no images is "[]", which reads back as a docker archive.
	manifest := tarball.Manifest{}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
	writeBlob := func(dg v1.Hash, b []byte) (string, error) {
		file := blobFile(dg)
		if written[file] {
			return file, nil
		}
		written[file] = true
		return file, writeTarFile(tw, file, int64(len(b)), bytes.NewReader(b))
	}
	for _, e := range entries {
		cfgName, err := e.img.ConfigName()
		if err != nil {
			return err
		}
		cfg, err := e.img.RawConfigFile()
		if err != nil {
			return err
		}
		cfgFile, err := writeBlob(cfgName, cfg)
		if err != nil {
			return err
		}
		layers, err := e.img.Layers()
		if err != nil {
			return err
		}
		desc := tarball.Descriptor{Config: cfgFile, RepoTags: e.tags}
		for _, l := range layers {
			if err := ctx.Err(); err != nil {
				return err
			}
			dg, err := l.Digest()
			if err != nil {
				return err
			}
			mt, err := l.MediaType()
			if err != nil {
				return err
			}
			if !mt.IsDistributable() {
				var urls []string
				if bd, err := partial.BlobDescriptor(e.img, dg); err == nil {
					urls = bd.URLs
				}
				return fmt.Errorf("%s has a foreign (non-distributable) layer %s (from %v) that a docker archive cannot carry: docker load would fail on a host that does not already have it; write oci:DIR or push to a registry instead, which keep it by reference", strings.Join(e.tags, ", "), dg, urls)
			}
			file := blobFile(dg)
			desc.Layers = append(desc.Layers, file)
			if written[file] {
				continue
			}
			written[file] = true
			if err := writeLayerFile(tw, file, l); err != nil {
				return fmt.Errorf("layer %s: %w", dg, err)
			}
		}
		manifest = append(manifest, desc)

		raw, err := e.img.RawManifest()
		if err != nil {
			return err
		}
		mt, err := e.img.MediaType()
		if err != nil {
			return err
		}
		dg, err := e.img.Digest()
		if err != nil {
			return err
		}
		if _, err := writeBlob(dg, raw); err != nil {
			return err
		}
		entry := v1.Descriptor{MediaType: mt, Size: int64(len(raw)), Digest: dg}
		if err := describeImage(&entry, e.img); err != nil {
			return err
		}
		if len(e.tags) == 0 {
			index.Manifests = append(index.Manifests, entry)
		}
		for i, tag := range e.tags {
			cname, err := containerdName(tag)
			if err != nil {
				return err
			}
			index.Manifests = append(index.Manifests, withAnnotations(entry, map[string]string{
				refNameKey:                 e.refNames[i],
				"io.containerd.image.name": cname,
			}))
		}
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"manifest.json", manifest}, {"index.json", index}, {"oci-layout", layoutMarker}} {
		b, err := json.Marshal(f.v)
		if err != nil {
			return err
		}
		if err := writeTarFile(tw, f.name, int64(len(b)), bytes.NewReader(b)); err != nil {
			return err
		}
	}
	return tw.Close()
}

// blobFile is where an OCI layout keeps the blob of digest dg.
func blobFile(dg v1.Hash) string { return "blobs/" + dg.Algorithm + "/" + dg.Hex }

// layoutMarker is an OCI layout's oci-layout file.
var layoutMarker = struct {
	Version string `json:"imageLayoutVersion"`
}{"1.0.0"}

func writeLayerFile(tw *tar.Writer, file string, l v1.Layer) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	return writeTarFile(tw, file, size, rc)
}

// writeTarFile writes a regular file with a fixed header: no times, owners
// or user names, so the archive depends on its contents alone.
func writeTarFile(tw *tar.Writer, file string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Name: file, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s: wrote %d bytes, expected %d", file, n, size)
	}
	return nil
}
