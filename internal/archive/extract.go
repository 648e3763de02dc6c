package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/pallet-dev/pallet/internal/globindex"
	"github.com/pallet-dev/pallet/internal/tree"
)

type kind uint8

const (
	kindFile kind = iota
	kindDir
	kindSymlink
	kindHardlink
	kindOther // devices, fifos and the like: never extracted
)

// entry is one archive member, described independently of the format so
// that every safety check lives in one place.
type entry struct {
	name string // as recorded in the archive; used in error messages
	kind kind
	exec bool   // any execute bit set in the archive's mode
	link string // symlink target or hard link name, as recorded

	// size is the declared content size. When exact is set the declared
	// size is also checked against what the content actually holds, which
	// matters for zip where the central directory may lie.
	size  int64
	exact bool

	// slashes marks a zip entry written on MS-DOS or Windows
	// (backslashSeparates): '\' separates components.
	slashes bool

	// streamed marks tar entries, whose content is decompressed whether
	// the entry is extracted or skipped.
	streamed bool

	// linkInContent marks zip symlinks, whose target is the content.
	linkInContent bool

	// header is the mode and owner a tar header gives the entry (nil for
	// zip), told to Options.Headers once the entry is in place.
	header *Header

	// other says what an entry of kindOther is, as Options.Skipped
	// tells it ("character device").
	other string

	open func() (io.ReadCloser, error)
}

var (
	errEmptyName = errors.New("empty name")
	errNUL       = errors.New("name contains a NUL byte")
	errAbsolute  = errors.New("absolute path not allowed")
	// A name such as "a:b" is no path of Linux's, but a drive-relative
	// one of Windows' (drive a:), which a Windows layer would place off
	// its root; said so, as "absolute" alone left its user puzzled.
	errDrive      = errors.New("absolute path not allowed: it begins with a drive letter and a colon, which Windows reads as a drive")
	errLeavesRoot = errors.New("path leaves the archive root")
	errTooDeep    = fmt.Errorf("path has more than %d components or %d bytes", maxDepth, maxPath)
)

// maxDepth and maxPath bound an entry's path, as they bound every path
// a tree holds (tree.MaxDepth, tree.MaxPath). Real archives are a few
// dozen levels deep at most, and Linux refuses paths over 4096 bytes
// anyway. maxDepth is also how many directories extraction holds open
// at once (see extractor.cwd).
const (
	maxDepth = tree.MaxDepth
	maxPath  = tree.MaxPath
)

// walksPerEntry is how many directories extraction may open or make, in
// all, for each entry MaxEntries allows (maxDepth more for the first).
// An archive that lists each directory's entries together, as tools
// write them, opens each directory once, and real trees have fewer
// directories than files. One that goes back and forth between deep
// directories has every entry climb out of one and down the other, up
// to maxDepth opens each; one that starts a new deep chain with every
// entry makes that many directories, which take disk MaxBytes does not
// count. Four per entry keeps either within a few times the cost of the
// largest archive of flat files.
const walksPerEntry = 4

// namesFloor and namesPerEntry bound the bytes of the names and link
// targets of an archive's entries: 256 MiB, or 256 for each entry
// MaxEntries allows where that is more. Extraction keeps the names of
// what it placed until the end (Options.Written's digests, hard link
// groups), and so does the tree built from it: 20,000 names of 4 KiB,
// from a .tar.gz of 714 KiB, held 105 MB of heap, and the million
// entries MaxEntries allows by default would have held some 5 GB, from
// 36 MB. Release archives' names average well under 100 bytes. A
// MaxEntries set to an archive's own count does not lower the bound:
// a deep tree's names are longer than 256 bytes. (namesFloor is a
// variable so that a test need not write 256 MiB of names.)
const namesPerEntry = 256

var namesFloor int64 = 256 << 20

// extractor holds the state of one Extract call.
type extractor struct {
	ctx      context.Context
	src      string
	root     *os.Root
	opt      Options
	patterns patternSet
	given    []string // the include patterns as given, for errors
	extra    patternSet
	matched  []bool
	// seen keeps the first names the patterns were matched against,
	// for the error of a pattern that matched none.
	seen []string

	// cwd holds open the directories from the root down to where the
	// last entry was placed, each found to be a real directory, not a
	// symlink, when it was opened. Archives list a directory's entries
	// together, so the next entry is placed through the same handle, or
	// one a few levels away, not by walking its path from the root: an
	// open per component for every entry took minutes for 100,000 files
	// 241 levels deep.
	//
	// A handle cannot go stale: extraction removes a directory only when
	// it is empty and a later entry takes its name (clearSlot), and an
	// entry only makes or replaces the name it is placed at, a child of
	// cwd's last directory, never one of cwd's own.
	cwd []level

	// walked counts the directories opened or made, up to maxWalks.
	walked   int
	maxWalks int

	// names counts the bytes of the entries' names and link targets, up
	// to maxNames (namesFloor).
	names    int64
	maxNames int64

	entries int
	buf     []byte

	// written counts the bytes in the extracted tree, a hard-linked file
	// once per name; decompressed counts the bytes that came out of the
	// decompressor. Both are bounded by MaxBytes.
	written      int64
	decompressed int64

	// declared, when not negative, is what an xz file's indexes say it
	// decodes to (xzDeclared): decoding more is refused as it happens,
	// not once the lying index is reached.
	declared int64

	// linked holds, with Options.Links, the group of each name placed
	// as a hard link or linked to, numbered from 1 in the order the
	// groups were made.
	linked map[string]int
	groups int

	// sums holds, with Options.Written, the sha256 of each file written,
	// by its path below the root, until the archive ends: a later entry
	// may replace the name (clearSlot forgets it), even with a hard link
	// to another file, and a digest told at once would then be taken for
	// that file's.
	sums map[string][sha256.Size]byte

	// later, in a first pass with include, collects the kept hard links
	// whose targets include left out, made in a second pass (Extract).
	later *deferral

	// forLinks, in the second pass, are the names written only so that
	// kept hard links can be made to them, removed once it ends
	// (dropForLinks).
	forLinks map[string]bool
	// forLinkDirs are those of them the archive holds directories at,
	// which no link can be made to: said so, not that they are missing.
	forLinkDirs map[string]bool

	// tellFrom is the number of the first entry the callbacks are told
	// of: the second pass starts where the first stopped telling.
	tellFrom int
}

// deferral is what a first pass over an archive with include learns of
// the hard links it keeps whose targets include leaves out.
type deferral struct {
	at      int             // the number of the entry of the first link deferred
	links   map[string]bool // kept links not made, by name after Strip
	targets map[string]bool // the names a second pass writes for them
	// skipped maps each hard link include left out to its target's name,
	// both after Strip: a kept link's target may itself be one, which
	// the second pass then writes too.
	skipped map[string]string
}

