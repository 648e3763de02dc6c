package build

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// linksFuture is a base's links being read.
type linksFuture struct {
	done  chan struct{}
	links tree.Links
	err   error
}

// throughBaseLinks moves what t places under a link of pi's bases to where
// the link leads (see tree.Links): a binary placed at /bin/ on a
// merged-/usr base lands in /usr/bin, as Docker's COPY puts it, instead of
// a layer's bin/ directory replacing the base's link. The layers of a
// platform are written once for all its bases, so bases that disagree on a
// link the layer goes through are refused.
func (b *builder) throughBaseLinks(ctx context.Context, name string, pi *plan.PlatformImage, l *plan.Layer, t *tree.Tree) (*tree.Tree, error) {
	var links tree.Links
	for i, ref := range pi.Bases {
		bl, err := b.linksOf(ctx, ref, pi.Platform)
		if err != nil {
			return nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): base %s: reading its links: %w", name, pi.Platform, ref, err))
		}
		if i == 0 {
			links = bl
			continue
		}
		for _, p := range slices.Concat(links.Touched(t), bl.Touched(t)) {
			if a, ok := links[p]; !ok || a != bl[p] {
				return nil, plan.Errorf(placementOf(l, p).Pos, "image %s (%s), layer %s: /%s is %s in base %s and %s in base %s, and the layer, written once for both, goes through it: place under the path it leads to", name, pi.Platform, l.Name, p, linkSaid(links, p), pi.Bases[0], linkSaid(bl, p), ref)
			}
		}
	}
	nt, err := t.Through(links)
	if err != nil {
		return nil, plan.Errorf(l.Placements[0].Pos, "image %s (%s), layer %s: %v", name, pi.Platform, l.Name, err)
	}
	return nt, nil
}

// linkSaid says what links has at p.
func linkSaid(links tree.Links, p string) string {
	if target, ok := links[p]; ok {
		return "a link to " + target
	}
	return "no link"
}

// linksOf returns the links of the base ref for p, read once per build
// and kept in the cache by the base's layers.
func (b *builder) linksOf(ctx context.Context, ref string, p platform.Platform) (tree.Links, error) {
	if image.IsBuiltin(ref) {
		return nil, nil // scratch, or a Windows base
	}
	k := baseKey{ref, p.String()}
	b.mu.Lock()
	if b.baseLinks == nil {
		b.baseLinks = map[baseKey]*linksFuture{}
	}
	f, ok := b.baseLinks[k]
	if !ok {
		f = &linksFuture{done: make(chan struct{})}
		b.baseLinks[k] = f
	}
	b.mu.Unlock()
	if ok {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return f.links, f.err
	}
	f.links, f.err = b.readLinks(ctx, ref, p)
	close(f.done)
	return f.links, f.err
}

func (b *builder) readLinks(ctx context.Context, ref string, p platform.Platform) (tree.Links, error) {
	img, err := b.base(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	read := func() (string, error) {
		links, err := image.DirLinks(img)
		if err != nil {
			return "", err
		}
		data, err := json.Marshal(links)
		return string(data), err
	}
	var data string
	if b.cache == nil {
		data, err = read()
	} else {
		key, kerr := image.LinksKey(img)
		if kerr != nil {
			return nil, kerr
		}
		data, err = b.cache.ContentFact("base-dir-links-v1", key, read)
	}
	if err != nil {
		return nil, err
	}
	var links tree.Links
	if json.Unmarshal([]byte(data), &links) == nil {
		return links, nil
	}
	// Not what this build writes: read the base again.
	if data, err = read(); err != nil {
		return nil, err
	}
	return links, json.Unmarshal([]byte(data), &links)
}
