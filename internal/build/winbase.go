package build

import (
	"context"
	"fmt"

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

// systemDirs are directories every Windows OS image holds (nanoserver's
// and servercore's foreign layers among them), spelled as Windows does.
var systemDirs = func() map[string]string {
	m := map[string]string{}
	for _, d := range []string{"Windows", "Windows/System32", "Windows/System32/config", "Windows/System32/drivers",
		"Windows/System32/drivers/etc", "Windows/Temp", "Program Files", "ProgramData", "Users", "Users/Public"} {
		m[layer.NTFSKey(d)] = d
	}
	return m
}()

// at says what the base holds at p (clean, relative to C:\): a
// directory, under its own spelling, or a file. Of what the base's
// foreign layers hold, never downloaded (a servercore base is
// gigabytes), only the system's directories are known (systemDirs), so
// that a file copied to C:\Windows\System32 does not hide it: any other
// name is taken for what the line names, a file, as it is on a base
// pallet reads (COPY out.exe C:\app\svc.exe renames, as it commonly
// does).
func (v *windowsView) at(p string) (spelled string, dir bool) {
	k := layer.NTFSKey(p)
	if s, ok := v.dirs[k]; ok {
		return s, true
	}
	if v.files[k] {
		return "", false
	}
	if s, ok := systemDirs[k]; ok && v.unread > 0 {
		return s, true
	}
	return "", false
}

func newWindowsView(t *tree.View, unread int) *windowsView {
	v := &windowsView{dirs: map[string]string{}, files: map[string]bool{}, unread: unread}
	if t == nil {
		return v
	}
	// The view's names are case-sensitive, and may spell one Windows
	// name apart (pallet merges directories spelled apart across
	// layers): which spelling NTFS kept, the first layer's, is not
	// known here, so the smallest is taken, never the one the maps'
	// order gives, which would change a destination, and the layer's
	// digest, from one build to the next.
	spell := func(m map[string]string, p, s string) {
		k := layer.NTFSKey(p)
		if old, ok := m[k]; !ok || s < old {
			m[k] = s
		}
	}
	for p := range t.Dirs {
		spell(v.dirs, p, p)
	}
	for p := range t.Files {
		v.files[layer.NTFSKey(p)] = true
	}
	for p := range t.FileLinks {
		v.files[layer.NTFSKey(p)] = true
	}
	// A link to a directory: a file copied there goes where it leads,
	// as BuildKit's copy resolves its destination. A directory spelled
	// like it wins.
	links := map[string]string{}
	for p := range t.Links {
		if r, err := t.Links.Resolve(p); err == nil {
			if _, ok := t.Dirs[r]; ok {
				spell(links, p, r)
			}
		}
	}
	for k, r := range links {
		if _, ok := v.dirs[k]; !ok {
			v.dirs[k] = r
		}
	}
	return v
}

// builtinWindowsView is the view of a built-in Windows base, whose layer
// pallet writes: its directories are those its files are in, which the
// tree's entries list.
func builtinWindowsView(t *tree.Tree) *windowsView {
	v := &windowsView{dirs: map[string]string{}, files: map[string]bool{}}
	for e := range t.All() {
		if e.Kind == tree.Dir {
			v.dirs[layer.NTFSKey(e.Path)] = e.Path
		} else {
			v.files[layer.NTFSKey(e.Path)] = true
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
	f, err := b.viewOnce(ctx, baseKey{ref, "windows view " + p.String()}, func(f *viewFuture) {
		f.win, f.err = b.readWindowsView(ctx, ref, p)
	})
	if err != nil {
		return nil, err
	}
	return f.win, nil
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
const windowsViewFact = "base-view-windows-v2"

// windowsBaseClash refuses a layer of pi that puts a file or link where a
// base holds a directory, or a directory where it holds a file, names
// compared as NTFS does: on Windows the later hides the earlier and all
// it holds (a file named C:\Windows\System32 hides System32), where
// Docker's COPY puts a file into the directory, and fails on a file in
// the way. Of what the foreign layers of a base hold, only the system's
// directories are known (systemDirs).
func (b *builder) windowsBaseClash(ctx context.Context, name string, pi *plan.PlatformImage, trees []*tree.Tree) error {
	for _, ref := range pi.Bases {
		v, err := b.windowsViewOf(ctx, ref, pi.Platform)
		if err != nil {
			return plan.Wrap(pi.BasePos, fmt.Errorf("image %s (%s): base %s: reading what it holds: %w", name, pi.Platform, ref, err))
		}
		if len(v.dirs) == 0 && len(v.files) == 0 && v.unread == 0 {
			continue
		}
		for i, t := range trees {
			for _, e := range t.Entries() {
				d, isDir := v.at(e.Path)
				switch {
				case e.Kind != tree.Dir && isDir:
					l := pi.Layers[i]
					return plan.Errorf(placementOf(l, e.Path).Pos, "image %s (%s), layer %s: /%s would be a file where the base %s holds the directory /%s, which it would hide on Windows with all it holds; place the file into the directory (a destination ending with /), or under another name", name, pi.Platform, l.Name, e.Path, ref, d)
				case e.Kind == tree.Dir && v.files[layer.NTFSKey(e.Path)]:
					l := pi.Layers[i]
					return plan.Errorf(placementOf(l, e.Path).Pos, "image %s (%s), layer %s: /%s would be a directory where the base %s holds a file, which it would replace (Docker's COPY fails there: not a directory); place it elsewhere", name, pi.Platform, l.Name, e.Path, ref)
				}
			}
		}
	}
	return nil
}
