package build

import (
	"path"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// layerFiles are the files and links an image's own layers place, by
// clean path without the leading slash.
type layerFiles struct {
	files map[string]bool
	links tree.Links
}

func newLayerFiles(trees []*tree.Tree) layerFiles {
	l := layerFiles{files: map[string]bool{}, links: tree.Links{}}
	for _, t := range trees {
		for e := range t.All() {
			switch e.Kind {
			case tree.File:
				l.files[e.Path] = true
				delete(l.links, e.Path)
			case tree.Symlink:
				l.links[e.Path] = e.Link
				delete(l.files, e.Path)
			}
		}
	}
	return l
}

// isMusl says whether loader is musl's (/lib/ld-musl-x86_64.so.1).
func isMusl(loader string) bool {
	return strings.HasPrefix(path.Base(loader), "ld-musl-")
}

// libraryDirs are the directories the loader of n looks in for the
// libraries n needs, in its order, as clean paths without the leading
// slash; ok is false when that cannot be known here (a musl base's
// /etc/ld-musl-*.path, whose content a base's view does not hold, or a
// run path naming what is not expanded here).
//
// The run path (DT_RUNPATH, else DT_RPATH) comes first, $ORIGIN the
// executable's directory in the image. Then glibc's loader reads its
// cache, which ldconfig made from /etc/ld.so.conf; a base's view holds
// the names of its files, not what they hold, so the cache's directories
// are taken to be those Debian, Ubuntu and Fedora configure: the
// multiarch directories of the machine and /usr/local/lib. Its defaults
// follow: /lib and /usr/lib, and /lib64 and /usr/lib64 where the
// machine's libraries are there. musl's loader has no cache: /lib,
// /usr/local/lib and /usr/lib, unless the base has an
// /etc/ld-musl-ARCH.path to say otherwise.
//
// muslPath says whether the base or the layers hold such a file;
// libraryPath is the image's LD_LIBRARY_PATH, which both loaders search
// too (glibc's between DT_RPATH and DT_RUNPATH, musl's before both).
func libraryDirs(n loaderNeed, pf platform.Platform, muslPath bool, libraryPath string) (dirs []string, ok bool) {
	rp := n.RunPath
	if rp == "" {
		rp = n.RPath
	}
	if libraryPath != "" {
		rp = libraryPath + ":" + rp
	}
	origin := path.Dir(path.Clean("/" + n.path))
	for d := range strings.SplitSeq(rp, ":") {
		if d == "" {
			continue // the working directory, unknown here
		}
		alts := []string{d}
		if strings.Contains(d, "$LIB") || strings.Contains(d, "${LIB}") {
			alts = nil
			for _, lib := range []string{"lib", "lib64"} {
				alts = append(alts, strings.NewReplacer("${LIB}", lib, "$LIB", lib).Replace(d))
			}
		}
		for _, a := range alts {
			a = strings.NewReplacer("${ORIGIN}", origin, "$ORIGIN", origin).Replace(a)
			if pl := pf.ELFPlatform(); pl != "" {
				// Else left, and the run path is not known (below).
				a = strings.NewReplacer("${PLATFORM}", pl, "$PLATFORM", pl).Replace(a)
			}
			if strings.Contains(a, "$") || !strings.HasPrefix(a, "/") {
				return nil, false
			}
			dirs = append(dirs, a)
		}
	}
	if isMusl(n.Interp) {
		if muslPath {
			return nil, false
		}
		dirs = append(dirs, "/lib", "/usr/local/lib", "/usr/lib")
	} else {
		if t := pf.Multiarch(); t != "" {
			dirs = append(dirs, "/lib/"+t, "/usr/lib/"+t, "/usr/local/lib/"+t)
		}
		dirs = append(dirs, "/usr/local/lib", "/lib", "/usr/lib", "/lib64", "/usr/lib64")
	}
	for i, d := range dirs {
		dirs[i] = strings.Trim(path.Clean(d), "/")
	}
	return dirs, true
}

// isMuslPath says whether p is musl's loader's search path file,
// etc/ld-musl-ARCH.path.
func isMuslPath(p string) bool {
	d, f := path.Split(p)
	return d == "etc/" && strings.HasPrefix(f, "ld-musl-") && strings.HasSuffix(f, ".path")
}

// libLookup answers, for one base's view and the image's layers, whether
// a path holds a file through the links of both. Made once per base: an
// image holds thousands of executables, a base thousands of links.
type libLookup struct {
	links    tree.Links
	files    map[string]bool
	placed   layerFiles
	muslPath bool // an etc/ld-musl-ARCH.path in the base or the layers
	// libraryPath is the image's LD_LIBRARY_PATH (its config's env).
	libraryPath string
}

func newLibLookup(v *tree.View, placed layerFiles, libraryPath string) *libLookup {
	lk := &libLookup{placed: placed, libraryPath: libraryPath}
	if v != nil {
		lk.links = make(tree.Links, len(v.Links)+len(v.FileLinks)+len(placed.links))
		for p, t := range v.Links {
			lk.links[p] = t
		}
		for p, t := range v.FileLinks {
			lk.links[p] = t
		}
		lk.files = v.Files
		for f := range v.Files {
			lk.muslPath = lk.muslPath || isMuslPath(f)
		}
		for f := range v.FileLinks {
			lk.muslPath = lk.muslPath || isMuslPath(f)
		}
	} else {
		lk.links = make(tree.Links, len(placed.links))
	}
	for p, t := range placed.links {
		lk.links[p] = t
	}
	for p := range placed.files {
		lk.muslPath = lk.muslPath || isMuslPath(p)
	}
	return lk
}

// has says whether the image holds a file at p, a clean path without the
// leading slash.
func (lk *libLookup) has(p string) bool {
	if lk.placed.files[p] {
		return true
	}
	r, err := lk.links.Resolve(p)
	return err == nil && (lk.files[r] || lk.placed.files[r])
}

// missing are the shared libraries n needs (DT_NEEDED) that neither the
// base nor the image's layers hold in the directories its loader looks
// in, through the links of both: a library placed at a soname that is a
// link to the file (libseccomp.so.2 -> libseccomp.so.2.5.4) is there if
// the file is.
//
// What is not looked at: the libraries those libraries need (the base's
// files are known by name only), an LD_LIBRARY_PATH the base's config
// sets (the image's own is: libraryPath), and glibc's hwcaps
// subdirectories. A library the loader provides itself (glibc's
// ld-linux, musl's libc.so and the names it answers for) is there with
// the loader.
func (lk *libLookup) missing(n loaderNeed, pf platform.Platform) []string {
	if len(n.Needed) == 0 {
		return nil
	}
	has := lk.has
	dirs, ok := libraryDirs(n, pf, lk.muslPath, lk.libraryPath)
	if !ok {
		return nil
	}
	var missing []string
	for _, so := range n.Needed {
		if slices.Contains(missing, so) || providedByLoader(so, n.Interp) {
			continue
		}
		if strings.Contains(so, "/") {
			// A path, not a name to look for: relative to the working
			// directory, unknown here, unless absolute.
			if strings.HasPrefix(so, "/") && !has(strings.Trim(path.Clean(so), "/")) {
				missing = append(missing, so)
			}
			continue
		}
		found := false
		for _, d := range dirs {
			if has(path.Join(d, so)) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, so)
		}
	}
	return missing
}

// providedByLoader says whether the loader at interp answers for the
// library so itself: glibc's loader for its own name, musl's, which is
// its C library too, for libc and the libraries merged into it
// (libpthread, librt, libm, libdl, libutil, libxnet), as its
// load_library does.
func providedByLoader(so, interp string) bool {
	if so == path.Base(interp) {
		return true
	}
	if !isMusl(interp) {
		return false
	}
	for _, r := range []string{"c", "pthread", "rt", "m", "dl", "util", "xnet"} {
		if strings.HasPrefix(so, "lib"+r+".") {
			return true
		}
	}
	return false
}
