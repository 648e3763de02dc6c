package cache

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// A registry cache is one OCI manifest whose layers are cache entries: a
// built artifact as a gzipped tar of its cache directory, or a layer blob
// as it is. Annotations carry each entry's key, so a machine with an empty
// local cache can find the work another machine already did.
const (
	cacheConfigType   types.MediaType = "application/vnd.pallet.cache.config.v1+json"
	artifactEntryType types.MediaType = "application/vnd.pallet.cache.artifact.v1.tar+gzip"
	annArtifact                       = "dev.pallet.cache.artifact"
	annLayer                          = "dev.pallet.cache.layer"
	annDiffID                         = "dev.pallet.cache.diffid"
	annCompression                    = "dev.pallet.cache.compression"
	annExported                       = "dev.pallet.cache.exported"
)

// keepFor is how long an entry no export used stays in a registry cache.
// Exports merge with what is there, so that CI jobs building different
// platforms or images into one cache do not erase each other's work; an
// entry none of them used for this long is dropped.
const keepFor = 14 * 24 * time.Hour

// remoteCache is the index of a registry cache read at the start of a build.
type remoteCache struct {
	ref       name.Reference
	opts      []remote.Option
	artifacts map[string]v1.Descriptor
	layers    map[string]v1.Descriptor
}

// ImportFrom makes lookups that miss locally try the registry cache at
// ref. A cache that does not exist yet is not an error: the first build of
// a fleet has nothing to import.
func (c *Cache) ImportFrom(ctx context.Context, ref string, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("--cache-from %s: %w", ref, err)
	}
	opts = regauth.Options(ctx, opts...)
	rc := &remoteCache{ref: r, opts: opts, artifacts: map[string]v1.Descriptor{}, layers: map[string]v1.Descriptor{}}
	img, err := remote.Image(r, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == 404 {
			c.remote = rc
			return nil
		}
		return fmt.Errorf("--cache-from %s: %w", ref, regauth.Explain(err))
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("--cache-from %s: %w", ref, err)
	}
	for _, d := range m.Layers {
		if k := d.Annotations[annArtifact]; k != "" {
			rc.artifacts[k] = d
		}
		if k := d.Annotations[annLayer]; k != "" {
			rc.layers[k] = d
		}
	}
	c.remote = rc
	return nil
}

// pullArtifact imports the registry's entry for key, if it has one.
func (c *Cache) pullArtifact(key string) (string, bool) {
	rc := c.remote
	if rc == nil {
		return "", false
	}
	d, ok := rc.artifacts[key]
	if !ok {
		return "", false
	}
	tmp, err := c.TempDir()
	if err != nil {
		return "", false
	}
	defer os.RemoveAll(tmp)
	blob := filepath.Join(tmp, "entry.tar.gz")
	if err := rc.download(d.Digest, blob); err != nil {
		return "", false
	}
	dir := filepath.Join(tmp, "entry")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", false
	}
	// The entry is untrusted input like any archive: extracted with the
	// same checks.
	if err := archive.Extract(context.Background(), blob, archive.TarGzip, dir, archive.Options{}); err != nil {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		return "", false
	}
	os.Remove(filepath.Join(dir, "complete"))
	out, err := c.CommitArtifact(key, dir)
	if err != nil {
		return "", false
	}
	return out, true
}

// pullLayer imports the registry's layer blob for key, if it has one.
func (c *Cache) pullLayer(key string) bool {
	rc := c.remote
	if rc == nil {
		return false
	}
	d, ok := rc.layers[key]
	if !ok {
		return false
	}
	tmp, err := c.TempDir()
	if err != nil {
		return false
	}
	defer os.RemoveAll(tmp)
	blob := filepath.Join(tmp, "blob")
	if err := rc.download(d.Digest, blob); err != nil {
		return false
	}
	// The annotations go into image configs (diff IDs) and manifests (media
	// types): checked against the blob, not trusted.
	comp, diffID := d.Annotations[annCompression], d.Annotations[annDiffID]
	if got, err := uncompressedDigest(blob, comp); err != nil || got != diffID {
		return false
	}
	_, err = c.PutLayer(key, blob, LayerEntry{Digest: d.Digest.String(), DiffID: diffID, Size: d.Size, Compression: comp})
	return err == nil
}