// telling says whether the callbacks are told of the entry being
// added: not once a first pass has deferred a link (the second pass
// tells the rest), nor in the second of what the first told.
func (x *extractor) telling() bool {
	return x.entries >= x.tellFrom && (x.later == nil || x.later.at == 0)
}

func (x *extractor) fail(format string, args ...any) error {
	return fmt.Errorf("extract %s: "+format, append([]any{x.src}, args...)...)
}

func (x *extractor) entryErr(e *entry, format string, args ...any) error {
	return fmt.Errorf("extract %s: entry %s: "+format, append([]any{x.src, shownName(e.name)}, args...)...)
}

// shownName is an entry's name for a message, quoted: whole where it
// could be a path (maxPath bytes), else its start and its length, as
// archive/tar reads names of up to 1 MiB.
func shownName(name string) string {
	if len(name) <= maxPath {
		return strconv.Quote(name)
	}
	return fmt.Sprintf("%q... (%d bytes)", name[:60], len(name))
}

// count enforces cancellation and the entry limit. Every header read goes
// through it, including ones that are then skipped, so that a flood of
// skipped entries still ends.
func (x *extractor) count(e *entry) error {
	if err := x.ctx.Err(); err != nil {
		return x.fail("%w", err)
	}
	x.entries++
	if x.entries > x.opt.MaxEntries {
		return x.entryErr(e, "%w", x.tooManyEntries())
	}
	return x.countNames(e, len(e.name)+len(e.link))
}

// countNames charges n bytes of e's name or link target to maxNames.
func (x *extractor) countNames(e *entry, n int) error {
	x.names += int64(n)
	if x.names > x.maxNames {
		return x.entryErr(e, "%w", limitErr(settingEntries, fmt.Sprintf("archive's entry names and link targets take more than %d bytes", x.maxNames)))
	}
	return nil
}

// maxNames is how many bytes of names and link targets an archive
// allowed maxEntries entries may hold.
func maxNames(maxEntries int) int64 {
	return max(namesFloor, int64(min(maxEntries, math.MaxInt64/namesPerEntry/2))*namesPerEntry)
}

func (x *extractor) tooManyEntries() error {
	return limitErr(settingEntries, fmt.Sprintf("archive has more than %d entries", x.opt.MaxEntries))
}

func (x *extractor) tooManyWalks() error {
	return limitErr(settingEntries, fmt.Sprintf("archive makes extraction open or make more than %d directories (%d for each entry allowed)", x.maxWalks, walksPerEntry))
}

// maxWalks is how many directories extraction may open or make for an
// archive allowed maxEntries entries.
func maxWalks(maxEntries int) int {
	if maxEntries > (math.MaxInt-maxDepth)/walksPerEntry {
		return math.MaxInt
	}
	return maxEntries*walksPerEntry + maxDepth
}

func (x *extractor) tooBig() error {
	return limitErr(settingExtract, fmt.Sprintf("archive expands beyond the limit of %d bytes", x.opt.MaxBytes))
}

func (x *extractor) bomb(e *entry) error {
	return x.entryErr(e, "%w", x.tooBig())
}

// meter charges what a decompressor produces against MaxBytes. It sits
// directly on the decompressor's output, so everything decompressed is
// counted, whatever the reader above it then keeps or skips.
type meter struct {
	r io.Reader
	x *extractor
}

func (m meter) Read(p []byte) (int, error) {
	// The input's reads see a cancelled context too, but a bzip2 block
	// of a few dozen bytes expands to 45 MB: 64 KiB of input can be
	// gigabytes of output, all decoded without reading more.
	if err := m.x.ctx.Err(); err != nil {
		return 0, err
	}
	left := m.x.opt.MaxBytes - m.x.decompressed
	if left < 0 {
		return 0, m.x.tooBig()
	}
	// One byte past the limit is enough to know it is exceeded. (Written
	// so as not to overflow when MaxBytes is math.MaxInt64.)
	if left < int64(len(p))-1 {
		p = p[:left+1]
	}
	n, err := m.r.Read(p)
	m.x.decompressed += int64(n)
	if m.x.decompressed > m.x.opt.MaxBytes {
		return n, m.x.tooBig()
	}
	if m.x.declared >= 0 && m.x.decompressed > m.x.declared {
		return n, xzCorrupt("the file decodes to more than the %d bytes its indexes declare", m.x.declared)
	}
	return n, err
}

// add extracts one entry.
func (x *extractor) add(e *entry) error {
	if err := x.count(e); err != nil {
		return err
	}
	// Content about to be decompressed, even just to be skipped, is
	// refused up front when its declared size alone exceeds the limit.
	if e.streamed && e.kind == kindFile && e.size > x.opt.MaxBytes-x.decompressed {
		return x.bomb(e)
	}
	parts, err := splitName(e.name, e.slashes)
	if err != nil {
		if e.kind == kindOther {
			return nil // never placed, so never named
		}
		return x.entryErr(e, "%w", err)
	}
	if len(parts) <= x.opt.Strip {
		if x.opt.Stripped != nil && x.telling() && e.kind != kindDir && e.kind != kindOther && len(parts) > 0 {
			x.opt.Stripped(strings.Join(parts, "/"))
		}
		return nil
	}
	parts = parts[x.opt.Strip:]
	rel := strings.Join(parts, "/")
	if !x.include(rel) {
		if x.forLinks[rel] && e.kind != kindDir && e.kind != kindOther {
			return x.placeForLinks(e, parts)
		}
		if x.forLinks[rel] && e.kind == kindDir {
			if x.forLinkDirs == nil {
				x.forLinkDirs = map[string]bool{}
			}
			x.forLinkDirs[rel] = true
			// The first pass left the name empty for what comes below
			// it: the file written there for the links before goes now,
			// or an entry below would find no directory at its parent.
			var byGroup map[int][]string
			err := x.dropForLink(rel, &byGroup)
			x.leave(0)
			if err != nil {
				return err
			}
		}
		x.later.skip(x, e, rel)
		return nil
	}
	if e.kind == kindOther {
		if x.opt.Skipped != nil && x.telling() {
			x.opt.Skipped(e.name, e.other)
		}
		return nil
	}

	if x.linked != nil && e.kind != kindHardlink {
		// A new file at a name is no longer the file linked there.
		delete(x.linked, rel)
	}
	if x.later != nil {
		// Placed anew, the name is no longer a link deferred.
		delete(x.later.links, rel)
	}
	if err := x.place(e, parts); err != nil {
		return err
	}
	if e.header != nil && x.opt.Headers != nil && x.telling() {
		x.opt.Headers(rel, *e.header)
	}
	return nil
}

