// Package image resolves base images and assembles pallet's layers and
// config onto them, one image per platform, then gathers the platforms into
// an index. Images stay go-containerregistry v1.Image values throughout:
// nothing is read from a base until an output asks for it, except the
// tar headers DirLinks reads, once per base, to learn its links.
package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/refname"
	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/suggest"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Scratch is the base name for an empty image.
const Scratch = "scratch"

// Resolver finds base images.
type Resolver struct {
	// Dir resolves relative layout paths (the recipe's directory).
	Dir string
	// WorkDir holds the layers of built-in bases; it must outlive the images.
	WorkDir string
	// Epoch stamps built-in bases, which pallet creates itself.
	Epoch time.Time
	// Remote are extra options for registry access (transport, auth).
	Remote []remote.Option
	// Blobs, when set, keeps the layers of registry bases on disk so they
	// are downloaded once, not at every build.
	Blobs BlobStore
	// MaxManifestSize bounds each index, manifest and config read from an
	// OCI layout base; zero means DefaultMaxManifestSize.
	MaxManifestSize int64
	// Layer, when set, writes the layer of a built-in base, so that a
	// build's cache can keep it: it is the same at every build with the
	// same epoch. Nil writes it into WorkDir every time.
	Layer func(BaseLayer) (v1.Layer, error)
}

// BaseLayer is the layer of a built-in base before anything of it is on
// disk: a cache finds it by its tree and the sums of its files' content,
// known in memory, and writes the files (Write) only to build it.
type BaseLayer struct {
	// Tree is what the layer holds. Its files' Sources are where Write
	// puts them: they do not exist before.
	Tree *tree.Tree
	// Options are the layer's; its bytes depend on them.
	Options layer.Options
	// Sum is the sha256 (hex) of the content of the file a Tree entry's
	// Source names, as cache.HashFile would give it once written: a
	// layer's key made with it is the one made from the files.
	Sum func(source string) string
	// Write writes the files the Tree's Sources name, once however
	// often it is called. It must be called before anything reads them
	// (layer.Build, layer.WriteTar).
	Write func() error
}

// Base returns the base image ref for platform p. ref is "scratch",
// "windows-hostprocess-scratch" (with valid minimal registry hives, as
// Windows Server 2025 requires), "windows-hostprocess-scratch-v1" (the
// earlier empty-hive base, byte for byte), "oci:PATH[:TAG]" (an OCI image
// layout), or a registry reference.
func (r *Resolver) Base(ctx context.Context, ref string, p platform.Platform) (v1.Image, error) {
	var (
		img v1.Image
		err error
	)
	switch {
	case ref == Scratch:
		return scratch(p)
	case ref == HostProcessScratchV1:
		return hostProcessV1.build(p, r.WorkDir, r.Epoch, r.Layer)
	case ref == HostProcessScratch:
		return hostProcessCurrent.build(p, r.WorkDir, r.Epoch, r.Layer)
	case strings.HasPrefix(ref, "oci:"):
		dir, tag, _ := LayoutRef(ref, r.Dir)
		img, err = r.fromLayout(dir, tag, p)
	default:
		img, err = r.fromRegistry(ctx, ref, p)
	}
	if err != nil {
		return nil, fmt.Errorf("base %s for %s: %w", ref, p, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("base %s for %s: %w", ref, p, err)
	}
	if len(m.Layers) > MaxLayers {
		return nil, fmt.Errorf("base %s for %s: its manifest lists %d layers; an image has at most %d (Linux's overlayfs mounts no more, Docker no more than %d)", ref, p, len(m.Layers), MaxLayers, DockerMaxLayers)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("base %s: config %s: %w", ref, m.Config.Digest, err)
	}
	if _, ok := p.Rank(v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}); !ok {
		// An index's entry may name another platform than the config
		// it leads to; the config is the image's own word.
		return nil, fmt.Errorf("base %s is %s by its config, not %s", ref, platform.Name(cf.OS, cf.Architecture, cf.Variant), p)
	}
	// The config of an image built on this base is the base's written
	// again from what was parsed, which can be larger than what was read:
	// go-containerregistry gives each history entry without a date one
	// ("{}" becomes 35 bytes). Past the bound, such a base failed only at
	// assembly, told to shorten the recipe's env or labels, after every
	// parse of it had taken seconds (a 3.5 MB config of 900,000 entries:
	// 21 s and 300 MB).
	if raw, err := json.Marshal(cf); err == nil && len(raw) > DefaultMaxManifestSize {
		undated := 0
		for _, h := range cf.History {
			if h.Created.IsZero() {
				undated++
			}
		}
		return nil, fmt.Errorf("base %s: config %s: an image built on it would hold it as %d bytes (%d of its %d history entries have no date, and are given one), over the %d an image config may be", ref, m.Config.Digest, len(raw), undated, len(cf.History), DefaultMaxManifestSize)
	}
	return img, nil
}

