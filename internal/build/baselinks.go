package build

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// viewFuture is a base's view being read.
type viewFuture struct {
	done chan struct{}
	view *tree.View
	win  *windowsView // a Windows base's (windowsViewOf)
	err  error
}

// baseViews are the views of pi's bases (see tree.View), nil for a base
// that holds nothing to place through (scratch, a built-in base).
func (b *builder) baseViews(ctx context.Context, name string, pi *plan.PlatformImage) ([]*tree.View, error) {
	return eachBase(name, pi, func(ref string) (*tree.View, error) { return b.viewOf(ctx, ref, pi.Platform) })
}

// eachBase reads, with read, what each of pi's bases holds, in its order;
// a base that cannot be read is named at the image's base line.
func eachBase[V any](name string, pi *plan.PlatformImage, read func(ref string) (V, error)) ([]V, error) {
	views := make([]V, len(pi.Bases))
	for i, ref := range pi.Bases {
		v, err := read(ref)
		if err != nil {
			return nil, plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): base %s: reading what it holds: %w", name, pi.Platform, ref, err))
		}
		views[i] = v
	}
	return views, nil
}

// destination is where placement pm of pi lands: its Dest, or, for a
// file Docker's COPY puts into a directory the base holds there, that
// directory under the file's name (plan.Placement.IntoDirAs), spelled as
// the base spells it (Windows names are one whatever their case). A
// placement that needs a directory there (plan.Placement.DirNeeded) is
// refused where a base holds none. On Windows, a Dest on the way to
// which a base holds a link goes where the link leads (windowsThrough).
// replaced says the placement is not made at all (plan.Placement.OnlyIntoDir
// at a destination that is no directory).
func (b *builder) destination(ctx context.Context, name string, pi *plan.PlatformImage, pm plan.Placement) (dest string, replaced bool, err error) {
	dest = pm.Dest
	if pi.Platform.IsWindows() {
		if dest, err = b.windowsThrough(ctx, name, pi, pm); err != nil {
			return "", false, err
		}
	}
	if pm.IntoDirAs == "" && pm.DirNeeded == "" {
		return dest, pm.OnlyIntoDir, nil
	}
	if n := pm.IntoDirAs; n != "" && (n == "." || n == ".." || strings.ContainsAny(n, "/\\")) {
		return "", false, plan.Errorf(pm.Pos, "image %s (%s): %q is not a file name", name, pi.Platform, n)
	}
	dirAt, err := b.baseDirs(ctx, name, pi)
	if err != nil {
		return "", false, err
	}
	sep := "/"
	if pi.Platform.IsWindows() {
		sep = `\`
	}
	if pm.DirNeeded != "" {
		p := strings.Trim(path.Clean("/"+pm.DirNeeded), "/")
		for i := range pi.Bases {
			_, dir, err := dirAt(i, p)
			if err != nil {
				return "", false, plan.Errorf(pm.Pos, "image %s (%s): %s: the base %s: %v, so whether it holds a directory there cannot be told", name, pi.Platform, pm.DirNeeded, pi.Bases[i], err)
			}
			if !dir {
				return "", false, plan.Errorf(pm.Pos, "image %s (%s): %s: the base %s holds no directory there, so BuildKit copies the sources one after another: the first, a file, is written at %s, and a directory copied there after it fails (cannot copy to non-directory); end the destination with %s to copy them into a directory, or copy the directory first", name, pi.Platform, pm.DirNeeded, pi.Bases[i], pm.DirNeeded, sep)
			}
		}
	}
	if pm.IntoDirAs == "" {
		return dest, pm.OnlyIntoDir, nil
	}
	p := strings.Trim(path.Clean("/"+pm.Dest), "/")
	into, spelled := false, ""
	for i := range pi.Bases {
		s, dir, err := dirAt(i, p)
		if err != nil {
			return "", false, plan.Errorf(pm.Pos, "image %s (%s): %s: the base %s: %v, so whether the file goes into a directory there cannot be told; end the destination with %s or name the file elsewhere", name, pi.Platform, pm.Dest, pi.Bases[i], err, sep)
		}
		if i > 0 && dir != into {
			return "", false, plan.Errorf(pm.Pos, "image %s (%s): bases %s and %s differ at %s: one holds a directory there, so the file goes into it on one base and replaces nothing on the other; end the destination with %s or name the file", name, pi.Platform, pi.Bases[0], pi.Bases[i], pm.Dest, sep)
		}
		if i == 0 {
			into, spelled = dir, s
		}
	}
	if !into {
		return dest, pm.OnlyIntoDir, nil
	}
	return path.Join("/", spelled, pm.IntoDirAs), false, nil
}

// windowsThrough is pm's Dest through the links of pi's Windows bases:
// Windows follows a link wherever it is on a path (the importer does
// not: a layer's directory at a link's path replaces the link), so a
// placement under one goes where it leads, spelled as the base spells
// it, as Docker's COPY on Windows resolves its destination. The Dest
// itself, when it names a file, goes through a link there only for a
// Dockerfile COPY (FollowLink); else it is left to the placement
// (IntoDirAs, or windowsBaseClash). Bases that lead one Dest apart, or
// a link that leaves the container's C:\, are refused at pm's line.
func (b *builder) windowsThrough(ctx context.Context, name string, pi *plan.PlatformImage, pm plan.Placement) (string, error) {
	clean := strings.Trim(path.Clean("/"+pm.Dest), "/")
	if clean == "" {
		return pm.Dest, nil
	}
	dirForm := strings.HasSuffix(pm.Dest, "/")
	dir, file := clean, ""
	if !dirForm {
		dir, file = path.Dir(clean), path.Base(clean)
	}
	views, err := b.windowsViews(ctx, name, pi)
	if err != nil {
		return "", err
	}
	out := ""
	for i, v := range views {
		ref := pi.Bases[i]
		dest := pm.Dest
		refuse := func(err error) error {
			return plan.Errorf(pm.Pos, "image %s (%s): %s: the base %s: %v, so where the placement lands cannot be told; place it elsewhere", name, pi.Platform, pm.Dest, ref, err)
		}
		at := dir
		if dir != "." {
			s, kind, linked, err := v.resolve(dir)
			if err != nil {
				return "", refuse(err)
			}
			at = s
			if linked && kind != winFile {
				dest = "/" + path.Join(s, file)
				if dirForm {
					dest += "/"
				}
			}
		}
		// A Dockerfile COPY's one file at a link that is not to a
		// directory (IntoDirAs puts it into one) is written where the
		// link leads, as BuildKit resolves its destination.
		if pm.FollowLink && file != "" {
			if _, ok := v.links[layer.NTFSKey(path.Join(at, file))]; ok {
				s, kind, _, err := v.resolve(path.Join(at, file))
				if err != nil {
					return "", refuse(err)
				}
				if kind != winDir {
					dest = "/" + s
				}
			}
		}
		if i > 0 && dest != out {
			return "", plan.Errorf(pm.Pos, "image %s (%s): bases %s and %s lead %s apart (%s, %s) through their links, and the layer is written once for all bases: place it under paths the bases agree on", name, pi.Platform, pi.Bases[0], ref, pm.Dest, out, dest)
		}
		out = dest
	}
	return out, nil
}

// baseDirs gives, for the bases of pi, whether base i holds a directory
// at p (clean, relative to the root), through its links, and how it
// spells it: a Linux base's view as read, a Windows base's whatever the
// case (windowsView.at), or why it cannot be told.
func (b *builder) baseDirs(ctx context.Context, name string, pi *plan.PlatformImage) (func(i int, p string) (string, bool, error), error) {
	if !pi.Platform.IsWindows() {
		views, err := b.baseViews(ctx, name, pi)
		if err != nil {
			return nil, err
		}
		return func(i int, p string) (string, bool, error) { return p, views[i].IsDir(p), nil }, nil
	}
	views, err := b.windowsViews(ctx, name, pi)
	if err != nil {
		return nil, err
	}
	return func(i int, p string) (string, bool, error) { return views[i].at(p) }, nil
}

// placeOnBases places the layer trees of pi in order onto its bases (see
// tree.Through): each goes through the links of the bases and of the
// layers before it, and keeps the modes and owners of the directories
// they hold. The layers of a platform are written once for all its
// bases, so bases that would place a layer differently are refused.
func placeOnBases(name string, pi *plan.PlatformImage, views []*tree.View, raw []*tree.Tree) ([]*tree.Tree, error) {
	var first []*tree.Tree
	for k, base := range views {
		placed := make([]*tree.Tree, len(raw))
		view := base
		for i, t := range raw {
			l := pi.Layers[i]
			p, err := t.Through(view)
			if err != nil {
				return nil, throughError(name, pi, l, t, err)
			}
			placed[i] = p
			switch {
			case i == len(raw)-1:
			case i == 0:
				view = base.With(p) // a copy: the base's view is shared
			default:
				view.Apply(p)
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
	f, err := b.viewOnce(ctx, baseKey{ref, p.String()}, func(f *viewFuture) {
		f.view, f.err = b.readView(ctx, ref, p)
	})
	if err != nil {
		return nil, err
	}
	return f.view, nil
}

// viewOnce returns the view kept under k, which read fills in (its view
// or win, and err) for the first caller; the others wait for it, or for
// their ctx.
func (b *builder) viewOnce(ctx context.Context, k baseKey, read func(*viewFuture)) (*viewFuture, error) {
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
	if !ok {
		read(f)
		close(f.done)
		return f, f.err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f, f.err
}

// viewFact names the cache's facts about bases' views.
const viewFact = "base-view-v6"

func (b *builder) readView(ctx context.Context, ref string, p platform.Platform) (*tree.View, error) {
	img, err := b.base(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	return b.cachedView(img, viewFact, image.BaseView)
}

// cachedView is what baseView reads of img, kept in the cache under the
// fact name fact by the base's layers.
func (b *builder) cachedView(img v1.Image, fact string, baseView func(img v1.Image, maxBytes, maxWindow int64) (*tree.View, error)) (*tree.View, error) {
	max := b.fetcher.Limits.Unpack.MaxBytes
	if max <= 0 {
		max = archive.DefaultMaxBytes
	}
	// view is the base's view as read, or as decoded from the cache when
	// the check accepts what is stored there: the encoding is only the
	// cache's.
	var view *tree.View
	read := func() (string, error) {
		v, err := baseView(img, max, b.fetcher.Limits.Unpack.MaxWindow)
		if err != nil {
			return "", err
		}
		view = v
		return encodeView(v), nil
	}
	if b.cache == nil {
		_, err := read()
		return view, err
	}
	key, err := image.ViewKey(img)
	if err != nil {
		return nil, err
	}
	valid := func(s string) bool {
		v, err := decodeView(s)
		view = v
		return err == nil
	}
	if _, err := b.cache.ContentFactUpTo(fact, key, maxViewFact, valid, read); err != nil {
		return nil, err
	}
	return view, nil
}

// maxViewFact bounds a base's view as the cache keeps it. A view grows
// with the base: a servercore-sized Windows base of 100,000 directories
// takes some 23 MB, a large Linux one some megabytes, where the cache's
// bound for other facts is 4 MiB: such a base was read whole again, every
// layer decompressed, at every build. The view is in memory whole as it
// is derived, so keeping it costs only disk.
const maxViewFact = 256 << 20

// encodeView is v as the cache keeps it: a line per link ("L PATH
// TARGET", or "K PATH TARGET" for one that leads to a file), per directory ("D MODE UID GID PATH") and per file ("F
// PATH"), paths and targets quoted, sorted, after their sha256, so that a damaged entry is told
// from one this build wrote. A base of 50,000 directories takes tens of
// milliseconds to read back, where JSON took hundreds.
func encodeView(v *tree.View) string {
	lines := make([]string, 0, len(v.Links)+len(v.FileLinks)+len(v.Dirs)+len(v.Files))
	for p, target := range v.Links {
		lines = append(lines, "L "+strconv.Quote(p)+" "+strconv.Quote(target))
	}
	for p, target := range v.FileLinks {
		lines = append(lines, "K "+strconv.Quote(p)+" "+strconv.Quote(target))
	}
	for p, m := range v.Dirs {
		lines = append(lines, fmt.Sprintf("D %d %d %d %s", uint32(m.Mode), m.UID, m.GID, strconv.Quote(p)))
	}
	for p := range v.Files {
		lines = append(lines, "F "+strconv.Quote(p))
	}
	// A Windows directory's descriptor once per distinct one ("S N ATTR
	// RAWSD", numbered in the order of their text), and a line per
	// directory naming its number ("W N PATH"): a base's few descriptors
	// are not written 20,000 times.
	if len(v.WinDirs) > 0 {
		ids := map[*tree.WinDir]int{}
		var sds []*tree.WinDir
		for _, d := range v.WinDirs {
			if _, ok := ids[d]; !ok {
				ids[d] = 0
				sds = append(sds, d)
			}
		}
		slices.SortFunc(sds, func(a, b *tree.WinDir) int {
			return cmp.Or(strings.Compare(a.RawSD, b.RawSD), cmp.Compare(a.Attr, b.Attr))
		})
		for i, d := range sds {
			ids[d] = i
			lines = append(lines, fmt.Sprintf("S %d %d %s", i, d.Attr, d.RawSD))
		}
		for p, d := range v.WinDirs {
			lines = append(lines, fmt.Sprintf("W %d %s", ids[d], strconv.Quote(p)))
		}
	}
	slices.Sort(lines)
	body := strings.Join(lines, "\n")
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:]) + "\n" + body
}

// decodeView reads what encodeView wrote, checking the sum and that every
// path is relative and clean.
func decodeView(s string) (*tree.View, error) {
	sum, body, _ := strings.Cut(s, "\n")
	got := sha256.Sum256([]byte(body))
	if sum != hex.EncodeToString(got[:]) {
		return nil, errors.New("base view: damaged (its sum does not match)")
	}
	v := &tree.View{Links: tree.Links{}, Dirs: map[string]tree.DirMeta{}, Files: map[string]bool{}, FileLinks: tree.Links{}}
	bad := func(line string) (*tree.View, error) {
		return nil, fmt.Errorf("base view: bad line %q", line)
	}
	sds := map[int]*tree.WinDir{}
	winDirs := map[string]int{}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "L", "K":
			ps, ts, ok := strings.Cut(rest, "\" \"")
			if !ok {
				return bad(line)
			}
			p, err1 := strconv.Unquote(ps + "\"")
			target, err2 := strconv.Unquote("\"" + ts)
			if err1 != nil || err2 != nil || !tree.IsClean(p) || target == "" {
				return bad(line)
			}
			if kind == "K" {
				v.FileLinks[p] = target
			} else {
				v.Links[p] = target
			}
		case "D":
			f := strings.SplitN(rest, " ", 4)
			if len(f) != 4 {
				return bad(line)
			}
			mode, err1 := strconv.ParseUint(f[0], 10, 32)
			uid, err2 := strconv.Atoi(f[1])
			gid, err3 := strconv.Atoi(f[2])
			p, err4 := strconv.Unquote(f[3])
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !tree.IsClean(p) {
				return bad(line)
			}
			v.Dirs[p] = tree.DirMeta{Mode: fs.FileMode(mode), UID: uid, GID: gid}
		case "F":
			p, err := strconv.Unquote(rest)
			if err != nil || !tree.IsClean(p) {
				return bad(line)
			}
			v.Files[p] = true
		case "S":
			f := strings.SplitN(rest, " ", 3)
			if len(f) != 3 {
				return bad(line)
			}
			id, err1 := strconv.Atoi(f[0])
			attr, err2 := strconv.ParseUint(f[1], 10, 32)
			if err1 != nil || err2 != nil || f[2] == "" || sds[id] != nil {
				return bad(line)
			}
			sds[id] = &tree.WinDir{RawSD: f[2], Attr: uint32(attr)}
		case "W":
			ids, ps, ok := strings.Cut(rest, " ")
			id, err1 := strconv.Atoi(ids)
			p, err2 := strconv.Unquote(ps)
			if !ok || err1 != nil || err2 != nil || !tree.IsClean(p) {
				return bad(line)
			}
			winDirs[p] = id
		default:
			return bad(line)
		}
	}
	for p, id := range winDirs {
		d := sds[id]
		if d == nil {
			return nil, fmt.Errorf("base view: the directory %q names descriptor %d, which it does not hold", p, id)
		}
		if v.WinDirs == nil {
			v.WinDirs = map[string]*tree.WinDir{}
		}
		v.WinDirs[p] = d
	}
	return v, nil
}

// throughError locates an error of t.Through (t is l's tree as placed)
// at the layer's placement, or, for a directory copied where the image
// holds a link, at the placement that copies it, saying what Docker does
// there.
func throughError(name string, pi *plan.PlatformImage, l *plan.Layer, t *tree.Tree, err error) error {
	var li *tree.LinkInside
	if !errors.As(err, &li) {
		return plan.Errorf(l.Placements[0].Pos, "image %s (%s), layer %s: %v", name, pi.Platform, l.Name, err)
	}
	pm := placerOf(l, t, entryAt(t, li.Path))
	leads := ""
	if li.Leads != "" {
		leads = " (/" + li.Leads + ")"
	}
	var why string
	if pm.NoLinksArchive {
		why = fmt.Sprintf("the archive holds an entry of its own for that directory, and Docker's ADD replaces the link with it (a /%s holding the archive's files alone), which pallet does not do to the image's links; one the archive only implies (its files, without an entry for it) is unpacked through the link: leave the directory's entry out of the archive, make the archive hold it where the link leads%s, or ADD it to another directory", li.At, leads)
	} else {
		why = fmt.Sprintf("Docker's COPY fails there (cannot copy to non-directory) rather than copy through the link: copy that directory with a COPY of its own, to the link or where it leads%s, or leave it out", leads)
	}
	return plan.Errorf(pm.Pos, "image %s (%s), layer %s: %v; %s", name, pi.Platform, l.Name, err, why)
}