// placeForLinks writes e, which include left out, at parts, for the
// kept hard links to it. Its content is not the tree's: decompressing
// it was charged, placing it is not (the links to it are).
func (x *extractor) placeForLinks(e *entry, parts []string) error {
	if x.linked != nil && e.kind != kindHardlink {
		delete(x.linked, strings.Join(parts, "/"))
	}
	delete(x.forLinkDirs, strings.Join(parts, "/"))
	written := x.written
	err := x.place(e, parts)
	x.written = written
	return err
}

// skip notes, in a first pass, an entry include left out at rel: a hard
// link, for a kept link to it (deferLink), and anything else as no
// longer one.
func (d *deferral) skip(x *extractor, e *entry, rel string) {
	if d == nil {
		return
	}
	if e.kind != kindHardlink {
		delete(d.skipped, rel)
		return
	}
	tparts, err := splitName(e.link, e.slashes)
	if err != nil || len(tparts) <= x.opt.Strip {
		// Refused if a kept link leads to it, in the second pass.
		delete(d.skipped, rel)
		return
	}
	if d.skipped == nil {
		d.skipped = map[string]string{}
	}
	d.skipped[rel] = strings.Join(tparts[x.opt.Strip:], "/")
}

// place writes e at parts.
func (x *extractor) place(e *entry, parts []string) error {
	switch e.kind {
	case kindDir:
		return x.makeDir(e, parts)
	case kindFile:
		if e.size > x.opt.MaxBytes-x.written {
			return x.bomb(e)
		}
		r, err := e.open()
		if err != nil {
			return x.entryErr(e, "%w", err)
		}
		defer r.Close()
		return x.writeFile(e, parts, filePerm(e.exec), r)
	case kindSymlink:
		target := e.link
		if e.linkInContent {
			var err error
			if target, err = x.readLinkContent(e); err != nil {
				return err
			}
			// A zip's target is its content, unknown when counted.
			if err := x.countNames(e, len(target)); err != nil {
				return err
			}
		}
		return x.makeSymlink(e, parts, target)
	case kindHardlink:
		return x.makeHardlink(e, parts)
	}
	return nil
}

func filePerm(exec bool) fs.FileMode {
	if exec {
		return 0o755
	}
	return 0o644
}

// include reports whether rel passes the Include filter, crediting every
// pattern that matches so the unmatched ones can be reported at the end.
func (x *extractor) include(rel string) bool {
	if len(x.patterns.all) == 0 {
		return true
	}
	if len(x.seen) < maxSeen {
		x.seen = append(x.seen, rel)
	}
	hit := false
	x.patterns.matches(rel, func(i int) bool {
		x.matched[i] = true
		hit = true
		return true
	})
	return hit || x.extra.any(rel)
}

// selected reports whether rel passes the Include filter, as include
// does, without crediting any pattern.
func (x *extractor) selected(rel string) bool {
	return len(x.patterns.all) == 0 || x.patterns.any(rel) || x.extra.any(rel) || x.forLinks[rel]
}

// patternSet is clean patterns filed so that a name is matched only
// against those that could match it: one without wildcards is looked up
// by name, the name's and each of its ancestors', and one with wildcards
// is filed under its literal prefix, the text before its first wildcard.
// path.Match matches a plain character only with itself, so a glob can
// match only names that begin with its prefix, and so can an ancestor of
// a name only if the name does. Matched one by one against every entry,
// 100,000 names an include lists, or 20,000 globs bin/f1*, bin/f2*, ...,
// held the build for minutes on an archive of 100,000 entries.
type patternSet struct {
	all     []string
	literal map[string][]int // a pattern without wildcards -> its indexes in all
	globs   *globindex.Index // the globs, by their literal prefix
}

func newPatternSet(clean []string) patternSet {
	s := patternSet{all: clean}
	var globs globindex.Builder
	for i, p := range clean {
		prefix, glob := literalPrefix(p)
		if glob {
			globs.Add(prefix, i)
			continue
		}
		if s.literal == nil {
			s.literal = map[string][]int{}
		}
		s.literal[prefix] = append(s.literal[prefix], i)
	}
	s.globs = globs.Index()
	return s
}