func scratch(p platform.Platform) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.ConfigFile(img, &v1.ConfigFile{
		OS:           p.OS,
		Architecture: p.Arch,
		Variant:      p.Variant,
		RootFS:       v1.RootFS{Type: "layers"},
	})
}

// CheckBaseRef refuses a base that is none of the kinds Base takes
// before it is taken for a registry reference: go-containerregistry's
// parser lets "file:///x" or "../img" through as names on the hosts
// "file:" and "..", which would be asked for them over the network, and
// the build would fail on a name lookup that says nothing of the base.
// The grammar is the one docker and containerd read references by.
func CheckBaseRef(ref string) error {
	if IsBuiltin(ref) || strings.HasPrefix(ref, "oci:") {
		return nil
	}
	if _, err := refname.ParseNormalizedNamed(ref); err != nil {
		return fmt.Errorf("base %q is not scratch, %s, %s, oci:PATH[:TAG] or a registry reference (%v)", ref, HostProcessScratch, HostProcessScratchV1, err)
	}
	if near := nearBuiltin(ref); near != "" {
		return fmt.Errorf("base %q is not a base pallet makes (did you mean %s?); as written it is docker.io/library/%s, to be pulled from Docker Hub: write that to mean it", ref, near, ref)
	}
	return nil
}

// nearBuiltin is the built-in base that a bare base name (no registry,
// path, tag or digest) is most likely a slip for, or "". Such a name is
// an official image on Docker Hub, so the slip would otherwise surface
// as a failed pull, or offline as a failed name lookup, neither of which
// names the built-in meant. No official image holds "hostprocess" or is
// two edits from "scratch".
func nearBuiltin(ref string) string {
	if strings.ContainsAny(ref, "/:@") {
		return ""
	}
	if strings.Contains(ref, "hostprocess") {
		if strings.HasSuffix(ref, "-v1") {
			return HostProcessScratchV1
		}
		return HostProcessScratch
	}
	if suggest.Distance(ref, Scratch) <= 2 {
		return Scratch
	}
	return ""
}

// IsBuiltin says whether ref is a base pallet makes itself: one that
// needs no registry and no file.
func IsBuiltin(ref string) bool {
	return ref == Scratch || ref == HostProcessScratch || ref == HostProcessScratchV1
}

// LayoutRef splits a base "oci:PATH[:TAG]" into the layout's directory,
// relative paths taken from dir, and the tag; ok is false for any other
// base.
func LayoutRef(ref, dir string) (path, tag string, ok bool) {
	spec, ok := strings.CutPrefix(ref, "oci:")
	if !ok {
		return "", "", false
	}
	path, tag, _ = strings.Cut(spec, ":")
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return path, tag, true
}

func (r *Resolver) fromLayout(dir, refName string, p platform.Platform) (v1.Image, error) {
	l, err := openLayout(dir, r.MaxManifestSize)
	if err != nil {
		return nil, err
	}
	found, err := l.find(refName, p)
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s has no image for %s (%s)", dir, p, l.holds())
	case 1:
		return found[0], nil
	}
	// The same image listed under several names is not ambiguous.
	first, _ := found[0].Digest()
	for _, img := range found[1:] {
		if d, _ := img.Digest(); d != first {
			return nil, fmt.Errorf("%s holds several images for %s; name one as oci:%s:REFNAME", dir, p, dir)
		}
	}
	return found[0], nil
}

