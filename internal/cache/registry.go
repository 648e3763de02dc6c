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
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/transfer"
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

// maxClockSkew is how far in the future another export's date may be
// before its entry is taken for the work of a wrong clock and dropped.
const maxClockSkew = time.Hour

// maxMarker bounds an entry's completion marker read back: it holds a key.
const maxMarker = 4 << 10

// Limits bound what an import from a registry cache (ImportFrom) costs,
// as the build's limits bound any download: a cache manifest is untrusted
// input, and may declare entries of any size. A zero field takes its
// default.
type Limits struct {
	// Limits bound each entry pulled as any download (limits.download,
	// --max-download; limits.stall): an entry whose manifest declares
	// more than MaxBytes is refused before any byte of it is read, and no
	// more than the declared size is read of any; its request may wait
	// Stall for its answer, and its body must bring MinRate over each
	// Stall from its response on, or a registry that drips an entry
	// would hold the build for as long as its declared size takes at
	// that pace.
	transfer.Limits
	// MaxExtract, MaxEntries and MaxWindow bound the unpacking of an
	// artifact entry, as archive.Options does any archive's
	// (limits.extract, limits.entries, limits.window), and MaxExtract and
	// MaxWindow the decompression of a layer entry to check its diff ID;
	// zero takes archive's defaults.
	MaxExtract int64
	MaxEntries int
	MaxWindow  int64
}

// remoteCache is the index of a registry cache read at the start of a build.
type remoteCache struct {
	ctx context.Context
	ref name.Reference
	// entryOpts are the options an entry is pulled with (see ImportFrom).
	entryOpts []remote.Option
	limits    Limits
	artifacts map[string]v1.Descriptor
	layers    map[string]v1.Descriptor

	mu sync.Mutex
	// pulls are the entries this build looked up, by kind and key: one
	// refused is a miss, and one warning, for the rest of the build,
	// however many times it is looked up (a lookup under Aside looks
	// twice), and two lookups of one entry do not download it twice.
	pulls map[string]*pull
}

// pull is the state of one entry's import.
type pull struct {
	mu             sync.Mutex
	tried, refused bool
}

// once runs fetch, which imports the entry kind/key and reports whether
// it was taken, unless an earlier call's fetch was refused, or succeeded
// and the entry is still whole locally (have). Calls for one entry run
// one at a time.
func (rc *remoteCache) once(kind, key string, have, fetch func() bool) bool {
	rc.mu.Lock()
	p := rc.pulls[kind+" "+key]
	if p == nil {
		p = &pull{}
		rc.pulls[kind+" "+key] = p
	}
	rc.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.refused:
		return false
	case p.tried && have():
		return true
	}
	p.tried = true
	p.refused = !fetch()
	return !p.refused
}