// literalPrefix is the text every name clean pattern p matches begins
// with, up to its first wildcard, and whether it has one; without, p
// matches that text alone (and what is below it). Escapes are read, not
// taken for wildcards, as path.Match's \[ matches '[' and nothing else:
// names holding '[' (app/\[id]/page.js, as Next.js writes them) are then
// looked up, where as globs 1,001 of them under app/ were all tried on
// every name there and refused past MaxGlobsPerName.
func literalPrefix(p string) (string, bool) {
	j := strings.IndexAny(p, `*?[\`)
	if j < 0 {
		return p, false
	}
	b := []byte(p[:j])
	for i := j; i < len(p); i++ {
		switch c := p[i]; c {
		case '*', '?', '[':
			return string(b), true
		case '\\':
			if i+1 == len(p) {
				// Malformed, refused by cleanPatterns: a glob, to fail as one.
				return string(b), true
			}
			i++
			b = append(b, p[i])
		default:
			b = append(b, c)
		}
	}
	return string(b), false
}

// matches calls hit with the index of each pattern that matches name or
// an ancestor of it (matchBelow), until hit returns false.
func (s *patternSet) matches(name string, hit func(i int) bool) {
	for n := name; len(s.literal) > 0; {
		for _, i := range s.literal[n] {
			if !hit(i) {
				return
			}
		}
		j := strings.LastIndexByte(n, '/')
		if j < 0 {
			break
		}
		n = n[:j]
	}
	s.globs.Each(name, func(ids []int) bool {
		for _, i := range ids {
			if matchBelow(s.all[i], name) && !hit(i) {
				return false
			}
		}
		return true
	})
}

// any reports whether a pattern matches name or an ancestor of it.
func (s *patternSet) any(name string) bool {
	found := false
	s.matches(name, func(int) bool {
		found = true
		return false
	})
	return found
}

// matchBelow matches pattern against name and each of its ancestors, so a
// pattern naming a directory takes the whole subtree even when the archive
// has no entry for the directory itself.
//
// Only the ancestors the pattern can match are tried: in path.Match, '*'
// and '?' never match '/' and a plain character only itself, so a match
// holds no more slashes than the pattern has '/' and character classes.
// Trying every ancestor cost each pattern 256 matches for every entry
// of an archive of names 256 directories deep: 100,000 of them took
// minutes.
func matchBelow(pattern, name string) bool {
	name = firstComponents(name, strings.Count(pattern, "/")+strings.Count(pattern, "[")+1)
	for {
		if ok, _ := match(pattern, name); ok {
			return true
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return false
		}
		name = name[:i]
	}
}

// match is path.Match; tests count its calls.
var match = path.Match

// firstComponents is name up to its n-th slash-separated component.
func firstComponents(name string, n int) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			if n--; n == 0 {
				return name[:i]
			}
		}
	}
	return name
}

// maxSeen is how many of an archive's names an unmatched pattern's error
// shows.
const maxSeen = 8

// ErrUnmatched is the error of include patterns that matched no entry.
var ErrUnmatched = errors.New("include pattern(s) matched no entry")

// maxMissing is how many of the patterns that matched nothing the error
// lists: every one made an error of megabytes for 100,000 of them, and
// the first few say what went wrong (a strip too many, a wrong top
// directory) as well.
const maxMissing = 20

func (x *extractor) checkPatterns() error {
	var missing []string
	unmatched := 0
	for i, ok := range x.matched {
		if !ok {
			if unmatched++; unmatched <= maxMissing {
				missing = append(missing, fmt.Sprintf("%q", x.given[i]))
			}
		}
	}
	if unmatched > maxMissing {
		missing = append(missing, fmt.Sprintf("and %d more (of %d patterns)", unmatched-maxMissing, len(x.matched)))
	}
	if len(missing) > 0 {
		// The names patterns see are the ones left after strip, which is
		// the usual surprise: say so, with what they looked like.
		var after string
		if x.opt.Strip > 0 {
			after = fmt.Sprintf(" (patterns match names after strip: %d)", x.opt.Strip)
		}
		names := make([]string, len(x.seen))
		for i, n := range x.seen {
			names[i] = fmt.Sprintf("%q", n)
		}
		more := ""
		if len(x.seen) == maxSeen {
			more = ", ..."
		}
		return x.fail("%w: %s; the archive's names%s: %s%s", ErrUnmatched, strings.Join(missing, ", "), after, strings.Join(names, ", "), more)
	}
	return nil
}

// usesBackslash reports whether '\' separates components where entries
// and links are placed: always for zip (written by Windows tools), and for
// any format when the host itself would read it that way. (The safety
// checks read it as a separator regardless.)
func usesBackslash(slashes bool) bool {
	return slashes || runtime.GOOS == "windows"
}

func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' &&
		('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

// splitName turns an entry name into clean path components. Any ".." is
// refused outright, even one that would stay inside the root ("a/../b"):
// legitimate archives do not contain them and lexical tricks are where
// extraction bugs hide.
//
// The checks also read '\' as a separator and a drive letter as making the
// name absolute, whatever the format: the tree may become a Windows layer,
// where "..\x" or "C:x" would escape. Only zip (and any archive on a
// Windows host) also places entries by that reading.
func splitName(name string, slashes bool) ([]string, error) {
	if name == "" {
		return nil, errEmptyName
	}
	if strings.IndexByte(name, 0) >= 0 {
		return nil, errNUL
	}
	win := strings.ReplaceAll(name, `\`, "/")
	if win[0] == '/' {
		return nil, errAbsolute
	}
	if hasDrive(win) {
		return nil, errDrive
	}
	// Splitting on both separators finds every ".." splitting on '/'
	// alone would.
	for p := range strings.SplitSeq(win, "/") {
		if p == ".." {
			return nil, errLeavesRoot
		}
	}
	if usesBackslash(slashes) {
		name = win
	}
	if len(name) > maxPath {
		return nil, errTooDeep
	}
	parts := make([]string, 0, strings.Count(name, "/")+1)
	for p := range strings.SplitSeq(name, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	if len(parts) > maxDepth {
		return nil, errTooDeep
	}
	return parts, nil
}

// checkLinkTarget validates a symlink target for a link at rel and returns
// the target to create.
//
// Besides the lexical check, a ".." is refused once a named component has
// been seen ("x/../y"). The name might itself be a symlink, possibly one
// extracted later, and "x/.." then means the parent of wherever x points:
// with x -> "." that is outside the root even though the text cleans to
// "y". Leading ".." only climb through the link's own parents, which are
// known to be real directories, so they are safe as long as they stay
// within the root.
//
// Like names, targets are also checked with '\' read as a separator and
// drive letters ("C:\x", "C:x") as absolute, for Windows' sake. Neither
// reading's checks imply the other's ("a\..\.." climbs only with '\';
// in ".\./.." a named component precedes ".." only with '/'), so both are
// made. The link's depth is taken from rel as placed, which is never
// deeper than under the Windows reading.
func checkLinkTarget(target, rel string, slashes bool) (string, error) {
	orig := target
	if target == "" {
		return "", errors.New("symlink target is empty")
	}
	if strings.IndexByte(target, 0) >= 0 {
		return "", errors.New("symlink target contains a NUL byte")
	}
	win := strings.ReplaceAll(target, `\`, "/")
	if win[0] == '/' || hasDrive(win) {
		return "", &AbsoluteLinkError{Target: orig}
	}
	depth := strings.Count(rel, "/")
	readings := []string{win}
	if !usesBackslash(slashes) {
		readings = append(readings, target)
	} else {
		target = win
	}
	for _, t := range readings {
		if why := climb(t, depth); why != "" {
			return "", &climbError{target: orig, why: why}
		}
	}
	return target, nil
}

// climbError is a relative symlink target that leaves, or may leave,
// the tree from where the link is placed.
type climbError struct{ target, why string }

func (e *climbError) Error() string { return fmt.Sprintf("symlink target %q %s", e.target, e.why) }

// AbsoluteLinkError is a symlink whose target is absolute, refused
// where Options.RootedLinks does not keep it.
type AbsoluteLinkError struct{ Target string }

func (e *AbsoluteLinkError) Error() string {
	return fmt.Sprintf("symlink target %q is absolute", e.Target)
}

// Keepable says whether Options.RootedLinks would keep the link: a tar
// link to a path from the root ('/'), not a drive or a share.
func (e *AbsoluteLinkError) Keepable() bool { return strings.HasPrefix(e.Target, "/") }

// checkRootedTarget checks an absolute tar symlink target, which
// Options.RootedLinks takes from the root the archive is unpacked into:
// it must not climb above it ("/../etc"), as BuildKit's unpack refuses
// (go-archive's breakout check joins it below the link's directory).
func checkRootedTarget(target string) error {
	if strings.IndexByte(target, 0) >= 0 {
		return errors.New("symlink target contains a NUL byte")
	}
	if why := climb(target[1:], 0); why != "" {
		return fmt.Errorf("symlink target %q %s", target, why)
	}
	return nil
}

// climb follows a relative slash path from a link at the given depth below
// the root and says how it may leave the root, or "" if it cannot.
func climb(target string, depth int) string {
	named := false
	for p := range strings.SplitSeq(target, "/") {
		switch p {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return "leaves the archive root"
			}
			if named {
				return `may leave the archive root (".." after a named component)`
			}
		default:
			depth++
			named = true
		}
	}
	return ""
}

func native(rel string) string { return filepath.FromSlash(rel) }

// nativeJoin is the native path of the clean components parts.
func nativeJoin(parts []string) string { return native(strings.Join(parts, "/")) }

// level is one open directory of extractor.cwd.
type level struct {
	name string
	dir  *os.Root
}

// at returns the open directory n levels below the root, n <= len(cwd).
func (x *extractor) at(n int) *os.Root {
	if n == 0 {
		return x.root
	}
	return x.cwd[n-1].dir
}

// leave closes the directories of cwd below its first n.
func (x *extractor) leave(n int) {
	for _, l := range x.cwd[n:] {
		l.dir.Close()
	}
	clear(x.cwd[n:])
	x.cwd = x.cwd[:n]
}

// walk charges n directory opens against maxWalks.
func (x *extractor) walk(n int) error {
	if n > x.maxWalks-x.walked {
		return x.tooManyWalks()
	}
	x.walked += n
	return nil
}

// notDir says why dirAt could not go into the directory at path.
type notDir struct {
	path    string
	missing bool // only when dirAt makes nothing
	symlink bool
}

func (n *notDir) Error() string {
	switch {
	case n.missing:
		return fmt.Sprintf("%q does not exist", n.path)
	case n.symlink:
		return fmt.Sprintf("%q is a symlink", n.path)
	}
	return fmt.Sprintf("%q is not a directory", n.path)
}

// dirAt returns the directory at parts (clean components below the root),
// which becomes cwd. Each directory not already in cwd is looked at with
// Lstat in its parent and opened only if it is a real directory; with
// mk, one that is missing is made. Anything else is a *notDir.
//
// Refusing symlinks here is what stops the classic "a -> /etc, then
// a/passwd" attack. The handles are the second line of defence: each is
// an os.Root opened from its parent's, so were a directory swapped for a
// symlink behind our back, the open would stay inside the parent.
func (x *extractor) dirAt(parts []string, mk bool) (*os.Root, error) {
	n := 0
	for n < len(x.cwd) && n < len(parts) && x.cwd[n].name == parts[n] {
		n++
	}
	x.leave(n)
	for ; n < len(parts); n++ {
		if err := x.walk(1); err != nil {
			return nil, err
		}
		parent, name := x.at(n), parts[n]
		fi, err := parent.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist) && mk:
			err = mkdir(parent, name)
		case errors.Is(err, fs.ErrNotExist):
			return nil, &notDir{path: strings.Join(parts[:n+1], "/"), missing: true}
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, &notDir{path: strings.Join(parts[:n+1], "/"), symlink: true}
		case !fi.IsDir():
			return nil, &notDir{path: strings.Join(parts[:n+1], "/")}
		}
		var d *os.Root
		if err == nil {
			d, err = parent.OpenRoot(name)
		}
		if err != nil {
			return nil, inTree(err, parts[:n+1])
		}
		x.cwd = append(x.cwd, level{name, d})
	}
	return x.at(len(parts)), nil
}

// inTree makes an error of an operation on the last of parts, done in
// the directory of the others, name all of parts (relative to the root),
// as it would had the root done it.
func inTree(err error, parts []string) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		pe.Path = nativeJoin(parts)
	case errors.As(err, &le):
		le.New = nativeJoin(parts)
	}
	return err
}

// parentDir returns the directory an entry at parts goes into, making
// any that are missing.
func (x *extractor) parentDir(e *entry, parts []string) (*os.Root, error) {
	d, err := x.dirAt(parts[:len(parts)-1], true)
	if err != nil {
		return nil, x.parentErr(e, err)
	}
	return d, nil
}

// parentErr reports a failure of dirAt to reach an entry's directory.
func (x *extractor) parentErr(e *entry, err error) error {
	var nd *notDir
	switch {
	case errors.As(err, &nd) && nd.symlink:
		return x.entryErr(e, "path passes through symlink %q", nd.path)
	case errors.As(err, &nd):
		return x.entryErr(e, "parent %q is not a directory", nd.path)
	}
	return x.entryErr(e, "%w", err)
}

// mkdir makes a directory with exactly 0755, whatever the umask.
func mkdir(parent *os.Root, name string) error {
	if err := parent.Mkdir(name, 0o755); err != nil {
		return err
	}
	return parent.Chmod(name, 0o755)
}

// clearSlot makes room for a non-directory named name in dir, where parts
// places it. A later entry at a name an earlier file, symlink or empty
// directory holds replaces it, as GNU tar and bsdtar unpack an appended
// tar: the name is unlinked, never opened, so a symlink there redirects
// nothing (what is placed next is created with O_EXCL, or is a link made
// afresh). Replacing a directory that holds anything would discard its
// subtree: refused, as both refuse it. An empty directory removed is
// never one of cwd's, which holds the entry's parents only.
func (x *extractor) clearSlot(e *entry, dir *os.Root, name string, parts []string) error {
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return x.entryErr(e, "%w", inTree(err, parts))
	case !fi.IsDir() && !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0:
		return x.entryErr(e, "would replace a special file")
	}
	// Remove takes a directory only when it is empty.
	if err := dir.Remove(name); err != nil {
		if fi.IsDir() {
			return x.entryErr(e, "would replace a directory an earlier entry made, and all it holds")
		}
		return x.entryErr(e, "%w", inTree(err, parts))
	}
	if x.sums != nil && fi.Mode().IsRegular() {
		delete(x.sums, strings.Join(parts, "/"))
	}
	return nil
}

// makeDir makes the directory at parts, and leaves it as cwd, where the
// entries that follow it are likely to go. A file or symlink an earlier
// entry left at that name is replaced, as GNU tar and bsdtar replace it
// (tar's --keep-directory-symlink is not their default): it is removed,
// not gone through.
func (x *extractor) makeDir(e *entry, parts []string) error {
	_, err := x.dirAt(parts, true)
	var nd *notDir
	if errors.As(err, &nd) && nd.path == strings.Join(parts, "/") {
		dir, perr := x.parentDir(e, parts)
		if perr != nil {
			return perr
		}
		if err := x.clearSlot(e, dir, parts[len(parts)-1], parts); err != nil {
			return err
		}
		_, err = x.dirAt(parts, true)
	}
	if err != nil {
		return x.parentErr(e, err)
	}
	if x.opt.Dirs != nil && x.telling() {
		x.opt.Dirs(strings.Join(parts, "/"))
	}
	return nil
}

// writeFile creates the file at parts afresh and fills it from r. O_EXCL
// both keeps a hard-linked twin of an earlier version intact (clearSlot
// unlinked it rather than truncating) and refuses to follow a symlink
// raced into place.
func (x *extractor) writeFile(e *entry, parts []string, perm fs.FileMode, r io.Reader) error {
	dir, err := x.parentDir(e, parts)
	if err != nil {
		return err
	}
	name := parts[len(parts)-1]
	if err := x.clearSlot(e, dir, name, parts); err != nil {
		return err
	}
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return x.entryErr(e, "%w", inTree(err, parts))
	}
	hw := &holeWriter{f: f}
	var w io.Writer = hw
	var h hash.Hash
	if x.opt.Written != nil {
		h = sha256.New()
		w = io.MultiWriter(hw, h)
	}
	err = x.copy(e, w, r)
	if err == nil {
		if cerr := hw.finish(); cerr != nil {
			err = x.entryErr(e, "%w", cerr)
		}
	}
	if err == nil {
		// The umask may have narrowed the mode given to OpenFile.
		if cerr := f.Chmod(perm); cerr != nil {
			err = x.entryErr(e, "%w", cerr)
		}
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = x.entryErr(e, "%w", cerr)
	}
	if err == nil && h != nil {
		x.sums[strings.Join(parts, "/")] = [sha256.Size]byte(h.Sum(nil))
	}
	return err
}

// holeBlock is the unit holeWriter leaves a hole for: a file system
// block, the least a hole saves.
const holeBlock = 4 << 10

var zeroBlock [holeBlock]byte

// holeWriter writes a new file, leaving a hole where a block of it is
// zeros instead of writing them: a sparse tar entry's holes (which
// archive/tar reads out as zeros), or the zeros a compression bomb is
// usually made of, take no disk, where they would fill MaxBytes of it
// from an archive of a few KiB. The file reads the same; MaxBytes still
// counts its length. finish gives the file its length when it ends in a
// hole.
type holeWriter struct {
	f     *os.File
	off   int64
	holed bool
}

func (w *holeWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		// Split p at block boundaries of the file: data runs are
		// written, runs of zeros skipped. A piece of a block at either
		// end of p is skipped when it is zeros too: the rest of its
		// block may be, in the writes before or after.
		data := 0
		for data < len(p) {
			k := min(len(p), data+holeBlock-int((w.off+int64(data))%holeBlock))
			if bytes.Equal(p[data:k], zeroBlock[:k-data]) {
				break
			}
			data = k
		}
		if data > 0 {
			if _, err := w.f.WriteAt(p[:data], w.off); err != nil {
				return n - len(p), err
			}
			w.off += int64(data)
			p = p[data:]
		}
		hole := 0
		for hole < len(p) {
			k := min(len(p), hole+holeBlock-int((w.off+int64(hole))%holeBlock))
			if !bytes.Equal(p[hole:k], zeroBlock[:k-hole]) {
				break
			}
			hole = k
		}
		if hole > 0 {
			w.off += int64(hole)
			w.holed = true
			p = p[hole:]
		}
	}
	return n, nil
}

// finish extends the file over a hole at its end.
func (w *holeWriter) finish() error {
	if !w.holed {
		return nil
	}
	return w.f.Truncate(w.off)
}

// copy moves content from r to w, charging the bytes actually read against
// MaxBytes rather than trusting any declared size.
func (x *extractor) copy(e *entry, w io.Writer, r io.Reader) error {
	limit := x.opt.MaxBytes - x.written
	if e.exact && e.size < limit {
		limit = e.size
	}
	// Hide os.File's ReadFrom so the shared buffer is used.
	// One byte more than allowed shows the limit exceeded.
	n, err := io.CopyBuffer(struct{ io.Writer }{w}, io.LimitReader(r, min(limit, math.MaxInt64-1)+1), x.buf)
	x.written += n
	if err != nil {
		// archive/zip enforces the declared size itself, with errors that
		// do not say so.
		if e.exact && (errors.Is(err, zip.ErrFormat) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return x.entryErr(e, "content does not match declared size %d: %w", e.size, err)
		}
		return x.entryErr(e, "%w", err)
	}
	if x.written > x.opt.MaxBytes {
		return x.bomb(e)
	}
	if e.exact && n != e.size {
		return x.entryErr(e, "content size differs from declared size %d", e.size)
	}
	return nil
}

// readLinkContent reads a zip symlink's target, bounded because it is
// held in memory.
func (x *extractor) readLinkContent(e *entry) (string, error) {
	if e.size > maxLinkTarget {
		return "", x.entryErr(e, "symlink target longer than %d bytes", maxLinkTarget)
	}
	r, err := e.open()
	if err != nil {
		return "", x.entryErr(e, "%w", err)
	}
	defer r.Close()
	var sb strings.Builder
	if err := x.copy(e, &sb, r); err != nil {
		return "", err
	}
	return sb.String(), nil
}

func (x *extractor) makeSymlink(e *entry, parts []string, target string) error {
	var err error
	// Rooted links are a tar's (Options.RootedLinks): a zip's, whose
	// target is its content, stay refused.
	if x.opt.RootedLinks && !e.linkInContent && strings.HasPrefix(target, "/") {
		err = checkRootedTarget(target)
	} else {
		target, err = checkLinkTarget(target, strings.Join(parts, "/"), e.slashes)
	}
	var ce *climbError
	if errors.As(err, &ce) && x.opt.Strip > 0 {
		// A link that stays inside the archive may climb out of what
		// strip leaves: say where it was placed, and, for a name in
		// "./", that strip did not count the ".", as GNU tar would.
		dot := ""
		if strings.HasPrefix(e.name, "./") {
			dot = `; "." is not a component strip removes, where GNU tar's --strip-components counts it`
		}
		return x.entryErr(e, "%w, placed at %q once strip removes %d leading component(s)%s", err, strings.Join(parts, "/"), x.opt.Strip, dot)
	}
	if err != nil {
		return x.entryErr(e, "%w", err)
	}
	dir, err := x.parentDir(e, parts)
	if err != nil {
		return err
	}
	name := parts[len(parts)-1]
	if err := x.clearSlot(e, dir, name, parts); err != nil {
		return err
	}
	if err := dir.Symlink(native(target), name); err != nil {
		return x.entryErr(e, "%w", inTree(err, parts))
	}
	return nil
}