// unambiguous refuses an index that lists p under several Windows
// versions: a Windows image runs only on the version it was built on (but
// for host-process images, which name none), so picking the first would
// build for whichever version the index happens to list first.
func unambiguous(ref string, m *v1.IndexManifest, p platform.Platform) error {
	seen := map[string]bool{}
	var versions []string
	for _, d := range m.Manifests {
		if d.Platform == nil || !p.Describes(*d.Platform) || seen[d.Platform.OSVersion] {
			continue
		}
		seen[d.Platform.OSVersion] = true
		versions = append(versions, d.Platform.OSVersion)
	}
	if len(versions) > 1 {
		return fmt.Errorf("%s lists %s for %d Windows versions (os.version %s); name one by digest (REF@sha256:...), or list each as a base to build one image per version", ref, p, len(versions), strings.Join(versions, ", "))
	}
	return nil
}

func (r *Resolver) fromRegistry(ctx context.Context, ref string, p platform.Platform) (v1.Image, error) {
	nref, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	opts := regauth.Options(ctx, append([]remote.Option{remote.WithPlatform(p.V1())}, r.Remote...)...)
	desc, err := remote.Get(nref, opts...)
	if err != nil {
		return nil, regauth.Explain(err)
	}
	if isSchema1(desc.MediaType) {
		// go-containerregistry's own error points at an issue of its
		// tracker and says nothing of what to do.
		return nil, fmt.Errorf("its manifest is Docker's schema 1 (%s), which pallet does not read, nor do current containerd and Docker; push it again as an OCI or Docker schema 2 image", desc.MediaType)
	}
	if err := agrees(desc); err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		m, err := indexManifest(desc)
		if err != nil {
			return nil, err
		}
		if err := unambiguous(ref, m, p); err != nil {
			return nil, err
		}
		none, err := nestedWithin(nref, m, p, opts)
		if err != nil {
			return nil, err
		}
		// Images that name no platform are known by their configs.
		child, err := byConfig(nref, m, p, opts)
		if err != nil {
			return nil, err
		}
		if child != nil {
			desc = child
		} else if d, err := closest(m, p); err != nil {
			return nil, err
		} else if d != nil {
			// go-containerregistry takes the first entry that
			// satisfies p: none for an amd64/v3 build on an index of
			// plain amd64, and an amd64/v3 image, listed first, for a
			// plain amd64 build. The closest image (platform.Rank) is
			// taken by its digest instead.
			if desc, err = getManifest(nref, d.Digest, opts); err != nil {
				return nil, err
			}
		} else if none != nil {
			// The choice is go-containerregistry's, which finds
			// nothing: its error says nothing of what the index
			// holds.
			return nil, none
		}
	}
	img, err := desc.Image()
	if err != nil {
		return nil, regauth.Explain(err)
	}
	if err := CheckConfigSize(img); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	if r.Blobs == nil {
		return img, nil
	}
	return &storedImage{Image: img, store: r.Blobs, ref: nref, ctx: ctx}, nil
}

// indexManifest reads the index desc holds: once, for each of the
// checks and choices fromRegistry makes of it.
func indexManifest(desc *remote.Descriptor) (*v1.IndexManifest, error) {
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	return idx.IndexManifest()
}