// ImportFrom makes lookups that miss locally try the registry cache at
// ref. A cache that does not exist yet is not an error: the first build of
// a fleet has nothing to import.
func (c *Cache) ImportFrom(ctx context.Context, ref string, opts ...remote.Option) (err error) {
	defer func() { err = regauth.Redact(err) }()
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("shared cache %s (reading): %w", ref, err)
	}
	// An entry is watched once, by the registry transport, as any
	// registry request but to the cache's limits rather than the
	// context's bounds: each of its requests may wait limits.stall for
	// its answer, and its body must bring the minimum rate over each
	// stall from its first byte on. Its stall is final: the client
	// library would retry it, after seconds of backoff, for an entry that
	// only saves work.
	bounds := regauth.BoundsOf(ctx)
	bounds.Limits, bounds.FinalStall = c.Limits.Limits, true
	entryOpts := regauth.Options(regauth.WithBounds(ctx, bounds), opts...)
	opts = regauth.Options(ctx, opts...)
	rc := &remoteCache{ctx: ctx, ref: r, entryOpts: entryOpts, limits: c.Limits,
		artifacts: map[string]v1.Descriptor{}, layers: map[string]v1.Descriptor{}, pulls: map[string]*pull{}}
	img, err := remote.Image(r, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == 404 {
			c.remote = rc
			return nil
		}
		return fmt.Errorf("shared cache %s (reading): %w", ref, regauth.Explain(err))
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("shared cache %s (reading): %w", ref, err)
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

// pullArtifact imports the registry's entry for key, if it has one that
// passes the checks (see fetchArtifact). What fails them is a warning and
// a miss, once per build. A whole local entry made meanwhile is kept
// (CommitArtifact).
func (c *Cache) pullArtifact(key string, check func(dir string) error) (string, bool) {
	rc := c.remote
	if rc == nil {
		return "", false
	}
	d, ok := rc.artifacts[key]
	if !ok {
		return "", false
	}
	var out string
	have := func() bool {
		var ok bool
		out, ok = c.localArtifact(key)
		return ok
	}
	if !rc.once("artifact", key, have, func() bool {
		tmp, release, err := c.TempDir()
		if err != nil {
			return false
		}
		defer release()
		defer os.RemoveAll(tmp)
		dir, err := rc.fetchArtifact(tmp, key, d)
		if err == nil && check != nil {
			err = check(dir)
		}
		if err != nil {
			c.warn("shared cache %s (reading): artifact entry %s (%s) not used: %v", rc.ref, key, d.Digest, err)
			return false
		}
		if out, err = c.CommitArtifact(key, dir); err != nil {
			c.warn("shared cache %s (reading): artifact entry %s: %v", rc.ref, key, err)
			return false
		}
		return true
	}) {
		return "", false
	}
	return out, true
}

// fetchArtifact downloads and extracts the artifact entry d under tmp and
// returns its directory, ready to commit. The entry must have been
// exported for key: its "complete" marker names the key, so a manifest
// that points key at another entry's blob is caught here.
func (rc *remoteCache) fetchArtifact(tmp, key string, d v1.Descriptor) (string, error) {
	if d.MediaType != artifactEntryType {
		return "", fmt.Errorf("media type %q is not %q", d.MediaType, artifactEntryType)
	}
	blob := filepath.Join(tmp, "entry.tar.gz")
	if err := rc.download(d, blob); err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, "entry")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	// The entry is untrusted input like any archive: extracted with the
	// same checks.
	opt := archive.Options{MaxBytes: rc.limits.MaxExtract, MaxEntries: rc.limits.MaxEntries, MaxWindow: rc.limits.MaxWindow}
	if err := archive.Extract(rc.ctx, blob, archive.TarGzip, dir, opt); err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	marker := filepath.Join(dir, "complete")
	info, err := os.Lstat(marker)
	if err != nil || !info.Mode().IsRegular() {
		return "", errors.New("it has no completion marker")
	}
	named, err := bounded.ReadRegular(marker, maxMarker)
	if err != nil {
		return "", err
	}
	switch string(named) {
	case key:
	case "":
		return "", errors.New("it does not name its key (exported by an older pallet); it will be replaced")
	default:
		return "", fmt.Errorf("it was exported for another key, %.80q", named)
	}
	if err := os.Remove(marker); err != nil {
		return "", err
	}
	return dir, nil
}

// pullLayer imports the registry's layer for key, if it has one that
// passes the checks (see fetchLayer). What fails them is a warning and a
// miss, once per build. A whole local entry made meanwhile is kept
// (importLayer).
func (c *Cache) pullLayer(key string, check func(e LayerEntry, blob string) error) bool {
	rc := c.remote
	if rc == nil {
		return false
	}
	d, ok := rc.layers[key]
	if !ok {
		return false
	}
	have := func() bool { _, _, ok := c.localLayer(key); return ok }
	return rc.once("layer", key, have, func() bool {
		tmp, release, err := c.TempDir()
		if err != nil {
			return false
		}
		defer release()
		defer os.RemoveAll(tmp)
		blob := filepath.Join(tmp, "blob")
		e, err := rc.fetchLayer(d, blob)
		if err == nil && check != nil {
			err = check(e, blob)
		}
		if err == nil {
			err = c.importLayer(key, blob, e)
		}
		if err != nil {
			c.warn("shared cache %s (reading): layer entry %s (%s) not used: %v", rc.ref, key, d.Digest, err)
			return false
		}
		return true
	})
}

