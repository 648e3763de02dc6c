package output

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// CreateIndex assembles the images that sources name (pushed by digest,
// typically by several CI runners with --push-by-digest) into one index,
// pushes it to tag's repository by digest and then sets tag: the merge
// step of a build fanned out across machines. A source that is itself an
// index gives its images. Entries keep the order of sources, and are made
// as a build on one machine makes them (image.Index: the platform read
// from each image's config, os.version included), so sources given in the
// recipe's platform order give the digest that build would have.
//
// Every source must exist (nothing is pushed otherwise), and no two
// entries may have one platform (os, architecture, variant and
// os.version). Sources in another repository of the registry are mounted
// or copied into tag's repository. It returns the index's digest.
func CreateIndex(ctx context.Context, tag name.Tag, sources []name.Digest, opts ...remote.Option) (v1.Hash, error) {
	if len(sources) == 0 {
		return v1.Hash{}, errors.New("index create: no image to put in the index")
	}
	ropts := regauth.Options(ctx, opts...)
	var (
		imgs []v1.Image
		from = map[string]string{} // platform -> source that gave it
	)
	for _, src := range sources {
		got, err := sourceImages(src, ropts)
		if err != nil {
			return v1.Hash{}, err
		}
		for _, img := range got {
			p, err := platformOf(img)
			if err != nil {
				return v1.Hash{}, fmt.Errorf("%s: %w", src, err)
			}
			if first, ok := from[p]; ok {
				return v1.Hash{}, fmt.Errorf("index create: %s and %s both hold an image for %s; an index has one per platform (os.version included)", first, src, p)
			}
			from[p] = src.String()
			imgs = append(imgs, img)
		}
	}
	idx, err := image.Index(imgs)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("index create: %w", err)
	}
	d, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	// By digest first: a push that fails half-way moves no tag.
	byDigest := tag.Context().Digest(d.String())
	if err := remote.WriteIndex(byDigest, idx, ropts...); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", byDigest, regauth.Explain(err))
	}
	if err := remote.Tag(tag, idx, ropts...); err != nil {
		return v1.Hash{}, fmt.Errorf("tag %s (the index is pushed as %s): %w", tag, byDigest, regauth.Explain(err))
	}
	return d, nil
}

// sourceImages fetches what src names: its image, or the images of its
// index.
func sourceImages(src name.Digest, opts []remote.Option) ([]v1.Image, error) {
	desc, err := remote.Get(src, opts...)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%s: not found in %s; was it pushed (pallet build --push-by-digest)?", src, src.Context())
		}
		return nil, fmt.Errorf("%s: %w", src, regauth.Explain(err))
	}
	switch {
	case desc.MediaType.IsImage():
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		return []v1.Image{img}, nil
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		var out []v1.Image
		for _, c := range m.Manifests {
			if !c.MediaType.IsImage() {
				return nil, fmt.Errorf("%s: entry %s is a %s, not an image", src, c.Digest, c.MediaType)
			}
			img, err := idx.Image(c.Digest)
			if err != nil {
				return nil, fmt.Errorf("%s: entry %s: %w", src, c.Digest, err)
			}
			out = append(out, img)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s is a %s, neither an image nor an index", src, desc.MediaType)
}

// platformOf is img's platform as its index entry will say it.
func platformOf(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("reading its config: %w", err)
	}
	p := strings.Join([]string{cf.OS, cf.Architecture}, "/")
	if cf.Variant != "" {
		p += "/" + cf.Variant
	}
	if cf.OS == "" || cf.Architecture == "" {
		return "", fmt.Errorf("its config names no platform (os %q, architecture %q)", cf.OS, cf.Architecture)
	}
	if cf.OSVersion != "" {
		p += " (os.version " + cf.OSVersion + ")"
	}
	return p, nil
}