// agrees refuses a manifest the registry sends as an index while it is
// an image's, or the other way round, as containerd refuses it (its
// images.validateMediaType): taken by the Content-Type, an image manifest
// read as an index has no entries ("no child with platform linux/amd64"),
// and an index read as an image no config. Another Content-Type
// (text/plain from a static server) is left to go-containerregistry,
// which reads the manifest as an image.
func agrees(desc *remote.Descriptor) error {
	var body struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
		Config    json.RawMessage `json:"config"`
		Layers    json.RawMessage `json:"layers"`
	}
	if err := json.Unmarshal(desc.Manifest, &body); err != nil {
		return nil // go-containerregistry says what is wrong with it
	}
	given := func(v json.RawMessage) bool { return v != nil && string(v) != "null" }
	var is string
	switch {
	case desc.MediaType.IsImage() && (given(body.Manifests) || body.MediaType.IsIndex()):
		is = "an index"
	case desc.MediaType.IsIndex() && (given(body.Config) || given(body.Layers) || body.MediaType.IsImage()):
		is = "an image manifest"
	default:
		return nil
	}
	if body.MediaType != "" {
		is += " (" + string(body.MediaType) + ")"
	}
	return fmt.Errorf("the registry sends its manifest as %s (its Content-Type), but it is %s", desc.MediaType, is)
}

// maxConfigsRead bounds the images of a registry index that name no
// platform whose configs byConfig reads, two requests each: real indexes
// list a few platforms.
const maxConfigsRead = 32

// byConfig returns, for a registry index some of whose images name no
// platform, the image closest to p (platform.Rank), each of those known
// by its config, as containerd knows them (images.Manifest) and as a
// layout's are read; nil when every image names its platform.
// go-containerregistry takes each of them for linux/amd64: an arm64 build
// found no image in an index of linux/amd64 and linux/arm64 images that
// named none, and an amd64 build could take the arm64 one, listed first.
func byConfig(nref name.Reference, m *v1.IndexManifest, p platform.Platform, opts []remote.Option) (*remote.Descriptor, error) {
	var unnamed int
	for _, d := range m.Manifests {
		if d.Platform == nil && d.MediaType.IsImage() {
			unnamed++
		}
	}
	if unnamed == 0 {
		return nil, nil
	}
	if unnamed > maxConfigsRead {
		return nil, fmt.Errorf("its index lists %d images that name no platform; pallet reads the configs of at most %d to learn theirs", unnamed, maxConfigsRead)
	}
	ds := slices.Clone(m.Manifests)
	fetched := map[v1.Hash]*remote.Descriptor{}
	var seen []string
	for i, d := range ds {
		if d.Platform != nil {
			seen = append(seen, platform.Name(d.Platform.OS, d.Platform.Architecture, d.Platform.Variant))
			continue
		}
		if !d.MediaType.IsImage() {
			continue
		}
		child, err := getManifest(nref, d.Digest, opts)
		if err != nil {
			return nil, err
		}
		img, err := child.Image()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Digest, regauth.Explain(err))
		}
		if err := CheckConfigSize(img); err != nil {
			return nil, fmt.Errorf("%s: %w", d.Digest, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("%s: config: %w", d.Digest, regauth.Explain(err))
		}
		ds[i].Platform = &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		fetched[d.Digest] = child
		seen = append(seen, platform.Name(cf.OS, cf.Architecture, cf.Variant)+" (by its config)")
	}
	best := p.Closest(ds)
	if len(best) == 0 {
		return nil, fmt.Errorf("its index has no image for %s (it holds %s)", p, strings.Join(seen, "; "))
	}
	if child, ok := fetched[best[0].Digest]; ok {
		return child, nil
	}
	if !best[0].MediaType.IsImage() {
		return nil, nil // a nested index: go-containerregistry follows it
	}
	return getManifest(nref, best[0].Digest, opts)
}

// getManifest fetches the manifest of digest d in nref's repository,
// refused where its Content-Type and its body disagree (agrees).
func getManifest(nref name.Reference, d v1.Hash, opts []remote.Option) (*remote.Descriptor, error) {
	desc, err := remote.Get(nref.Context().Digest(d.String()), opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d, regauth.Explain(err))
	}
	if err := agrees(desc); err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	return desc, nil
}

