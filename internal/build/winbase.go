package build

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// windowsView is what a Windows base holds, as far as a destination
// depends on it: its directories and files by layer.NTFSKey (Windows
// names are one whatever their case), each with the spelling the base
// gives it, and how many of its layers are foreign, never downloaded,
// so that what they hold is not known.
type windowsView struct {
	dirs   map[string]string
	files  map[string]bool
	unread int
}

// at says what the base holds at p (clean, relative to C:\): a
// directory, under its own spelling, or a file; known is false where a
// foreign layer may hold either.
func (v *windowsView) at(p string) (spelled string, dir, known bool) {
	k := layer.NTFSKey(p)
	if s, ok := v.dirs[k]; ok {
		return s, true, true
	}
	if v.files[k] {
		return "", false, true
	}
	return "", false, v.unread == 0
}

func newWindowsView(t *tree.View, unread int) *windowsView {
	v := &windowsView{dirs: map[string]string{}, files: map[string]bool{}, unread: unread}
	if t == nil {
		return v
	}
	for p := range t.Dirs {
		v.dirs[layer.NTFSKey(p)] = p
	}
	for p := range t.Files {
		v.files[layer.NTFSKey(p)] = true
	}
	for p := range t.FileLinks {
		v.files[layer.NTFSKey(p)] = true
	}
	for p := range t.Links {
		// A link to a directory: a file copied there goes where it
		// leads, as BuildKit's copy resolves its destination.
		if r, err := t.Links.Resolve(p); err == nil {
			if _, ok := t.Dirs[r]; ok {
				v.dirs[layer.NTFSKey(p)] = r
			}
		}
	}
	return v
}

// builtinWindowsView is the view of a built-in Windows base, whose layer
// pallet writes: its directories are those its files are in.
func builtinWindowsView(t *tree.Tree) *windowsView {
	v := &windowsView{dirs: map[string]string{}, files: map[string]bool{}}
	for _, e := range t.Entries() {
		if e.Kind == tree.Dir {
			v.dirs[layer.NTFSKey(e.Path)] = e.Path
		} else {
			v.files[layer.NTFSKey(e.Path)] = true
		}
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			v.dirs[layer.NTFSKey(d)] = d
		}
	}
	return v
}

// windowsViewOf returns the view of the Windows base ref for p, read once
// per build and kept in the cache by the base's layers, as a Linux
// base's is (viewOf).
func (b *builder) windowsViewOf(ctx context.Context, ref string, p platform.Platform) (*windowsView, error) {
	if t := image.BuiltinBaseTree(ref); t != nil {
		return builtinWindowsView(t), nil
	}
	if image.IsBuiltin(ref) {
		return &windowsView{}, nil
	}
	k := baseKey{ref, "windows view " + p.String()}
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
		f.win, f.err = b.readWindowsView(ctx, ref, p)
		close(f.done)
		return f.win, f.err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f.win, f.err
}

func (b *builder) readWindowsView(ctx context.Context, ref string, p platform.Platform) (*windowsView, error) {
	img, err := b.base(ctx, ref, p)
	if err != nil {
		return nil, err
	}
	unread := image.ForeignLayers(img)
	t, err := b.cachedView(img, windowsViewFact, image.WindowsBaseView)
	if err != nil {
		return nil, err
	}
	return newWindowsView(t, unread), nil
}

// windowsViewFact names the cache's facts about Windows bases' views.
const windowsViewFact = "base-view-windows-v1"

