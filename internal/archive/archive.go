// Package archive extracts downloaded release archives (tarballs and zips)
// into a directory without trusting their contents: entry names, link
// targets and sizes are all treated as hostile until checked.
package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Format identifies an archive format.
type Format string

// Supported archive formats.
const (
	Tar      Format = "tar"
	TarGzip  Format = "tar.gz"
	TarXz    Format = "tar.xz"
	TarZstd  Format = "tar.zst"
	TarBzip2 Format = "tar.bz2"
	Zip      Format = "zip"
)

// Defaults for the limits in Options. Real release archives stay far
// below them: the largest xz and zstd presets use 64 MiB and 128 MiB
// windows, and toolchain tarballs expand to a few GiB.
const (
	DefaultMaxBytes   = 16 << 30
	DefaultMaxEntries = 1_000_000
	DefaultMaxWindow  = 256 << 20
)

const (
	// maxLinkTarget bounds a zip symlink's content, which is read into
	// memory; real targets are far shorter (Linux PATH_MAX is 4096).
	maxLinkTarget = 4096
)

// ErrLimit is wrapped by every error reporting that an archive exceeds
// one of the limits in Options, so that callers can tell an archive that
// is hostile or larger than expected from one that is broken.
var ErrLimit = errors.New("archive limit exceeded")

// limitError is an error that matches ErrLimit: its message, and the
// setting that raises the limit (LimitSetting).
type limitError struct{ msg, setting string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrLimit }

// Settings that raise a limit, as LimitSetting names them.
const (
	settingExtract = "--max-extract, or limits.extract in a recipe"
	settingEntries = "limits.entries in a recipe"
	settingWindow  = "limits.window in a recipe"
)

func limitErr(setting, msg string) error { return &limitError{msg: msg, setting: setting} }

// LimitSetting names what raises the limit err (an ErrLimit) ran into,
// for the caller that says where it was set: "" for another error.
func LimitSetting(err error) string {
	var le *limitError
	if errors.As(err, &le) {
		return le.setting
	}
	return ""
}

// suffixes maps file name endings to formats. Longer endings come first so
// that "x.tar.gz" is not taken for a plain tar by a ".tar" check.
var suffixes = []struct {
	suffix string
	format Format
}{
	{".tar.gz", TarGzip},
	{".tgz", TarGzip},
	{".tar.xz", TarXz},
	{".txz", TarXz},
	{".tar.zst", TarZstd},
	{".tzst", TarZstd},
	{".tar.bz2", TarBzip2},
	{".tbz2", TarBzip2},
	{".tbz", TarBzip2},
	{".tar", Tar},
	{".zip", Zip},
}

// Detect returns the format from the file name (.tar, .tar.gz, .tgz,
// .tar.xz, .txz, .tar.zst, .tzst, .tar.bz2, .tbz2, .tbz, .zip;
// case-insensitive), or ok=false.
func Detect(name string) (Format, bool) {
	lower := strings.ToLower(name)
	for _, s := range suffixes {
		if strings.HasSuffix(lower, s.suffix) && len(lower) > len(s.suffix) {
			return s.format, true
		}
	}
	return "", false
}

// compressions are the magic numbers of the compressions a tar stream
// comes in, by the format pallet reads it as.
var compressions = []struct {
	magic  []byte
	format Format
	name   string
}{
	{[]byte{0x1f, 0x8b}, TarGzip, "gzip"},
	{[]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, TarXz, "xz"},
	{[]byte{0x28, 0xb5, 0x2f, 0xfd}, TarZstd, "zstd"},
}

// SniffLen is how many first bytes of a stream Sniff needs.
const SniffLen = 10

// Sniff says, from the first bytes of a stream (SniffLen are enough),
// how a tar stream in it is compressed: the format pallet reads it as and
// the compression's name (gzip, xz, zstd or bzip2), or Tar and no name
// when it starts with none of their magic numbers.
func Sniff(head []byte) (Format, string) {
	for _, c := range compressions {
		if bytes.HasPrefix(head, c.magic) {
			return c.format, c.name
		}
	}
	if isBzip2(head) {
		return TarBzip2, "bzip2"
	}
	return Tar, ""
}

// isBzip2 reports whether head starts a bzip2 stream holding data: "BZh",
// the block size digit, and the first block's magic (the digits of pi,
// 0x314159265359). "BZh" alone, which BuildKit takes, starts text too; a
// stream of nothing (the end magic at once) holds no tar.
func isBzip2(head []byte) bool {
	return len(head) >= 10 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9' &&
		bytes.Equal(head[4:10], []byte("1AY&SY"))
}