// indexHolds says what a registry index lists, for an error saying that
// none of it is for the platform asked: the first maxPassed entries'
// platforms, as a layout's are said (layoutReader.holds).
func indexHolds(m *v1.IndexManifest) string {
	var seen []string
	for _, d := range m.Manifests {
		what := string(d.MediaType) + " naming no platform"
		if d.Platform != nil {
			what = platform.Name(d.Platform.OS, d.Platform.Architecture, d.Platform.Variant)
		}
		if !slices.Contains(seen, what) {
			seen = append(seen, what)
		}
	}
	return holding(seen, "it lists nothing")
}

// closest returns, for an amd64 platform, the image of a registry index
// that is closest to p (platform.Rank), or nil to leave the choice to
// go-containerregistry (other platforms, and an entry that is an index).
func closest(m *v1.IndexManifest, p platform.Platform) (*v1.Descriptor, error) {
	if p.Arch != "amd64" {
		return nil, nil
	}
	// An entry that names no platform (here a nested index: byConfig
	// read the images' configs) is linux/amd64, as
	// go-containerregistry (and nestedWithin) take it: asked for
	// linux/amd64/v3, go-containerregistry would not take it at all.
	ds := slices.Clone(m.Manifests)
	for i := range ds {
		if ds[i].Platform == nil {
			ds[i].Platform = &v1.Platform{OS: "linux", Architecture: "amd64"}
		}
	}
	best := p.Closest(ds)
	if len(best) == 0 || !best[0].MediaType.IsImage() {
		return nil, nil
	}
	return &best[0], nil
}

// nestedWithin refuses a registry index whose child for p is an index
// nested more than MaxIndexDepth deep, as a layout's may not be:
// go-containerregistry's desc.Image follows nested indexes without a
// bound, each a request, so a registry could serve a chain of thousands.
// It follows the child go-containerregistry picks (the first whose
// platform satisfies p's, linux/amd64 when it names none), and asks for
// nothing more when that child is an image, as it is in real indexes.
// Where go-containerregistry would find no child, none says so, and what
// the index there holds.
func nestedWithin(nref name.Reference, m *v1.IndexManifest, p platform.Platform, opts []remote.Option) (none, err error) {
	want := p.V1()
	where := "its index"
	for depth := 1; ; {
		var child *v1.Descriptor
		for i, d := range m.Manifests {
			dp := v1.Platform{OS: "linux", Architecture: "amd64"}
			if d.Platform != nil {
				dp = *d.Platform
			}
			if dp.Satisfies(want) {
				child = &m.Manifests[i]
				break
			}
		}
		switch {
		case child == nil:
			return fmt.Errorf("%s has no image for %s (%s)", where, p, indexHolds(m)), nil
		case !child.MediaType.IsIndex():
			return nil, nil
		case child.Data != nil:
			// A child carried in the index itself (data) costs no
			// request, and the manifest size bounds how deep those
			// can nest.
			if m, err = v1.ParseIndexManifest(bytes.NewReader(child.Data)); err != nil {
				return nil, fmt.Errorf("%s: the index %s it carries: %w", where, child.Digest, err)
			}
		default:
			if depth++; depth > MaxIndexDepth {
				return nil, fmt.Errorf("%s: indexes nest more than %d deep", nref, MaxIndexDepth)
			}
			desc, err := remote.Get(nref.Context().Digest(child.Digest.String()), opts...)
			if err != nil {
				return nil, regauth.Explain(err)
			}
			if m, err = indexManifest(desc); err != nil {
				return nil, err
			}
		}
		where = fmt.Sprintf("the index %s it nests", child.Digest)
	}
}

// CheckConfigSize refuses an image whose manifest declares a config over
// DefaultMaxManifestSize before it is read: go-containerregistry reads a
// config whole into memory, as many bytes as the manifest says.
func CheckConfigSize(img v1.Image) error {
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	if m.Config.Size > DefaultMaxManifestSize || m.Config.Size < 0 {
		return fmt.Errorf("its config is %d bytes, over the %d pallet reads", m.Config.Size, DefaultMaxManifestSize)
	}
	return nil
}
