package build

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/exe"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// loaderNeed is a dynamically linked executable placed in an image and
// what it needs there to start: its loader (PT_INTERP) and shared
// libraries.
type loaderNeed struct {
	path string
	exe.Dynamic
}

// checkExecutables refuses an executable built for another platform than
// the image's, before any layer is written, and returns the dynamically
// linked ones with what they need, and the paths of the Linux programs
// placed without an execute bit (a release binary downloaded as it is, a
// file curl wrote: 0644), which no runtime would start. A file that
// passed for this platform once is not read again while it is untouched.
func (b *builder) checkExecutables(res *artifact.Result, place tree.Placement, p platform.Platform) (needs []loaderNeed, unrunnable []tree.Entry, err error) {
	placed := tree.New()
	if err := placed.Place(res.Tree, place); err != nil {
		return nil, nil, err
	}
	fact := "exe-v2 " + p.OS + "/" + p.Arch
	for e := range placed.All() {
		if e.Kind != tree.File {
			continue
		}
		got, err := b.memo(e.Source, e.Stamp, fact, func(path string) (string, error) {
			info, err := exe.CheckDynamic(path, "/"+e.Path, p.OS, p.Arch)
			if err != nil || !info.Program && info.Interp == "" {
				return "ok", err
			}
			j, err := json.Marshal(info)
			return "ok " + string(j), err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("artifact %s: %w (set check: false on the artifact to allow it)", res.Record.Name, err)
		}
		j, ok := strings.CutPrefix(got, "ok ")
		if !ok {
			continue
		}
		var info exe.Info
		if json.Unmarshal([]byte(j), &info) != nil {
			continue
		}
		if info.Interp != "" {
			needs = append(needs, loaderNeed{path: "/" + e.Path, Dynamic: info.Dynamic})
		}
		if info.Program && !p.IsWindows() && e.Mode&0o111 == 0 {
			unrunnable = append(unrunnable, e)
		}
	}
	return needs, unrunnable, nil
}

// warnMissingLoaders warns of dynamically linked executables whose
// loader neither the image's layers nor its base provide: the image
// builds, and fails at its first start with "no such file or directory"
// (a cgo binary on scratch, or on a base of another C library: musl's
// loader is not glibc's). An executable whose loader is there is checked
// for the shared libraries it needs (see libLookup.missing): one the
// image lacks fails the start too (runc without libseccomp.so.2).
func (b *builder) warnMissingLoaders(ctx context.Context, name string, pi *plan.PlatformImage, trees []*tree.Tree) {
	b.mu.Lock()
	needs := b.loaders[pi]
	b.mu.Unlock()
	if len(needs) == 0 {
		return
	}
	// In the layers, loaders are looked for by name anywhere: the path
	// may run through links the layers make (lib64 -> usr/lib64), and a
	// warning that cries wolf on a merged-/usr root file system is worse
	// than one that misses a misplaced loader.
	names := map[string]bool{}
	for _, n := range needs {
		names[path.Base(n.Interp)] = false
	}
	placed := newLayerFiles(trees)
	for p := range placed.files {
		if _, ok := names[path.Base(p)]; ok {
			names[path.Base(p)] = true
		}
	}
	views, err := b.baseViews(ctx, name, pi)
	if err != nil {
		return // said where the layers are placed on the bases
	}
	libraryPath := ""
	for _, kv := range pi.Config.Env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			libraryPath = v
		}
	}
	for i, ref := range pi.Bases {
		if ref != image.Scratch && views[i] == nil {
			continue // a built-in base pallet does not read this way
		}
		var libs *libLookup
		for _, n := range needs {
			if names[path.Base(n.Interp)] || viewHasFile(views[i], n.Interp) {
				if libs == nil {
					libs = newLibLookup(views[i], placed, libraryPath)
				}
				if missing := libs.missing(n, pi.Platform); len(missing) > 0 {
					on := "the base " + ref
					if ref == image.Scratch {
						on = "scratch"
					}
					b.opt.Progress.Warn("%s: image %s (%s): %s needs the shared %s %s, which neither %s nor the image's layers hold where its loader %s looks: it will not start (error while loading shared libraries); install %s in the base, place %s in a directory the loader searches (or one the executable's run path names), or link it statically", pi.BasePos, name, pi.Platform, n.path, plural(len(missing), "library", "libraries"), strings.Join(missing, ", "), on, n.Interp, plural(len(missing), "it", "them"), plural(len(missing), "it", "them"))
				}
				continue
			}
			if ref == image.Scratch {
				b.opt.Progress.Warn("%s: image %s (%s): %s is dynamically linked and needs %s, which nothing in the image provides on scratch: it will not start; link it statically (CGO_ENABLED=0, or -extldflags -static) or build on a base with its C library", pi.BasePos, name, pi.Platform, n.path, n.Interp)
			} else {
				b.opt.Progress.Warn("%s: image %s (%s): %s is dynamically linked and needs %s, which neither the base %s nor the image's layers hold: it will not start; build it for the base's C library (the base distro's compiler, cc:), link it statically, or use a base that has it", pi.BasePos, name, pi.Platform, n.path, n.Interp, ref)
			}
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// viewHasFile says whether the base whose view is v holds a file (or a
// link to one) at the absolute path p, through its links.
func viewHasFile(v *tree.View, p string) bool {
	if v == nil {
		return false
	}
	dir, err := v.Links.Resolve(strings.Trim(path.Dir(path.Clean("/"+p)), "/"))
	if err != nil {
		return false
	}
	at := path.Join(dir, path.Base(p))
	if dir == "." {
		at = path.Base(p)
	}
	_, link := v.FileLinks[at]
	return v.Files[at] || link
}
