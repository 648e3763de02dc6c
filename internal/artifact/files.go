package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/tree"
)

func (e *Extract) key() string {
	if e == nil {
		return "-"
	}
	// v2: the entry keeps the directories the archive only implied
	// (tree.Entry.Implied); v3: the modes and owners of its tar headers
	// (tree.Entry.Archived); v4: the names its hard links make one file
	// of (tree.Entry.Linked). One stored before does not say them.
	// v5: a zip's names written on Windows in code page 437 are read as
	// such, and Info-ZIP's Unicode Path fields taken, where v4 kept the
	// header's bytes, a '\' in a zip made on Unix is a character of
	// a name, where v4 split every zip name on it, and a GNU
	// incremental tar's directories are made, where v4 skipped them.
	return fmt.Sprintf("v5|%d|%s|%t|%t", e.Strip, strings.Join(e.Include, "\x00"), e.RootedLinks, e.Headers)
}

// fileTree turns a file into a tree: unpacked if ex is set, else the file
// itself under name. Errors name the archive as shown (its URL, or its
// path). Licence files of an archive are taken apart from the
// include filter so that shipping one binary still ships its licence.
// The entries of the archive it does not place are counted in rec.
func (f *Fetcher) fileTree(ctx context.Context, r *Request, file, name, shown string, ex *Extract, work string, rec *Record) (*tree.Tree, *tree.Tree, error) {
	if ex == nil {
		t, err := tree.FromFile(file, name)
		if err != nil {
			return nil, nil, err
		}
		lic, err := findLicenses(t, r.Licenses, r.NoLicense)
		return t, lic, err
	}
	format, ok := archive.Detect(name)
	if !ok {
		// A zip by another name (.jar, .whl, .nupkg, .vsix) is one by its
		// first bytes: extract, given, says to unpack it. Only here: a
		// .jar given at build time (LocalArchive) is placed as it is.
		head, err := readHead(file, archive.SniffLen)
		if err != nil {
			return nil, nil, err
		}
		if archive.IsZip(head) {
			format, ok = archive.Zip, true
		} else if f, compression := archive.Sniff(head); compression != "" {
			// A compressed tar goes by its name, as a Dockerfile's ADD
			// of one does (docs/dockerfile.md): say what it is and the
			// name that unpacks it, not only what its name is not.
			return nil, nil, fmt.Errorf("%s: extract is set but the name has no known archive extension, and the file is %s-compressed: a tar so compressed is unpacked named *.%s (a url's filename, or the local file's own name)", name, compression, f)
		}
	}
	if !ok {
		return nil, nil, fmt.Errorf("%s: extract is set but the name has no known archive extension (.tar, .tar.gz, .tgz, .tar.xz, .txz, .tar.zst, .tzst, .tar.bz2, .tbz2, .tbz, .zip) and the file is no zip", name)
	}
	dir := filepath.Join(work, "tree")
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	u := f.Limits.Unpack
	opt := archive.Options{Name: shown, Strip: ex.Strip, MaxBytes: u.MaxBytes, MaxEntries: u.MaxEntries, MaxWindow: u.MaxWindow, RootedLinks: ex.RootedLinks}
	// The include patterns are prepared once, for Extract and for the
	// tree it leaves, and refused here, at the include's line.
	var include *archive.Patterns
	if len(ex.Include) > 0 {
		var err error
		if include, err = archive.NewPatterns(ex.Include); err != nil {
			return nil, nil, blame("include", fmt.Errorf("extract %s: %w", shown, err))
		}
		opt.Patterns = include
		opt.Extra = ExtraPatterns(r.Licenses, r.NoLicense)
	}
	// The digests of what is unpacked are taken as it is written, and
	// the cache learns them once the tree is whole, as Extract tells
	// them: hard links made while unpacking change a file's ctime, and
	// with it the stamp it is remembered under. Extract tells only the
	// names that still hold what was written there.
	if f.Cache != nil {
		// Not learning a file only costs reading it again.
		opt.Written = func(path, sum string) { _ = f.Cache.Wrote(path, sum) }
	}
	// The directories the archive names itself, told from those it only
	// implies (tree.Entry.Implied).
	explicit := map[string]bool{}
	opt.Dirs = func(rel string) { explicit[rel] = true }
	// The modes and owners the tar headers give, which the files on
	// disk do not keep (tree.Entry.Archived), read only by an extract
	// that keeps them (Extract.Headers: a recipe's normalizes them, and
	// would keep 80 bytes an entry of a release tarball owned by
	// 1001:121 for nothing), and only where they are not what the disk
	// holds (a file 0755 or 0644, a directory 0755, owned by 0:0), so
	// that a million-entry archive is not a million headers kept. An
	// owner no runtime reads as written (past tree.MaxID) is kept too:
	// the tree refuses it where a placement keeps it, at its line.
	headers := map[string]archive.Header{}
	if ex.Headers {
		opt.Headers = func(rel string, h archive.Header) {
			if h.UID == 0 && h.GID == 0 && (h.Mode == 0o755 || !h.Dir && h.Mode == 0o644) {
				delete(headers, rel) // a later entry at the path, as the disk holds it
				return
			}
			headers[rel] = h
		}
	}
	// The names the archive's hard links make one file of, which a
	// layer writes as links (tree.Entry.Linked).
	var linked [][]string
	opt.Links = func(names []string) { linked = append(linked, names) }
	opt.Skipped = func(name, what string) {
		rec.Skipped++
		if len(rec.SkippedNames) < maxSkippedNames {
			rec.SkippedNames = append(rec.SkippedNames, skippedName(name, what))
		}
	}
	// What strip removed whole, for the error of a named licence it
	// took (a LICENSE beside the top directory, as GNU tar drops it).
	var stripped []string
	opt.Stripped = func(name string) {
		if len(stripped) < maxStrippedNames {
			stripped = append(stripped, name)
		}
	}
	if err := archive.Extract(ctx, file, format, dir, opt); err != nil {
		var abs *archive.AbsoluteLinkError
		switch {
		case errors.Is(err, archive.ErrUnmatched):
			err = blame("include", err)
		case errors.Is(err, archive.ErrTooManyGlobs):
			// Include alone was held to the bound above: what crowds
			// it is the licence patterns a name is also matched against.
			err = blame("include", fmt.Errorf("%w; %s", err, ExtraGlobsHint))
		case format != archive.Zip && errors.As(err, &abs) && abs.Keepable():
			err = fmt.Errorf("%w (a recipe's extract keeps it with links: keep, as a link from a Linux image's root)", err)
		}
		return nil, nil, err
	}
	all, err := tree.FromDir(dir)
	if err != nil {
		return nil, nil, err
	}
	all.Imply(func(p string) bool { return !explicit[p] })
	all.Archive(func(p string) (tree.DirMeta, bool) {
		h, ok := headers[p]
		return tree.DirMeta{Mode: h.Mode, UID: h.UID, GID: h.GID}, ok
	})
	if err := all.Link(linked); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", shown, err)
	}
	// An artifact that places nothing is a mistake, as a path naming an
	// empty directory is: most often a strip one too deep.
	if all.Len() == 0 {
		if ex.Strip > 0 {
			return nil, nil, blame("strip", fmt.Errorf("%s: nothing is left once extract.strip removes %d leading path component(s): no entry of the archive is deeper", name, ex.Strip))
		}
		return nil, nil, fmt.Errorf("%s: the archive holds nothing to place", name)
	}
	lic, err := findLicenses(all, r.Licenses, r.NoLicense)
	if err != nil {
		return nil, nil, strippedLicence(err, ex.Strip, stripped)
	}
	if include == nil {
		return all, lic, nil
	}
	// Keep only what the include filter asked for in the artifact itself.
	t := tree.New()
	for _, e := range all.Entries() {
		if include.Match(e.Path) {
			if err := t.Add(e); err != nil {
				return nil, nil, err
			}
		}
	}
	return t, lic, nil
}