// IsZip reports whether head (4 bytes are enough) starts a zip: with a
// local file header, or with the end record of a zip of no entries. A
// self-extracting zip, which starts with its program, is not seen.
func IsZip(head []byte) bool {
	return bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06"))
}

// Options controls extraction.
type Options struct {
	// Strip is the number of leading path components removed from each
	// entry, like tar --strip-components. Entries with no more components
	// than that are skipped. Unlike GNU tar, "." components (as in
	// "./bin/x") are not counted.
	Strip int

	// Include, if non-empty, restricts extraction to entries whose path
	// (after Strip) matches at least one pattern. Patterns use path.Match
	// syntax on the slash-separated path; a pattern that matches a
	// directory also matches everything below it, and a leading "./" is
	// ignored. Every pattern must match at least one entry, otherwise
	// Extract fails naming the patterns that matched nothing.
	//
	// A hard link (tar's) kept while its target is left out is made
	// all the same, with the target's content: Extract reads the archive
	// a second time, once, writing those targets (and the left-out links
	// a target is itself a hard link to) by their names alone, not what
	// is below them, and removes them, and the directories made for them
	// alone, once the links are made. What dir holds is what the patterns
	// select; the targets count against no pattern, nor against the
	// tree's MaxBytes. The callbacks below are told of each entry once.
	Include []string

	// Patterns, when set, are the Include patterns already prepared
	// (NewPatterns), for a caller that matches names with them too; Include
	// is then left empty.
	Patterns *Patterns

	// Extra patterns also select entries, like Include, but need not match
	// anything. Licence files are taken this way from archives of which
	// only a few binaries are wanted. A name is matched against both, so
	// their globs together are held to MaxGlobsPerName.
	Extra []string

	// Name is how errors name the archive: its URL, say, where src is a
	// temporary download. Empty means src.
	Name string

	// Written, when set, receives each regular file written, by its path
	// (the destination directory joined with the entry's), with the hex
	// sha256 of the content as it was written, once the archive is
	// unpacked, in the order of the paths: a caller that remembers it
	// need not read the file again. A name a later entry replaced is not
	// reported (a hard link put there names another file), nor are hard
	// links: they name a file reported already.
	Written func(path, sha256 string)

	// Dirs, when set, receives each directory the archive holds an entry
	// of its own for, by its slash-separated path below dir (after
	// Strip). The other directories extraction makes are only implied,
	// as parents of the entries below them: an unpacker writing onto an
	// existing tree (Docker's ADD) makes those only where nothing is,
	// and goes through a symlink it finds there.
	Dirs func(rel string)

	// Stripped, when set, is told of each entry other than a directory
	// that Strip removes whole (a LICENSE beside the top directory), by
	// its slash-separated path in the archive, "." components left out:
	// an error about a file not found can say where it went.
	Stripped func(name string)

	// Skipped, when set, is told of each entry Extract does not place
	// (a device node, a named pipe: a file system of the build's has no
	// place for them), by its name in the archive and what it is, where
	// Strip and Include would have placed it.
	Skipped func(name, what string)

	// RootedLinks takes a tar symlink whose target is absolute
	// ("/usr/share/zoneinfo/UTC") as a link from the root of what is
	// unpacked, as a container's root file system reads it, and keeps
	// it as it is, where it is refused otherwise: a root file system's
	// archive holds many (Docker's ADD of one keeps them). Such a link
	// is never followed while unpacking, and one that climbs above the
	// root ("/../x") is still refused.
	RootedLinks bool

	// Headers, when set, receives the mode and owner the header of each
	// tar entry placed gives it (a later entry at the same path comes
	// later), by its slash-separated path below dir (after Strip). What
	// is written on disk is pallet's normalized mode (0755 or 0644 for
	// a file, 0755 for a directory) and the extracting user: an unpacker
	// that keeps them (Docker's ADD) takes them from here.
	Headers func(rel string, h Header)

	// Links, when set, receives each group of names the archive's hard
	// links make one file of, once the archive is unpacked: the names
	// sorted, slash-separated below dir (after Strip), two or more. It
	// is what the archive's entries say, in their order (a later entry
	// at a name takes it out of its group), not what the disk holds:
	// the same archive gives the same groups wherever it is unpacked,
	// and a layer writer can write the later names as links to the
	// first. A hard link to a symlink is a symlink, in no group.
	Links func(names []string)

	// The limits below bound what a hostile archive can cost in disk,
	// memory and time. Sizes an archive declares are never trusted to
	// respect them: content is counted as it is decoded, and a declared
	// size or window can only make Extract fail sooner. Exceeding a limit
	// fails Extract with an error that wraps ErrLimit and names the
	// archive and, where there is one, the entry. The zero value of each
	// means its default.

	// MaxBytes bounds, in bytes, both how much is decompressed and how
	// much the extracted tree holds. Decompressed bytes are, for a
	// tarball, the whole tar stream: the content of every entry, whether
	// extracted or skipped (by Strip, Include or for its type), and the
	// headers; for a zip, the content of the entries extracted (the
	// others are never decompressed). The tree counts every file's
	// content, and a file once for each hard link to it. Zero means
	// DefaultMaxBytes (16 GiB).
	MaxBytes int64

	// MaxEntries bounds the number of entries read from the archive,
	// skipped ones included. It also bounds the directories extraction
	// opens or makes, to 4 for each entry allowed (and 256 more): an
	// archive that lists each directory's entries together opens each
	// directory once, but one that goes back and forth between deep
	// directories would have every entry open all the directories down
	// to it. Zero means DefaultMaxEntries (1,000,000).
	MaxEntries int

	// MaxWindow bounds, in bytes, the history a decompressor is allowed
	// to allocate, which the archive declares in its headers: the
	// dictionary of each xz block and the window of each zstd frame.
	// Archives made with xz --lzma2=dict= over 256 MiB or zstd --long=29
	// and up need it raised. gzip and zip's deflate have a fixed 32 KiB
	// window, and bzip2 blocks of at most 900 kB (its decoder holds one,
	// some 4 MB). Zero means DefaultMaxWindow (256 MiB).
	MaxWindow int64
}

