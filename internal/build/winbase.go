package build

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/tree"
)

// windowsView is what a Windows base holds, as far as a destination
// depends on it: its directories, files and links by layer.NTFSKey
// (Windows names are one whatever their case), each with the spelling
// the base gives it (the smallest, of several), and how many of its
// layers are foreign, never downloaded, so that what they hold is not
// known.
type windowsView struct {
	dirs, files map[string]string
	// links are the base's symlinks (reparse points), by key, each to
	// its spelling and its target as written.
	links  map[string]winLink
	unread int
	// sds are the descriptors and attributes of the base's directories
	// that have one (tree.View.WinDirs), by key: a layer that lists one
	// again writes them (layer.Options.BaseDir).
	sds map[string]*tree.WinDir
}

type winLink struct{ spelled, target string }

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

// maxWinLinkHops is how many reparse points Windows follows in one path
// before it gives up (ERROR_CANT_RESOLVE_FILENAME).
const maxWinLinkHops = 63

// maxWinPath is the longest path Windows opens, in UTF-16 units (a
// UNICODE_STRING holds 65,535 bytes); a link's target that makes the
// path longer is not followed (ERROR_FILENAME_EXCED_RANGE). It bounds
// what resolve holds, whatever a hostile base's targets (a PAX record
// holds 1 MiB).
const maxWinPath = 32767

// winTargetFits says whether a link's target fits the reparse point
// go-winio writes for it (its header, flags, and the target twice with
// a NUL each, within MAXIMUM_REPARSE_DATA_BUFFER_SIZE, 16 KiB): one
// that does not was never a link Windows holds.
func winTargetFits(t string) bool {
	return 20+4*(utf16Len(t)+1) <= 16<<10
}

// utf16Len is how many UTF-16 units s takes.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// winKind is what a path of a Windows base is once its links are
// followed.
type winKind int

const (
	winNone winKind = iota // nothing there, or only what a foreign layer may hold
	winDir
	winFile
)

// resolve follows p (clean, relative to C:\) through the base's links as
// Windows does: every component, the last too, compared without case;
// a target read with '\' and '/' as separators, relative to the link's
// directory, or from C:\ when it is rooted (\Windows) or names the drive
// (C:\Windows, \\?\C:\Windows; C: is the container's volume). It
// returns the path reached, spelled as the base spells what it holds,
// what is there, and whether a link was followed. A target that leaves
// the container's C:\ (another drive, a share, above the root), or a
// chain of more than 63 links, cannot be followed: that is an error
// naming the link.
func (v *windowsView) resolve(p string) (spelled string, kind winKind, linked bool, err error) {
	var done []string
	todo := strings.Split(p, "/")
	hops := 0
	kind = winDir
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", 0, linked, fmt.Errorf("/%s goes above C:\\", p)
			}
			done, kind = done[:len(done)-1], winDir
			continue
		}
		if kind == winFile {
			return strings.Join(append(done, c), "/"), winNone, linked, nil // a file is no directory to go through
		}
		cur := strings.Join(append(done, c), "/")
		k := layer.NTFSKey(cur)
		if d, ok := v.dirs[k]; ok {
			done, kind = strings.Split(d, "/"), winDir
			continue
		}
		if l, ok := v.links[k]; ok {
			if hops++; hops > maxWinLinkHops {
				return "", 0, linked, fmt.Errorf("/%s: more than %d links to follow (a loop?)", p, maxWinLinkHops)
			}
			if !winTargetFits(l.target) {
				return "", 0, linked, fmt.Errorf("the link /%s has a target of %d UTF-16 units, more than a reparse point holds", l.spelled, utf16Len(l.target))
			}
			rooted, comps, ok := winTarget(l.target)
			if !ok {
				return "", 0, linked, fmt.Errorf("the link /%s -> %s leads outside the container's C:\\", l.spelled, l.target)
			}
			linked = true
			if rooted {
				done = nil
			} else {
				done = done[:len(done):len(done)]
			}
			kind = winDir
			todo = append(comps, todo...)
			n := len(done) + len(todo)
			for _, c := range done {
				n += utf16Len(c)
			}
			for _, c := range todo {
				if n += utf16Len(c); n > maxWinPath {
					return "", 0, linked, fmt.Errorf("/%s: through the link /%s, a path longer than Windows' %d characters", p, l.spelled, maxWinPath)
				}
			}
			continue
		}
		if f, ok := v.files[k]; ok {
			done, kind = strings.Split(f, "/"), winFile
			continue
		}
		if s, ok := systemDirs[k]; ok && v.unread > 0 {
			done, kind = strings.Split(s, "/"), winDir
			continue
		}
		done, kind = append(done, c), winNone
		// What is not there holds nothing: the rest is taken as written.
		for _, c := range todo {
			switch c {
			case "", ".":
			case "..":
				return "", 0, linked, fmt.Errorf("/%s: .. below a name the base does not hold", p)
			default:
				done = append(done, c)
			}
		}
		todo = nil
	}
	return strings.Join(done, "/"), kind, linked, nil
}