// ArchiveOf says whether k unpacks an archive, which one (as errors show
// it: its URL without a password, or its path), and how many leading
// components of each entry's name extract.strip removes.
func ArchiveOf(k Kind) (shown string, strip int, ok bool) {
	switch k := k.(type) {
	case *URL:
		if k.Extract != nil {
			return ShownURL(k.URL), k.Extract.Strip, true
		}
	case *Local:
		if k.Extract != nil {
			return k.Path, k.Extract.Strip, true
		}
	}
	return "", 0, false
}

// readHead reads the first n bytes of the file at path, fewer if it is
// shorter.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, n)
	k, err := io.ReadFull(f, head)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return head[:k], err
}

// maxStrippedNames bounds the names of entries strip removed that an
// artifact keeps for strippedLicence: an archive of a million files at
// its top keeps a few.
const maxStrippedNames = 64

// strippedLicence adds to err, when it is a named licence not found, what
// extract.strip removed: the file of that name, or what else it took
// whole, which is where a licence at the archive's top went.
func strippedLicence(err error, strip int, stripped []string) error {
	var nf *licenceNotFound
	if !errors.As(err, &nf) || strip == 0 || len(stripped) == 0 {
		return err
	}
	want := path.Base(strings.ReplaceAll(nf.name, `\`, "/"))
	for _, s := range stripped {
		if path.Base(s) == want {
			return blame("licenses", fmt.Errorf("%w; extract.strip: %d removed the archive's %s (strip drops every entry above its depth, as GNU tar's --strip-components does): drop strip and place the directory it took off with the placement's path: (path: DIR/), and licenses: [%s] finds it", nf, strip, s, s))
		}
	}
	shown := stripped
	if len(shown) > 3 {
		shown = shown[:3]
	}
	more := ""
	if len(stripped) > len(shown) {
		more = ", ..."
	}
	return blame("licenses", fmt.Errorf("%w; extract.strip: %d removed the archive's files above its depth (%s%s), which no name in licenses can reach", nf, strip, strings.Join(shown, ", "), more))
}