// makeHardlink links the entry at parts to an entry extracted earlier.
// The target must already exist as a regular file (or symlink) reached
// through real directories only; anything else means the archive is
// either hostile or relies on content we skipped.
func (x *extractor) makeHardlink(e *entry, parts []string) error {
	tparts, err := splitName(e.link, e.slashes)
	if err != nil {
		return x.entryErr(e, "hard link target %q: %w", e.link, err)
	}
	if len(tparts) == 0 {
		return x.entryErr(e, "hard link target %q is the archive root", e.link)
	}
	if len(tparts) <= x.opt.Strip {
		return x.entryErr(e, "hard link target %q is removed by Strip", e.link)
	}
	tparts = tparts[x.opt.Strip:]
	notYet := func() error {
		trel := strings.Join(tparts, "/")
		if x.later != nil && (x.later.links[trel] || !x.selected(trel)) {
			return x.deferLink(e, parts, trel)
		}
		if x.forLinkDirs[trel] {
			return x.entryErr(e, "hard link target %q is a directory", e.link)
		}
		if !x.selected(trel) {
			return x.entryErr(e, "hard link target %q is left out by include: include it too, or leave out the link", e.link)
		}
		return x.entryErr(e, "hard link target %q not yet extracted", e.link)
	}

	tdirParts, tname := tparts[:len(tparts)-1], tparts[len(tparts)-1]
	tdir, err := x.dirAt(tdirParts, false)
	var nd *notDir
	switch {
	case errors.As(err, &nd) && nd.symlink:
		return x.entryErr(e, "hard link target %q passes through symlink %q", e.link, nd.path)
	case errors.As(err, &nd):
		return notYet()
	case err != nil:
		return x.entryErr(e, "%w", err)
	}
	fi, err := tdir.Lstat(tname)
	switch {
	case err != nil:
		return notYet()
	case fi.IsDir():
		return x.entryErr(e, "hard link target %q is a directory", e.link)
	case fi.Mode()&fs.ModeSymlink != 0:
		// A hard link to a symlink is the same symlink at a new place,
		// where a relative target means something else: check it again.
		target, err := tdir.Readlink(tname)
		if err != nil {
			return x.entryErr(e, "%w", inTree(err, tparts))
		}
		if x.linked != nil {
			delete(x.linked, strings.Join(parts, "/"))
		}
		return x.makeSymlink(e, parts, filepath.ToSlash(target))
	case !fi.Mode().IsRegular():
		return x.entryErr(e, "hard link target %q is not a regular file", e.link)
	}
	if slices.Equal(tparts, parts) {
		return nil // a file linked to itself is already in place
	}

	// Every name of a file costs its size again wherever the tree is
	// copied or turned into a layer, so a hard link is charged in full:
	// otherwise one large file and many links would be a bomb.
	size := fi.Size()
	if size > x.opt.MaxBytes-x.written {
		return x.bomb(e)
	}
	dir, err := x.parentDir(e, parts)
	if err != nil {
		return err
	}
	if err := x.clearSlot(e, dir, parts[len(parts)-1], parts); err != nil {
		return err
	}
	// os.Root links only names under one root: use the deepest directory
	// holding both, still open in cwd. Its walks down to the two names
	// go through directories just checked above, and cost what opening
	// them does.
	shared := 0
	for shared < len(tdirParts) && shared < len(parts)-1 && tdirParts[shared] == parts[shared] {
		shared++
	}
	if err := x.walk(len(tdirParts) - shared + len(parts) - 1 - shared); err != nil {
		return x.entryErr(e, "%w", err)
	}
	base := x.at(shared)
	oldname, newname := nativeJoin(tparts[shared:]), nativeJoin(parts[shared:])
	x.link(tparts, parts)
	if base.Link(oldname, newname) == nil {
		x.written += size
		return nil
	}
	// Some filesystems have no hard links; a copy is equivalent for an
	// image and is charged against MaxBytes like any other content.
	src, err := base.Open(oldname)
	if err != nil {
		return x.entryErr(e, "%w", inTree(err, tparts))
	}
	defer src.Close()
	copyEntry := *e
	copyEntry.exact = false
	return x.writeFile(&copyEntry, parts, fi.Mode().Perm(), src)
}