// fetchLayer downloads the layer d into file and returns its entry. The
// annotations end up in image configs (diff IDs) and manifests (media
// types): they are checked against the blob, not trusted; and the blob is
// decompressed, to check its diff ID, within the limits of an archive.
func (rc *remoteCache) fetchLayer(d v1.Descriptor, file string) (LayerEntry, error) {
	comp, diffID := d.Annotations[annCompression], d.Annotations[annDiffID]
	if want := layerMediaType(comp); want == "" || d.MediaType != want {
		return LayerEntry{}, fmt.Errorf("media type %q does not go with compression %q", d.MediaType, comp)
	}
	e := LayerEntry{Digest: d.Digest.String(), DiffID: diffID, Size: d.Size, Compression: comp}
	if err := e.validate(); err != nil {
		return LayerEntry{}, err
	}
	if err := rc.download(d, file); err != nil {
		return LayerEntry{}, err
	}
	opt := archive.Options{MaxBytes: rc.limits.MaxExtract, MaxWindow: rc.limits.MaxWindow}
	got, err := layer.DiffIDWithin(rc.ctx, file, layer.Compression(comp), opt)
	if errors.Is(err, archive.ErrLimit) {
		return LayerEntry{}, fmt.Errorf("uncompress as %s: %w (limits.extract, --max-extract; limits.window)", comp, err)
	}
	if err != nil {
		return LayerEntry{}, fmt.Errorf("uncompress as %s: %w", comp, err)
	}
	if got.String() != diffID {
		return LayerEntry{}, fmt.Errorf("its diff ID is %s, the manifest says %s", got, diffID)
	}
	return e, nil
}

// layerMediaType is the media type a cache exports a layer compressed
// with comp under, or "" for a compression pallet does not write.
func layerMediaType(comp string) types.MediaType {
	switch comp {
	case "gzip":
		return types.OCILayer
	case "zstd":
		return types.OCILayerZStd
	}
	return ""
}

// download fetches the blob d of the cache repository into file. Its
// size and sha256 are checked here, as it is written, whatever the client
// library does: nothing unverified enters the local cache. A blob whose
// declared size is over limits.download is refused before it is asked
// for, no more than that size (and one byte to tell) is read of any, and
// a body that comes slower than the minimum rate is abandoned.
func (rc *remoteCache) download(d v1.Descriptor, file string) error {
	if d.Digest.Algorithm != "sha256" || !isSHA256Hex(d.Digest.Hex) || d.Size < 0 {
		return fmt.Errorf("descriptor %s (%d bytes) is not a sha256 blob", d.Digest, d.Size)
	}
	lim := rc.limits.WithDefaults()
	if d.Size > lim.MaxBytes {
		return fmt.Errorf("blob %s: the manifest says %d bytes, over the limit of %d bytes (limits.download, --max-download)", d.Digest, d.Size, lim.MaxBytes)
	}
	var r io.ReadCloser
	l, err := remote.Layer(rc.ref.Context().Digest(d.Digest.String()), rc.entryOpts...)
	if err == nil {
		r, err = l.Compressed()
	}
	if err != nil {
		var se *regauth.StallError
		if errors.As(err, &se) {
			// It names the request, and what it waited for.
			return fmt.Errorf("fetch %s: %w (limits.stall)", d.Digest, se)
		}
		return fmt.Errorf("fetch %s: %w", d.Digest, err)
	}
	defer r.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, d.Size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var se *regauth.StallError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("fetch %s: stopped after %d of %d bytes: %w (limits.stall)", d.Digest, n, d.Size, se)
	case err != nil:
		return fmt.Errorf("fetch %s: %w", d.Digest, err)
	case n != d.Size:
		return fmt.Errorf("blob %s is not %d bytes as the manifest says", d.Digest, d.Size)
	case hex.EncodeToString(h.Sum(nil)) != d.Digest.Hex:
		return fmt.Errorf("blob %s has sha256 %s", d.Digest, hex.EncodeToString(h.Sum(nil)))
	}
	return nil
}