// Extract unpacks the archive file src, of format f, into dir (which must
// exist and be empty).
//
// Extract refuses entries and links that would place anything outside dir,
// or that would once the tree is read on Windows ('\' taken as a
// separator, drive letters as absolute), never writes through a symlink,
// and stops once the archive exceeds the limits in opt. On error, dir may
// hold a partial extraction; the caller is expected to remove it.
func Extract(ctx context.Context, src string, f Format, dir string, opt Options) error {
	name := opt.Name
	if name == "" {
		name = src
	}
	fail := func(err error) error { return fmt.Errorf("extract %s: %w", name, err) }

	switch f {
	case Tar, TarGzip, TarXz, TarZstd, TarBzip2, Zip:
	default:
		return fail(fmt.Errorf("unsupported format %q", f))
	}
	if opt.Strip < 0 || opt.MaxBytes < 0 || opt.MaxEntries < 0 || opt.MaxWindow < 0 {
		return fail(errors.New("negative Strip, MaxBytes, MaxEntries or MaxWindow"))
	}
	opt = withDefaults(opt)
	include := opt.Patterns
	if include == nil {
		var err error
		if include, err = NewPatterns(opt.Include); err != nil {
			return fail(err)
		}
	} else if len(opt.Include) > 0 {
		return fail(errors.New("both Include and Patterns given"))
	}
	clean, err := cleanPatterns(opt.Extra)
	if err != nil {
		return fail(err)
	}
	extra := newPatternSet(clean)
	if err := checkExtra(include, extra); err != nil {
		return fail(err)
	}
	if err := checkEmpty(dir); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}

	root, err := os.OpenRoot(dir)
	if err != nil {
		return fail(err)
	}
	defer root.Close()

	file, err := os.Open(src)
	if err != nil {
		// os.Open already names the path; avoid repeating it.
		return fmt.Errorf("extract: %w", err)
	}
	defer file.Close()

	newExtractor := func() *extractor {
		x := &extractor{
			ctx:      ctx,
			src:      name,
			root:     root,
			opt:      opt,
			patterns: include.set,
			given:    include.include,
			extra:    extra,
			matched:  make([]bool, len(include.set.all)),
			maxWalks: maxWalks(opt.MaxEntries),
			maxNames: maxNames(opt.MaxEntries),
			buf:      make([]byte, 64<<10),
			declared: -1,
		}
		if opt.Links != nil {
			x.linked = map[string]int{}
		}
		if opt.Written != nil {
			x.sums = map[string][sha256.Size]byte{}
		}
		return x
	}
	x := newExtractor()
	if len(include.set.all) > 0 {
		x.later = &deferral{links: map[string]bool{}, targets: map[string]bool{}}
	}
	defer func() { x.leave(0) }()
	run := func() error {
		var err error
		if f == Zip {
			err = x.extractZip(file)
		} else {
			err = x.extractTar(file, f)
		}
		// A cancelled context surfaces from deep inside a decompressor,
		// often wrapped in something unhelpful; report it plainly.
		if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
			return fail(cerr)
		}
		return err
	}
	if err := run(); err != nil {
		return err
	}
	if err := x.checkPatterns(); err != nil {
		return err
	}
	if d := x.later; d != nil && d.at > 0 {
		// Kept hard links whose targets include left out: their content
		// went by unwritten, and a tar is read once, front to back. The
		// archive is a local file: read it again, once, writing those
		// targets too, for the links alone (see Options.Include). It is
		// read again even when every such link was replaced after: the
		// first pass stopped telling the callbacks at the first.
		x.leave(0)
		if err := emptyRoot(root); err != nil {
			return fail(err)
		}
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return fail(err)
		}
		x = newExtractor()
		x.forLinks, x.tellFrom = d.targets, d.at
		if x.linked == nil {
			// To give a removed target's digest to a link of it.
			x.linked = map[string]int{}
		}
		if err := run(); err != nil {
			return err
		}
		if err := x.dropForLinks(); err != nil {
			return err
		}
	}
	x.tellLinks()
	x.tellWritten()
	return nil
}