// uncompressedDigest is the diff ID of a layer blob compressed with comp.
func uncompressedDigest(blob, comp string) (string, error) {
	f, err := os.Open(blob)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader
	switch comp {
	case "gzip":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", err
		}
		defer zr.Close()
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(f)
		if err != nil {
			return "", err
		}
		defer zr.Close()
		r = zr
	default:
		return "", fmt.Errorf("unknown compression %q", comp)
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// download fetches a blob of the cache repository into file, verified.
func (rc *remoteCache) download(h v1.Hash, file string) error {
	l, err := remote.Layer(rc.ref.Context().Digest(h.String()), rc.opts...)
	if err != nil {
		return err
	}
	r, err := l.Compressed() // go-containerregistry verifies the digest
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ExportTo pushes the entries this build used (found or made) to ref, so
// another machine can import them with ImportFrom. Entries already at ref
// that this build did not use are kept (see keepFor): their blobs are in
// the repository already, so keeping them costs no upload.
func (c *Cache) ExportTo(ctx context.Context, ref string, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("--cache-to %s: %w", ref, err)
	}
	opts = regauth.Options(ctx, opts...)
	c.mu.Lock()
	arts := sortedSet(c.usedArtifacts)
	lays := sortedSet(c.usedLayers)
	c.mu.Unlock()
	now := time.Now().UTC()
	exported := now.Format(time.RFC3339)
	// What cannot be read is not kept: some registries answer 401 for a
	// repository that does not exist yet, and the export must still work.
	kept, err := keptEntries(r, opts, arts, lays, now)
	if err != nil && c.Log != nil {
		c.Log("--cache-to %s: the entries already there cannot be read, so only this build's are exported: %v", ref, regauth.Explain(err))
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, cacheConfigType)
	var adds []mutate.Addendum
	tmp, err := c.TempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, key := range arts {
		dir, ok := c.Artifact(key)
		if !ok {
			continue
		}
		file := filepath.Join(tmp, key+".tar.gz")
		if err := tarDir(dir, file); err != nil {
			return err
		}
		l, err := tarball.LayerFromFile(file, tarball.WithMediaType(artifactEntryType))
		if err != nil {
			return err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: artifactEntryType, Annotations: map[string]string{annArtifact: key, annExported: exported}})
	}
	for _, key := range lays {
		e, blob, ok := c.Layer(key)
		if !ok {
			continue
		}
		mt := types.OCILayer
		if e.Compression == "zstd" {
			mt = types.OCILayerZStd
		}
		// Served from the file as it is: already compressed, never in memory.
		l, err := tarball.LayerFromFile(blob, tarball.WithMediaType(mt))
		if err != nil {
			return err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: mt,
			Annotations: map[string]string{annLayer: key, annDiffID: e.DiffID, annCompression: e.Compression, annExported: exported}})
	}
	img, err = mutate.Append(img, append(adds, kept...)...)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, opts...); err != nil {
		return fmt.Errorf("--cache-to %s: %w", ref, regauth.Explain(err))
	}
	return nil
}

// tarDir writes dir as a gzipped tar with fixed times and owners.
func tarDir(dir, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.ModTime, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = time.Unix(0, 0), 0, 0, "", ""
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			_, err = io.Copy(tw, in)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keptEntries are the entries of the cache at ref that this export does
// not replace and that are younger than keepFor, in key order. A cache
// that does not exist yet has none.
func keptEntries(ref name.Reference, opts []remote.Option, arts, lays []string, now time.Time) ([]mutate.Addendum, error) {
	img, err := remote.Image(ref, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == 404 {
			return nil, nil
		}
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	replaced := map[string]bool{}
	for _, k := range arts {
		replaced[annArtifact+"="+k] = true
	}
	for _, k := range lays {
		replaced[annLayer+"="+k] = true
	}
	type entry struct {
		sortKey string
		add     mutate.Addendum
	}
	var out []entry
	for _, d := range m.Layers {
		id := annArtifact + "=" + d.Annotations[annArtifact]
		if d.Annotations[annArtifact] == "" {
			id = annLayer + "=" + d.Annotations[annLayer]
		}
		if replaced[id] {
			continue
		}
		when, err := time.Parse(time.RFC3339, d.Annotations[annExported])
		if err != nil || now.Sub(when) > keepFor {
			continue
		}
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return nil, err
		}
		out = append(out, entry{id, mutate.Addendum{
			Layer:       knownLayer{Layer: l, desc: d},
			MediaType:   d.MediaType,
			Annotations: d.Annotations,
		}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].sortKey < out[j].sortKey })
	adds := make([]mutate.Addendum, len(out))
	for i, e := range out {
		adds[i] = e.add
	}
	return adds, nil
}

// knownLayer is an entry already in the cache repository: its digest,
// size and type come from the manifest that lists it, and its content, if
// anything asks for it, from the repository. (The cache's config records
// no diff IDs, so nothing asks for one.)
type knownLayer struct {
	v1.Layer
	desc v1.Descriptor
}

func (k knownLayer) Digest() (v1.Hash, error)            { return k.desc.Digest, nil }
func (k knownLayer) Size() (int64, error)                { return k.desc.Size, nil }
func (k knownLayer) MediaType() (types.MediaType, error) { return k.desc.MediaType, nil }