// ExportTo pushes the entries this build used (found or made) to ref, so
// another machine can import them with ImportFrom. Entries already at ref
// that this build did not use are kept (see keepFor): their blobs are in
// the repository already, so keeping them costs no upload. Other exports
// to ref at the same moment keep each other's entries too (see publish).
func (c *Cache) ExportTo(ctx context.Context, ref string, opts ...remote.Option) (err error) {
	defer func() { err = regauth.Redact(err) }()
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("shared cache %s (writing): %w", ref, err)
	}
	opts = regauth.Options(ctx, opts...)
	c.mu.Lock()
	arts := sortedSet(c.usedArtifacts)
	lays := sortedSet(c.usedLayers)
	c.mu.Unlock()
	now := time.Now().UTC()
	exported := now.Format(time.RFC3339)

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, cacheConfigType)
	tmp, release, err := c.TempDir()
	if err != nil {
		return err
	}
	defer release()
	defer os.RemoveAll(tmp)
	// Only local entries are exported: a used entry since dropped keeps
	// the registry's copy. Under a key the registry has too, the later
	// export's entry stays (see mergeEntries).
	var adds []mutate.Addendum
	for _, key := range arts {
		dir, ok := c.localArtifact(key)
		if !ok {
			continue
		}
		file := filepath.Join(tmp, key+".tar.gz")
		if err := tarDir(dir, file, key); err != nil {
			return fmt.Errorf("shared cache %s (writing): artifact entry %s: %w", ref, key, err)
		}
		l, err := tarball.LayerFromFile(file, tarball.WithMediaType(artifactEntryType))
		if err != nil {
			return err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: artifactEntryType, Annotations: map[string]string{annArtifact: key, annExported: exported}})
	}
	for _, key := range lays {
		e, blob, ok := c.localLayer(key)
		mt := layerMediaType(e.Compression)
		if !ok || mt == "" {
			continue
		}
		// Served from the file as it is: already compressed, never in memory.
		l, err := tarball.LayerFromFile(blob, tarball.WithMediaType(mt))
		if err != nil {
			return err
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: mt,
			Annotations: map[string]string{annLayer: key, annDiffID: e.DiffID, annCompression: e.Compression, annExported: exported}})
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return err
	}
	ours, err := img.Manifest()
	if err != nil {
		return err
	}
	push, err := remote.NewPusher(opts...)
	if err != nil {
		return fmt.Errorf("shared cache %s (writing): %w", ref, err)
	}
	pull, err := remote.NewPuller(opts...)
	if err != nil {
		return fmt.Errorf("shared cache %s (writing): %w", ref, err)
	}
	// Every blob goes up before the tag is read, so that what another
	// export can slip into, between our read and our write of the tag, is
	// a manifest's round trips and not an upload.
	if err := uploadBlobs(ctx, push, r.Context(), img); err != nil {
		return fmt.Errorf("shared cache %s (writing): %w", ref, regauth.Explain(err))
	}
	p := &publisher{ref: r, push: push, pull: pull, ours: *ours, now: now, warn: c.warn}
	return p.publish(ctx)
}

// uploadBlobs pushes the config and layers of img to repo, a few at a
// time; blobs the repository has already are not sent again.
func uploadBlobs(ctx context.Context, p *remote.Pusher, repo name.Repository, img v1.Image) error {
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	cfg, err := partial.ConfigLayer(img)
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	// An upload's PATCH holds no digest: the error says which entry.
	what := make([]string, len(ls))
	for i, d := range m.Layers {
		switch {
		case i >= len(what):
		case d.Annotations[annArtifact] != "":
			what[i] = fmt.Sprintf("artifact entry %s (blob %s)", d.Annotations[annArtifact], d.Digest)
		default:
			what[i] = fmt.Sprintf("layer entry %s (blob %s)", d.Annotations[annLayer], d.Digest)
		}
	}
	what = append(what, fmt.Sprintf("the cache's config (blob %s)", m.Config.Digest))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, l := range append(ls, cfg) {
		g.Go(func() error {
			if err := p.Upload(gctx, repo, l); err != nil {
				return fmt.Errorf("upload %s: %w", what[i], err)
			}
			return nil
		})
	}
	return g.Wait()
}

// tarDir writes the artifact entry dir as a gzipped tar with fixed times
// and owners. Its completion marker, last, holds key whatever the local
// one says (entries committed before markers named their keys have empty
// ones): an importer takes the entry only under that key.
func tarDir(dir, file, key string) error {
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
		if rel == "." || rel == "complete" {
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
	marker := &tar.Header{Name: "complete", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(key)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(marker); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, key); err != nil {
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