// deferLink leaves the kept hard link e at parts, whose target include
// left out (or is a link deferred itself), to a second pass, which
// writes the target, and the left-out links it leads through, too. The
// name is cleared as placing the link would have cleared it, for the
// entries after it.
func (x *extractor) deferLink(e *entry, parts []string, target string) error {
	dir, err := x.parentDir(e, parts)
	if err != nil {
		return err
	}
	if err := x.clearSlot(e, dir, parts[len(parts)-1], parts); err != nil {
		return err
	}
	d := x.later
	if d.at == 0 {
		d.at = x.entries
	}
	d.links[strings.Join(parts, "/")] = true
	for n := target; !x.selected(n) && !d.targets[n]; {
		d.targets[n] = true
		next, ok := d.skipped[n]
		if !ok {
			break
		}
		n = next
	}
	return nil
}

// dropForLinks removes, once the second pass has made the links, the
// names written only for them, and the directories that then hold
// nothing (made for them alone: include selected nothing below). A
// removed file's digest goes to a link of it, which holds what was
// written.
func (x *extractor) dropForLinks() error {
	names := make([]string, 0, len(x.forLinks))
	for rel := range x.forLinks {
		names = append(names, rel)
	}
	slices.Sort(names)
	var byGroup map[int][]string
	for _, rel := range names {
		if err := x.dropForLink(rel, &byGroup); err != nil {
			return err
		}
	}
	x.leave(0)
	return nil
}

