package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// viewFuture is a base's view being read.
type viewFuture struct {
	done chan struct{}
	view *tree.View
	err  error
}

// baseViews are the views of pi's bases (see tree.View), nil for a base
// that holds nothing to place through (scratch, a built-in base).
func (b *builder) baseViews(ctx context.Context, name string, pi *plan.PlatformImage) ([]*tree.View, error) {
	views := make([]*tree.View, len(pi.Bases))
	for i, ref := range pi.Bases {
		v, err := b.viewOf(ctx, ref, pi.Platform)
		if err != nil {
			return nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): base %s: reading what it holds: %w", name, pi.Platform, ref, err))
		}
		views[i] = v
	}
	return views, nil
}

// placeOnBases places the layer trees of pi in order onto its bases (see
// tree.Through): each goes through the links of the bases and of the
// layers before it, and keeps the modes and owners of the directories
// they hold. The layers of a platform are written once for all its
// bases, so bases that would place a layer differently are refused.
func placeOnBases(name string, pi *plan.PlatformImage, views []*tree.View, raw []*tree.Tree) ([]*tree.Tree, error) {
	var first []*tree.Tree
	for k, view := range views {
		placed := make([]*tree.Tree, len(raw))
		for i, t := range raw {
			l := pi.Layers[i]
			p, err := t.Through(view)
			if err != nil {
				return nil, plan.Errorf(l.Placements[0].Pos, "image %s (%s), layer %s: %v", name, pi.Platform, l.Name, err)
			}
			placed[i] = p
			if i < len(raw)-1 {
				view = view.With(p)
			}
		}
		if k == 0 {
			first = placed
			continue
		}
		for i := range placed {
			if !tree.Same(first[i], placed[i]) {
				l := pi.Layers[i]
				return nil, plan.Errorf(l.Placements[0].Pos, "image %s (%s), layer %s: bases %s and %s differ where the layer places files (a link, or a directory's mode or owner), and the layer is written once for all bases: place it under paths the bases agree on", name, pi.Platform, l.Name, pi.Bases[0], pi.Bases[k])
			}
		}
	}
	if first == nil {
		return raw, nil
	}
	return first, nil
}

// viewOf returns the view of the base ref for p, read once per build and
// kept in the cache by the base's layers.
func (b *builder) viewOf(ctx context.Context, ref string, p platform.Platform) (*tree.View, error) {
	if image.IsBuiltin(ref) {
		return nil, nil // scratch, or a Windows base
	}
	k := baseKey{ref, p.String()}
	b.mu.Lock()
	if b.views == nil {
		b.views = map[baseKey]*viewFuture{}
	}
	f, ok := b.views[k]
	if !ok {
		f = &viewFuture{done: make(chan struct{})}
		b.views[k] = f
	}
	b.mu.Unlock()
	if ok {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return f.view, f.err
	}
	f.view, f.err = b.readView(ctx, ref, p)
	close(f.done)
	return f.view, f.err
}

// viewFact names the cache's facts about bases' views.
const viewFact = "base-view-v1"

func (b *builder) readView(ctx context.Context, ref string, p platform.Platform) (*tree.View, error) {
	img, err := b.base(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	max := b.fetcher.Limits.Unpack.MaxBytes
	if max <= 0 {
		max = archive.DefaultMaxBytes
	}
	read := func() (string, error) {
		v, err := image.BaseView(img, max)
		if err != nil {
			return "", err
		}
		return encodeView(v)
	}
	var data string
	if b.cache == nil {
		data, err = read()
	} else {
		key, kerr := image.ViewKey(img)
		if kerr != nil {
			return nil, kerr
		}
		data, err = b.cache.ContentFact(viewFact, key, func(s string) bool { _, err := decodeView(s); return err == nil }, read)
	}
	if err != nil {
		return nil, err
	}
	return decodeView(data)
}

// encodeView is v as the cache keeps it: its JSON after the JSON's
// sha256, so that a damaged entry is told from one this build wrote.
func encodeView(v *tree.View) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) + "\n" + string(data), nil
}

// decodeView reads what encodeView wrote, checking the sum and that every
// path is clean and every link has a target.
func decodeView(s string) (*tree.View, error) {
	sum, data, ok := strings.Cut(s, "\n")
	got := sha256.Sum256([]byte(data))
	if !ok || sum != hex.EncodeToString(got[:]) {
		return nil, fmt.Errorf("base view: damaged (its sum does not match)")
	}
	var v tree.View
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		return nil, fmt.Errorf("base view: %w", err)
	}
	for p, target := range v.Links {
		if c, err := tree.CleanPath(p); err != nil || c != p || p == "." || target == "" {
			return nil, fmt.Errorf("base view: bad link %q -> %q", p, target)
		}
	}
	for p := range v.Dirs {
		if c, err := tree.CleanPath(p); err != nil || c != p || p == "." {
			return nil, fmt.Errorf("base view: bad directory %q", p)
		}
	}
	return &v, nil
}

// dockerDest is dest as a Dockerfile's COPY means it: a destination
// without a trailing slash that is a directory in the base (through its
// links) is copied into, as Docker does ("COPY app /usr/local/bin"). A
// recipe means the name it gives, and is refused if it would replace a
// directory (see tree.Through).
func (b *builder) dockerDest(ctx context.Context, name string, pi *plan.PlatformImage, dest string) (string, error) {
	if !pi.Overwrite || strings.HasSuffix(dest, "/") || pi.Platform.IsWindows() {
		return dest, nil
	}
	views, err := b.baseViews(ctx, name, pi)
	if err != nil {
		return "", err
	}
	v := views[0]
	if v.Empty() {
		return dest, nil
	}
	c, err := tree.CleanPath(dest)
	if err != nil {
		return dest, nil // placing says what is wrong
	}
	if r, err := v.Links.Resolve(c); err == nil {
		if _, ok := v.Dirs[r]; ok {
			return dest + "/", nil
		}
	}
	return dest, nil
}
