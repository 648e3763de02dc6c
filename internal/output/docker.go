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
		if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
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
		}
	}
	return out, nil
}

func writeDocker(ctx context.Context, w io.Writer, entries []*dockerEntry) error {
	tw := tar.NewWriter(w)
	written := map[string]bool{}
	// Not nil: no images is "[]", which reads back as a docker archive.
	manifest := tarball.Manifest{}
	for _, e := range entries {
		cfgName, err := e.img.ConfigName()
		if err != nil {
			return err
		}
		cfg, err := e.img.RawConfigFile()
		if err != nil {
			return err
		}
		if !written[cfgName.String()] {
			written[cfgName.String()] = true
			if err := writeTarFile(tw, cfgName.String(), int64(len(cfg)), bytes.NewReader(cfg)); err != nil {
				return err
			}
		}
		layers, err := e.img.Layers()
		if err != nil {
			return err
		}
		desc := tarball.Descriptor{Config: cfgName.String(), RepoTags: e.tags}
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
			file := dg.Hex + dockerLayerExt(mt)
			desc.Layers = append(desc.Layers, file)
			if !mt.IsDistributable() {
				var urls []string
				if bd, err := partial.BlobDescriptor(e.img, dg); err == nil {
					urls = bd.URLs
				}
				return fmt.Errorf("%s has a foreign (non-distributable) layer %s (from %v) that a docker archive cannot carry: docker load would fail on a host that does not already have it; write oci:DIR or push to a registry instead, which keep it by reference", strings.Join(e.tags, ", "), dg, urls)
			}
			if written[file] {
				continue
			}
			written[file] = true
			if err := writeLayerFile(tw, file, l); err != nil {
				return fmt.Errorf("layer %s: %w", dg, err)
			}
		}
		manifest = append(manifest, desc)
	}
	m, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	if err := writeTarFile(tw, "manifest.json", int64(len(m)), bytes.NewReader(m)); err != nil {
		return err
	}
	return tw.Close()
}

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

// dockerLayerExt follows docker's own naming, which tools such as gunzip
// rely on to recognise the compression.
func dockerLayerExt(mt types.MediaType) string {
	switch mt {
	case types.OCILayerZStd:
		return ".tar.zst"
	case types.OCIUncompressedLayer, types.OCIUncompressedRestrictedLayer, types.DockerUncompressedLayer:
		return ".tar"
	default:
		return ".tar.gz"
	}
}