// dropForLink removes rel, written only for the links to it, and the
// directories that then hold nothing, as dropForLinks does; byGroup
// keeps the names of each link group between calls (nil to start).
func (x *extractor) dropForLink(rel string, byGroup *map[int][]string) error {
	// Reached as entries are, through real directories only: a
	// name below a symlink was never written for a link.
	parts := strings.Split(rel, "/")
	dir, err := x.dirAt(parts[:len(parts)-1], false)
	var nd *notDir
	if errors.As(err, &nd) {
		return nil
	}
	if err != nil {
		return x.fail("%w", err)
	}
	name := parts[len(parts)-1]
	fi, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return x.fail("%w", inTree(err, parts))
	}
	if fi.IsDir() {
		return nil // a parent of what include selects, never written for a link
	}
	if err := dir.Remove(name); err != nil {
		return x.fail("%w", inTree(err, parts))
	}
	g, grouped := x.linked[rel]
	delete(x.linked, rel)
	if sum, ok := x.sums[rel]; ok {
		delete(x.sums, rel)
		if grouped && *byGroup == nil {
			*byGroup = map[int][]string{}
			for n, g := range x.linked {
				(*byGroup)[g] = append((*byGroup)[g], n)
			}
			for _, names := range *byGroup {
				slices.Sort(names)
			}
		}
		for _, n := range (*byGroup)[g] {
			if _, has := x.sums[n]; !has && x.linked[n] == g && !x.forLinks[n] {
				x.sums[n] = sum
				break
			}
		}
	}
	for k := len(parts) - 1; k > 0; k-- {
		empty, err := emptyDir(x.at(k))
		if err != nil {
			return x.fail("%w", inTree(err, parts[:k]))
		}
		if !empty {
			break
		}
		x.leave(k - 1)
		if err := x.at(k - 1).Remove(parts[k-1]); err != nil {
			return x.fail("%w", inTree(err, parts[:k]))
		}
	}
	return nil
}