// winTarget reads a link's target as Windows does (go-winio's
// EncodeReparsePoint writes it as the tar gives it; C:\ and \\?\C:\ are
// absolute, anything else relative, \ rooted at the link's volume): its
// components, '\' and '/' separating, and whether it starts at C:\.
// ok is false for a target outside C:\: another drive, a share or
// device (\\server, \\.\), a drive-relative C:name, or none.
func winTarget(t string) (rooted bool, comps []string, ok bool) {
	s := strings.ReplaceAll(t, `\`, "/")
	if rest, found := strings.CutPrefix(s, "//?/"); found {
		s = rest
		if len(s) < 2 || s[1] != ':' {
			return false, nil, false
		}
	} else if strings.HasPrefix(s, "//") {
		return false, nil, false
	}
	if len(s) >= 2 && s[1] == ':' {
		if s[0] != 'C' && s[0] != 'c' || !strings.HasPrefix(s[2:], "/") {
			return false, nil, false
		}
		s = s[2:]
	}
	if s == "" {
		return false, nil, false
	}
	return strings.HasPrefix(s, "/"), strings.Split(s, "/"), true
}

// at says what the base holds at p (clean, relative to C:\), through its
// links: a directory, under its own spelling, or not; err says a link on
// the way cannot be followed. Of what the base's foreign layers hold,
// never downloaded (a servercore base is gigabytes), only the system's
// directories are known (systemDirs), so that a file copied to
// C:\Windows\System32 does not hide it: any other name is taken for what
// the line names, a file, as it is on a base pallet reads (COPY out.exe
// C:\app\svc.exe renames, as it commonly does).
func (v *windowsView) at(p string) (spelled string, dir bool, err error) {
	if p == "" || p == "." {
		return "", false, nil
	}
	s, kind, _, err := v.resolve(p)
	if err != nil {
		return "", false, err
	}
	if kind != winDir {
		return "", false, nil
	}
	return s, true, nil
}

func newWindowsView(t *tree.View, unread int) *windowsView {
	v := &windowsView{dirs: map[string]string{}, files: map[string]string{}, links: map[string]winLink{}, unread: unread}
	if t == nil {
		return v
	}
	// A read base's view holds each Windows name once (its first
	// layer's spelling, for a directory, as NTFS keeps it); should it
	// spell one apart, the smallest is taken, never the one the maps'
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
	// The descriptor of the spelling kept, as the rest of the view's.
	for k, p := range v.dirs {
		if d := t.WinDirs[p]; d != nil {
			if v.sds == nil {
				v.sds = map[string]*tree.WinDir{}
			}
			v.sds[k] = d
		}
	}
	for p := range t.Files {
		spell(v.files, p, p)
	}
	for p := range t.FileLinks {
		spell(v.files, p, p)
	}
	// The links, which Windows follows wherever they are on a path
	// (resolve). A directory spelled like one wins, then a file, as
	// before a link; of links spelled apart, the smallest spelling.
	for p, target := range t.Links {
		k := layer.NTFSKey(p)
		if _, ok := v.dirs[k]; ok {
			continue
		}
		if _, ok := v.files[k]; ok {
			continue
		}
		if old, ok := v.links[k]; !ok || p < old.spelled {
			v.links[k] = winLink{p, target}
		}
	}
	return v
}

// builtinWindowsView is the view of a built-in Windows base, whose layer
// pallet writes: its directories are those its files are in, which the
// tree's entries list.
func builtinWindowsView(t *tree.Tree) *windowsView {
	v := &windowsView{dirs: map[string]string{}, files: map[string]string{}, links: map[string]winLink{}}
	for e := range t.All() {
		if e.Kind == tree.Dir {
			v.dirs[layer.NTFSKey(e.Path)] = e.Path
		} else {
			v.files[layer.NTFSKey(e.Path)] = e.Path
		}
	}
	return v
}

// windowsViews are the views of pi's Windows bases, in its order.
func (b *builder) windowsViews(ctx context.Context, name string, pi *plan.PlatformImage) ([]*windowsView, error) {
	return eachBase(name, pi, func(ref string) (*windowsView, error) { return b.windowsViewOf(ctx, ref, pi.Platform) })
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
// v6 holds the directories' descriptors: a v5 fact, without them, would
// be taken for a base that has none. v7 holds those a layer gives as
// SDDL only (MSWINDOWS.sd), which a v6 fact left out.
const windowsViewFact = "base-view-windows-v7"

// windowsBaseClash refuses a layer of pi that puts a file or link where a
// base holds a directory, or a directory where it holds a file, names
// compared as NTFS does: on Windows the later hides the earlier and all
// it holds (a file named C:\Windows\System32 hides System32), where
// Docker's COPY puts a file into the directory, and fails on a file in
// the way. Of what the foreign layers of a base hold, only the system's
// directories are known (systemDirs).
func (b *builder) windowsBaseClash(ctx context.Context, name string, pi *plan.PlatformImage, trees []*tree.Tree) error {
	views, err := b.windowsViews(ctx, name, pi)
	if err != nil {
		return err
	}
	for j, v := range views {
		ref := pi.Bases[j]
		if len(v.dirs) == 0 && len(v.files) == 0 && len(v.links) == 0 && v.unread == 0 {
			continue
		}
		warned := map[string]bool{}
		for i, t := range trees {
			l := pi.Layers[i]
			var listed []string
			var first tree.Entry
			for _, e := range t.Entries() {
				if err := v.clash(ref, e); err != nil {
					return plan.Errorf(placerOf(l, t, e).Pos, "image %s (%s), layer %s: %v", name, pi.Platform, l.Name, err)
				}
				if d := v.unreadSystemDir(e); d != "" && !warned[d] {
					if len(listed) == 0 {
						first = e
					}
					warned[d] = true
					listed = append(listed, "/"+d)
				}
			}
			if len(listed) > 0 {
				b.opt.Progress.Warn("%s: image %s (%s), layer %s: the layer lists %s again, with pallet's descriptor for the directories it makes (Users may add files to them), where the base %s holds them in a foreign layer, which pallet does not read: their own descriptors cannot be kept, and Windows takes a directory's from the top layer that lists it; place the files elsewhere (C:\\app) unless that is meant", placerOf(l, t, first).Pos, name, pi.Platform, l.Name, strings.Join(listed, ", "), ref)
			}
		}
	}
	return nil
}

// unreadSystemDir is e's path, spelled as Windows does, when e is one of
// the system's directories (systemDirs) that the base's foreign layers
// hold, and whose descriptor its view therefore lacks: the layer lists
// it again with pallet's own (BaseDir gives none); "" otherwise.
func (v *windowsView) unreadSystemDir(e tree.Entry) string {
	if v.unread == 0 || e.Kind != tree.Dir {
		return ""
	}
	k := layer.NTFSKey(e.Path)
	if d, ok := systemDirs[k]; ok && v.sds[k] == nil {
		return d
	}
	return ""
}

// clash is what Windows would make of e, written over the base ref whose
// view is v, that is not what it says (windowsBaseClash), or nil.
func (v *windowsView) clash(ref string, e tree.Entry) error {
	// The layer writes each directory on e's way, e too when it is one:
	// over a link the base holds there, Windows replaces the link (the
	// importer does not follow it), and what is placed below never
	// reaches where it leads.
	for q := e.Path; q != "."; q = path.Dir(q) {
		if q == e.Path && e.Kind != tree.Dir {
			continue
		}
		if lk, ok := v.links[layer.NTFSKey(q)]; ok {
			to := ""
			if s, kind, _, err := v.resolve(q); err == nil && kind == winDir {
				to = fmt.Sprintf(": place it under /%s, where the link leads", s)
			} else if err != nil {
				to = fmt.Sprintf(" (%v)", err)
			}
			return fmt.Errorf("/%s would be written as a directory where the base %s holds the link /%s -> %s, which Windows would replace with it: nothing placed there would reach where the link leads%s", e.Path, ref, lk.spelled, lk.target, to)
		}
	}
	// A link at e's own path that leads outside the image is only
	// replaced.
	d, isDir, _ := v.at(e.Path)
	switch {
	case e.Kind != tree.Dir && isDir:
		return fmt.Errorf("/%s would be a file where the base %s holds the directory /%s, which it would hide on Windows with all it holds; place the file into the directory (a destination ending with /), or under another name", e.Path, ref, d)
	case e.Kind == tree.Dir && v.files[layer.NTFSKey(e.Path)] != "":
		return fmt.Errorf("/%s would be a directory where the base %s holds a file, which it would replace (Docker's COPY fails there: not a directory); place it elsewhere", e.Path, ref)
	}
	return nil
}

// warnWindowsAccess says, once per placement, that the owner and mode it
// sets do nothing on the Windows platforms it is made on. A Windows layer
// still carries them in its tar headers, as BuildKit's does, but Windows
// reads only the security descriptor, which lets Users read and execute
// whatever the mode. The front ends refuse what can only mislead (a
// recipe's placement made only on Windows); this is the rest: a placement
// made on Linux too, and a Dockerfile's COPY --chown or --chmod, which
// BuildKit accepts on Windows and does not apply either.
func warnWindowsAccess(p *plan.Plan, rep progress.Reporter) {
	type use struct {
		image     string
		pm        plan.Placement
		platforms []string
	}
	var uses []*use
	// By line, not column: a COPY of several sources is several
	// placements, one instruction.
	byLine := map[plan.Pos]*use{}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			if !pi.Platform.IsWindows() {
				continue
			}
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					if pm.UID == 0 && pm.GID == 0 && pm.Mode == 0 {
						continue
					}
					line := plan.Pos{File: pm.Pos.File, Line: pm.Pos.Line}
					u := byLine[line]
					if u == nil {
						u = &use{image: im.Name, pm: pm}
						byLine[line] = u
						uses = append(uses, u)
					}
					if !slices.Contains(u.platforms, pi.Platform.String()) {
						u.platforms = append(u.platforms, pi.Platform.String())
					}
				}
			}
		}
	}
	for _, u := range uses {
		var set []string
		if u.pm.UID != 0 || u.pm.GID != 0 {
			set = append(set, fmt.Sprintf("owner %d:%d", u.pm.UID, u.pm.GID))
		}
		if u.pm.Mode != 0 {
			set = append(set, fmt.Sprintf("mode %04o", u.pm.Mode.Perm()))
		}
		rep.Warn("%s: image %s: ignored on %s: %s; Windows reads no owner or mode from a layer, access is the security descriptor pallet writes (Users may read and execute)", u.pm.Pos, u.image, strings.Join(u.platforms, ", "), strings.Join(set, " and "))
	}
}