// windowsDestination is destination for a Windows image: a file copied
// to a name the base holds a directory at, whatever its case, goes into
// it, under the directory's own spelling. Where a foreign layer of the
// base may hold a directory, it is refused rather than written over one
// (a file named System32 hides the whole directory on Windows), unless
// the destination ends with the file's own name: pallet does not
// download foreign layers (a servercore base is gigabytes) to answer a
// question the line answers.
func (b *builder) windowsDestination(ctx context.Context, name string, pi *plan.PlatformImage, pm plan.Placement) (string, error) {
	if pm.IntoDirAs == "" && pm.DirNeeded == "" {
		return pm.Dest, nil
	}
	if n := pm.IntoDirAs; pm.IntoDirAs != "" && (n == "." || n == ".." || strings.ContainsAny(n, "/\\")) {
		return "", plan.Errorf(pm.Pos, "image %s (%s): %q is not a file name", name, pi.Platform, n)
	}
	dest := pm.Dest
	if pm.DirNeeded != "" {
		dest = pm.DirNeeded
	}
	p := strings.Trim(path.Clean("/"+dest), "/")
	into, spelled := false, ""
	for i, ref := range pi.Bases {
		v, err := b.windowsViewOf(ctx, ref, pi.Platform)
		if err != nil {
			return "", plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): base %s: reading what it holds: %w", name, pi.Platform, ref, err))
		}
		s, dir, known := v.at(p)
		if !known && pm.DirNeeded == "" && layer.NTFSKey(path.Base(p)) == layer.NTFSKey(pm.IntoDirAs) {
			// COPY app.exe C:\app\app.exe names the file itself: a
			// directory of that name would make it C:\app\app.exe\app.exe,
			// which is not what the line asks for. Written at its name.
			s, dir, known = "", false, true
		}
		if !known {
			return "", plan.Errorf(pm.Pos, "image %s (%s): %s: the base %s may hold a directory there: %d of its layers are foreign, which pallet does not download, and the others hold nothing there; Docker copies a file to a directory's name into the directory, and a file written at that name would hide the directory on Windows, so pallet does not guess: end the destination with \\ to copy into a directory, or name the file with its own name (COPY app.exe C:\\app\\app.exe), renaming it in the build context if it is to have another", name, pi.Platform, dest, ref, v.unread)
		}
		if i > 0 && dir != into {
			return "", plan.Errorf(pm.Pos, "image %s (%s): bases %s and %s differ at %s: one holds a directory there, so the file goes into it on one base and replaces nothing on the other; end the destination with \\ or name the file", name, pi.Platform, pi.Bases[0], ref, dest)
		}
		if i == 0 {
			into, spelled = dir, s
		}
	}
	if pm.DirNeeded != "" && !into {
		return "", plan.Errorf(pm.Pos, "image %s (%s): %s: the base %s holds no directory there, so BuildKit copies the sources one after another: the first, a file, is written at %s, and a directory copied there after it fails (cannot copy to non-directory); end the destination with \\ to copy them into a directory, or copy the directory first", name, pi.Platform, pm.DirNeeded, pi.Bases[0], pm.DirNeeded)
	}
	if pm.IntoDirAs == "" {
		return pm.Dest, nil
	}
	if !into {
		return pm.Dest, nil
	}
	return path.Join("/", spelled, pm.IntoDirAs), nil
}

// windowsBaseClash refuses a layer of pi that puts a file or link where a
// base holds a directory, or a directory where it holds a file, names
// compared as NTFS does: on Windows the later hides the earlier and all
// it holds (a file named C:\Windows\System32 hides System32), where
// Docker's COPY puts a file into the directory, and fails on a file in
// the way. What the foreign layers of a base hold is not known, and not
// checked.
func (b *builder) windowsBaseClash(ctx context.Context, name string, pi *plan.PlatformImage, trees []*tree.Tree) error {
	for _, ref := range pi.Bases {
		v, err := b.windowsViewOf(ctx, ref, pi.Platform)
		if err != nil {
			return plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): base %s: reading what it holds: %w", name, pi.Platform, ref, err))
		}
		if len(v.dirs) == 0 && len(v.files) == 0 {
			continue
		}
		for i, t := range trees {
			for _, e := range t.Entries() {
				k := layer.NTFSKey(e.Path)
				d, isDir := v.dirs[k]
				switch {
				case e.Kind != tree.Dir && isDir:
					l := pi.Layers[i]
					return plan.Errorf(placementOf(l, e.Path).Pos, "image %s (%s), layer %s: /%s would be a file where the base %s holds the directory /%s, which it would hide on Windows with all it holds; place the file into the directory (a destination ending with /), or under another name", name, pi.Platform, l.Name, e.Path, ref, d)
				case e.Kind == tree.Dir && v.files[k]:
					l := pi.Layers[i]
					return plan.Errorf(placementOf(l, e.Path).Pos, "image %s (%s), layer %s: /%s would be a directory where the base %s holds a file, which it would replace (Docker's COPY fails there: not a directory); place it elsewhere", name, pi.Platform, l.Name, e.Path, ref)
				}
			}
		}
	}
	return nil
}