// emptyDir says whether the directory d holds nothing.
func emptyDir(d *os.Root) (bool, error) {
	f, err := d.Open(".")
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && err != io.EOF {
		return false, err
	}
	return len(names) == 0, nil
}

// CheckLinkTarget applies extraction's symlink policy to a link found
// elsewhere (a local directory): the target of the link at rel (slash
// path from the tree's root) must not be absolute, a drive, or climb out
// of the tree, reading '/' and '\' alike.
func CheckLinkTarget(target, rel string) error {
	_, err := checkLinkTarget(target, rel, false)
	return err
}

// link puts the name at parts in the group of the file at tparts, which
// it is a hard link to (see Options.Links).
func (x *extractor) link(tparts, parts []string) {
	if x.linked == nil {
		return
	}
	target := strings.Join(tparts, "/")
	g, ok := x.linked[target]
	if !ok {
		x.groups++
		g = x.groups
		x.linked[target] = g
	}
	x.linked[strings.Join(parts, "/")] = g
}

// tellWritten gives Options.Written the digest of each file that still
// holds what was written at its name, in the order of the names.
func (x *extractor) tellWritten() {
	rels := make([]string, 0, len(x.sums))
	for rel := range x.sums {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	for _, rel := range rels {
		sum := x.sums[rel]
		x.opt.Written(filepath.Join(x.root.Name(), native(rel)), hex.EncodeToString(sum[:]))
	}
}

// tellLinks gives Options.Links the groups of two names or more.
func (x *extractor) tellLinks() {
	if x.opt.Links == nil {
		return
	}
	byGroup := map[int][]string{}
	for name, g := range x.linked {
		byGroup[g] = append(byGroup[g], name)
	}
	var groups [][]string
	for _, names := range byGroup {
		if len(names) > 1 {
			slices.Sort(names)
			groups = append(groups, names)
		}
	}
	slices.SortFunc(groups, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	for _, names := range groups {
		x.opt.Links(names)
	}
}

// MaxGlobsPerName is the most include patterns with wildcards one name
// may be matched against: those its text begins with before their first
// wildcard, every one for patterns that begin with a wildcard. Filing
// globs by that prefix spares a name those it cannot match, but *x1,
// *x2, ... or bin/*1, bin/*2, ... are all tried on every name (under
// bin/): 1,000 of them over 100,000 entries are 1e8 matches, 9 s on a
// 2-core machine (20,000, as a generated recipe may hold, would be 3
// minutes), where real recipes have a handful.
const MaxGlobsPerName = 1000

// CheckInclude refuses include patterns Extract and NewPatterns would
// refuse, with the index of the pattern at fault.
func CheckInclude(include []string) (int, error) {
	clean, err := cleanPatterns(include)
	if err != nil {
		// cleanPatterns names the pattern; find its index.
		for i, p := range include {
			if _, err := cleanPatterns([]string{p}); err != nil {
				return i, err
			}
		}
		return 0, err
	}
	return checkGlobs(newPatternSet(clean), include)
}

// ErrTooManyGlobs is the error of patterns of which more than
// MaxGlobsPerName could all be tried on one name.
var ErrTooManyGlobs = errors.New("too many include patterns with wildcards")

// checkGlobs refuses a set of which more than MaxGlobsPerName globs
// could all be tried on one name, naming the one (of include, the
// patterns as given) that first makes one too many, in their order: the
// earliest recipe line at fault.
func checkGlobs(s patternSet, include []string) (int, error) {
	i, p, crowded := s.globs.Crowded(MaxGlobsPerName)
	if !crowded {
		return 0, nil
	}
	return i, crowdedErr(include[i], p, "")
}

// checkExtra refuses Extra patterns whose globs, with include's, are
// more than MaxGlobsPerName that could all be tried on one name: a name
// is matched against both. Their globs are counted first, as every
// extraction given them adds them: the include pattern named is the
// first, in its order, that makes one too many.
func checkExtra(include *Patterns, extra patternSet) error {
	if extra.globs.Len() == 0 || include.set.globs.Len()+extra.globs.Len() <= MaxGlobsPerName {
		return nil
	}
	var both globindex.Builder
	for i, p := range extra.all {
		if prefix, glob := literalPrefix(p); glob {
			both.Add(prefix, i)
		}
	}
	for i, p := range include.set.all {
		if prefix, glob := literalPrefix(p); glob {
			both.Add(prefix, len(extra.all)+i)
		}
	}
	i, p, crowded := both.Index().Crowded(MaxGlobsPerName)
	if !crowded {
		return nil
	}
	with := fmt.Sprintf(" with the %d extra patterns with wildcards that select entries besides", extra.globs.Len())
	if i < len(extra.all) {
		return crowdedErr(extra.all[i], p, " (an extra one)"+with)
	}
	return crowdedErr(include.include[i-len(extra.all)], p, with)
}

// crowdedErr says that pattern (which with is said of) makes one glob
// too many of those a name beginning prefix is tried on.
func crowdedErr(pattern, prefix, with string) error {
	if prefix == "" {
		return tooManyGlobs(fmt.Sprintf("include pattern %q%s makes %d that begin with a wildcard; at most %d are allowed, as every entry of the archive is matched against each of them: begin patterns with more of the path (bin/*.so, not *.so), or list names without wildcards (a [, * or ? a name holds escaped: \\[), which are looked up", pattern, with, MaxGlobsPerName+1, MaxGlobsPerName))
	}
	return tooManyGlobs(fmt.Sprintf("include pattern %q%s makes %d with wildcards that a name beginning %q is matched against, each beginning with it or part of it before its first wildcard; at most %d are allowed, as every such entry of the archive is matched against each of them: begin patterns with more of the path, or list names without wildcards (a [, * or ? a name holds escaped: \\[), which are looked up", pattern, with, MaxGlobsPerName+1, prefix, MaxGlobsPerName))
}

// tooManyGlobs is an error of crowdedErr: its text, which is
// ErrTooManyGlobs.
type tooManyGlobs string

func (e tooManyGlobs) Error() string        { return string(e) }
func (e tooManyGlobs) Is(target error) bool { return target == ErrTooManyGlobs }