// emptyRoot removes everything in root, which Extract filled: a second
// pass starts from an empty directory, as the first did.
func emptyRoot(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		if err := root.RemoveAll(n); err != nil {
			return err
		}
	}
	return nil
}

func withDefaults(opt Options) Options {
	if opt.MaxBytes == 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.MaxEntries == 0 {
		opt.MaxEntries = DefaultMaxEntries
	}
	if opt.MaxWindow == 0 {
		opt.MaxWindow = DefaultMaxWindow
	}
	return opt
}

// Patterns are Include patterns made ready to match many names: cleaned
// once, and filed so that a name is tried only against those that could
// match it; cleaned again for each name and tried one by one, the
// 100,000 file names an include may list held a build for minutes on an
// archive of as many entries.
type Patterns struct {
	set     patternSet
	include []string // as given, for errors
}

// NewPatterns prepares include, refusing a malformed pattern, or more
// globs than MaxGlobsPerName one name would be matched against, as
// Extract does.
func NewPatterns(include []string) (*Patterns, error) {
	clean, err := cleanPatterns(include)
	if err != nil {
		return nil, err
	}
	set := newPatternSet(clean)
	if _, err := checkGlobs(set, include); err != nil {
		return nil, err
	}
	return &Patterns{set: set, include: include}, nil
}

// Match reports whether name (a slash path inside an extracted tree)
// matches one of the patterns, with Include's rules.
func (p *Patterns) Match(name string) bool { return p.set.any(name) }

// cleanPatterns normalizes Include patterns to the form entry paths take
// after cleaning, and rejects malformed ones up front so that a typo is
// not reported later as "matched nothing".
func cleanPatterns(include []string) ([]string, error) {
	out := make([]string, len(include))
	for i, p := range include {
		c := path.Clean(p)
		for strings.HasPrefix(c, "./") {
			c = c[2:]
		}
		if c == "." || c == "" {
			return nil, fmt.Errorf("include pattern %q is empty", p)
		}
		if _, err := path.Match(c, ""); err != nil {
			return nil, fmt.Errorf("include pattern %q: %w", p, err)
		}
		out[i] = c
	}
	return out, nil
}

func checkEmpty(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	if len(names) > 0 {
		return fmt.Errorf("destination %s is not empty", dir)
	}
	if err != nil && err != io.EOF {
		return err
	}
	return nil
}

// ctxReader makes every read of the underlying archive fail once ctx is
// done, so a long single entry (or a decompressor chewing through a bomb
// that is being skipped) still notices cancellation.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ctxReaderAt is ctxReader for zip's random access.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// Header is what a tar entry's header says of its mode and owner: the
// permission bits with setuid, setgid and sticky, and the numeric ids.
type Header struct {
	Mode     fs.FileMode
	UID, GID int
	Dir      bool // the entry is a directory
}
