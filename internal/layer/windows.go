package layer

import (
	"archive/tar"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pallet-dev/pallet/internal/tree"
)

// Windows file attributes written in MSWINDOWS.fileattr.
const (
	attrDirectory    = 0x10
	attrArchive      = 0x20
	attrReparsePoint = 0x400
)

// wcidirs ends the name of the file in which hcsshim's layer importer
// keeps a directory's metadata, beside the directory (compared in upper case).
const wcidirs = ".$WCIDIRS$"

// PAX record names read by Windows' layer importer (hcsshim/go-winio).
const (
	paxFileAttr     = "MSWINDOWS.fileattr"
	paxRawSD        = "MSWINDOWS.rawsd"
	paxCreationTime = "LIBARCHIVE.creationtime"
)

// Security descriptors written on every entry (DirectorySDDL, FileSDDL).
// A layer without them is reported to import but not run once pulled.
var (
	dirSD  = base64.StdEncoding.EncodeToString(SecurityDescriptor(true))
	fileSD = base64.StdEncoding.EncodeToString(SecurityDescriptor(false))
)

// windowsEncoder writes the layout hcsshim's importer creates entry by
// entry: "Hives" and "Files" first, then everything under Files/. For a
// base layer, Files/ alone and no Windows records.
type windowsEncoder struct {
	base bool
	// links types each symlink as a directory or file link: Windows
	// needs to know at creation.
	links linkTyper
	// seen catches paths Windows takes for one (collisionKey), which the
	// importer would refuse as "file exists".
	seen map[string]string
	// baseDirs are the base's directories' descriptors (Options.BaseDir).
	baseDirs func(string) *tree.WinDir
}

func newWindowsEncoder(entries []tree.Entry, base bool, opt Options) *windowsEncoder {
	return &windowsEncoder{base: base, links: newLinkTyper(entries, opt), seen: map[string]string{}, baseDirs: opt.BaseDir}
}

// baseDir is what the base gives the directory e, which the layer lists
// again, or nil for pallet's own (Options.BaseDir).
func (w *windowsEncoder) baseDir(e tree.Entry) *baseWinDir {
	if w.baseDirs == nil || e.Kind != tree.Dir {
		return nil
	}
	if d := w.baseDirs(e.Path); d != nil && d.RawSD != "" {
		return (*baseWinDir)(d)
	}
	return nil
}

// baseWinDir is a base's directory as its layer entry here says it.
type baseWinDir tree.WinDir

// attr are the base's attributes without FILE_ATTRIBUTE_REPARSE_POINT:
// the entry is a plain directory, with no reparse data to go with it.
// FILE_ATTRIBUTE_DIRECTORY is always there, so that go-winio makes a
// directory of it.
func (d *baseWinDir) attr() int {
	return int(d.Attr&^attrReparsePoint | attrDirectory)
}

// lastWindowsTime is the last time a Windows layer can carry: go-winio's
// backuptar turns each entry's times into FILETIMEs through
// time.Time.UnixNano, which overflows after it, and the file would get a
// garbage time, or a negative one that setting its times refuses.
var lastWindowsTime = time.Unix(0, math.MaxInt64)

// CheckWindowsEpoch refuses an epoch a Windows layer cannot carry (after
// lastWindowsTime), so that a recipe can say so at its epoch line before
// any layer is written.
func CheckWindowsEpoch(epoch time.Time) error {
	if epoch.After(lastWindowsTime) {
		return fmt.Errorf("epoch %d (%s) is after %s, the last time Windows' layer importer reads (go-winio converts times through Unix nanoseconds); give an earlier epoch", epoch.Unix(), epoch.UTC().Format(time.RFC3339), lastWindowsTime.UTC().Format(time.RFC3339))
	}
	return nil
}

func (w *windowsEncoder) start(tw *tar.Writer, epoch time.Time) error {
	if err := CheckWindowsEpoch(epoch); err != nil {
		return err
	}
	roots := []string{"Hives", "Files"}
	if w.base {
		roots = roots[1:]
	}
	for _, name := range roots {
		hdr := &tar.Header{
			Name:     name + "/",
			Typeflag: tar.TypeDir,
			Mode:     0o755,
			ModTime:  epoch,
			Format:   tar.FormatPAX,
		}
		if !w.base {
			// The roots take no security descriptor, as Windows' own
			// export and BuildKit write them: one here would become the
			// ACL of C:\ in the container.
			hdr.PAXRecords = windowsRecords(attrDirectory, "", epoch)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	return nil
}

func (w *windowsEncoder) header(e tree.Entry, epoch time.Time) (*tar.Header, error) {
	if err := WindowsName(e.Path); err != nil {
		return nil, err
	}
	key := collisionKey(e.Path)
	if prev, ok := w.seen[key]; ok {
		return nil, fmt.Errorf("collides with %s: Windows paths are case-insensitive", ShowPath(prev))
	}
	w.seen[key] = e.Path
	var link string
	if e.Kind == tree.Symlink {
		var err error
		if link, err = windowsLinkTarget(e.Path, e.Link); err != nil {
			return nil, err
		}
	}
	hdr, err := baseHeader(e, "Files/"+e.Path, epoch)
	if err != nil {
		return nil, err
	}
	if e.Kind == tree.Symlink {
		// hcsshim's importer writes the target into the reparse point
		// as it is (go-winio's EncodeReparsePoint), and Windows resolves
		// a relative target with '\' only: one holding a '/' fails to
		// open (the file name is invalid), as Go's os.Symlink on
		// Windows notes where it converts them.
		hdr.Linkname = link
	}
	if w.base {
		return hdr, nil
	}
	switch e.Kind {
	case tree.Dir:
		attr, sd := attrDirectory, dirSD
		if d := w.baseDir(e); d != nil {
			attr, sd = d.attr(), d.RawSD
		}
		hdr.PAXRecords = windowsRecords(attr, sd, epoch)
	case tree.File:
		hdr.PAXRecords = windowsRecords(attrArchive, fileSD, epoch)
	case tree.Symlink:
		// Targets stay as written (not prefixed with Files/): they are
		// resolved on the running system, where Files/ is C:\.
		attr, sd := attrReparsePoint|attrArchive, fileSD
		if isDir, _ := w.links.dirLink(e); isDir {
			attr, sd = attrReparsePoint|attrDirectory, dirSD
		}
		hdr.PAXRecords = windowsRecords(attr, sd, epoch)
	}
	return hdr, nil
}

// windowsLinkTarget checks the target of a symlink at p as Windows reads
// it, where '\' separates components like '/', and returns it as a
// Windows link holds it: components joined with '\', the empty and "."
// ones left out (".", alone, for none). Targets stay inside the image's C:\ (Files/): an absolute target
// ("/x", "\x", "\\server\share") or one with a drive ("C:\x", "C:x")
// is refused, and so is one whose ".." climb above the root. A ".." after a
// named component is refused too, as the archive extractor does: if the
// component is itself a link, in this layer or one below, "x/.." is the
// parent of wherever x points.
func windowsLinkTarget(p, target string) (string, error) {
	t := strings.ReplaceAll(target, `\`, "/")
	switch {
	case t == "":
		return "", errors.New("symlink target is empty")
	case strings.IndexByte(t, 0) >= 0:
		return "", errors.New("symlink target contains a NUL byte")
	case strings.HasPrefix(t, "/"):
		return "", fmt.Errorf("symlink target %q is absolute; Windows links in a layer must be relative", target)
	case strings.IndexByte(t, ':') >= 0:
		// A drive ("C:") or an alternate data stream: neither stays in the layer.
		return "", fmt.Errorf("symlink target %q names a drive or a stream (':'); Windows links in a layer must be relative", target)
	case len(utf16.Encode([]rune(t))) > maxLinkTarget:
		return "", fmt.Errorf("symlink target of %d UTF-16 units: a Windows link holds %d", len(utf16.Encode([]rune(t))), maxLinkTarget)
	}
	depth := strings.Count(p, "/")
	named := false
	var parts []string
	for c := range strings.SplitSeq(t, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			if depth--; depth < 0 {
				return "", fmt.Errorf("symlink target %q leaves the image root", target)
			}
			if named {
				return "", fmt.Errorf("symlink target %q may leave the image root (\"..\" after a named component)", target)
			}
		default:
			depth++
			named = true
		}
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return ".", nil
	}
	return strings.Join(parts, `\`), nil
}

// maxLinkTarget is the longest target, in UTF-16 units, a Windows link
// can hold as the importer makes it: go-winio's EncodeReparsePoint writes
// a relative target twice (substitute and print name), each with a NUL,
// after 20 bytes of header and flags, and a reparse buffer holds at most
// 16 KiB (MAXIMUM_REPARSE_DATA_BUFFER_SIZE): 20+4(n+1) <= 16384.
const maxLinkTarget = 4090

func windowsRecords(attr int, sd string, epoch time.Time) map[string]string {
	r := map[string]string{
		paxFileAttr:     strconv.Itoa(attr),
		paxCreationTime: strconv.FormatInt(epoch.Unix(), 10),
	}
	if sd != "" {
		r[paxRawSD] = sd
	}
	return r
}

// WindowsName refuses a path Windows cannot create as written: a ':'
// would make an alternate data stream of the file before it, reserved
// device names and the characters <>"|?* cannot be created, and a
// trailing dot or space is silently dropped, so two files could merge.
// A name ending in .$wcidirs$ is the importer's own: hcsshim's layer
// writer keeps each directory's metadata in a file NAME.$wcidirs$ beside
// it, created new, so such a file beside a directory NAME fails the
// import ("file exists"), and alone it is read as a directory's metadata.
func WindowsName(p string) error { return windowsName(p, true) }

// NTFSName is WindowsName for a name hcsshim's importer creates: it
// creates each entry by NtCreateFile relative to its directory's handle,
// below the Win32 layer that drops a trailing dot or space and opens a
// device for CON or aux.txt, so such a name in a base's layer is made as
// written and pulls; pallet writes none of its own (WindowsName). What
// NTFS itself refuses, or the importer reserves, is refused alike.
func NTFSName(p string) error { return windowsName(p, false) }

func windowsName(p string, win32 bool) error {
	for _, c := range strings.Split(p, "/") {
		if !utf8.ValidString(c) {
			return fmt.Errorf("%q is not UTF-8, and Windows file names (UTF-16) cannot hold it", c)
		}
		if n := utf16Len(c); n > maxNTFSName {
			return fmt.Errorf("%.40q... is a name of %d UTF-16 units, and NTFS holds at most %d in one (the Windows importer fails: the file name is invalid)", c, n, maxNTFSName)
		}
		if strings.Contains(c, `\`) {
			// As it is where it can be shown so (%q doubles the
			// backslash), quoted when it holds what a terminal would act on.
			return fmt.Errorf("%s holds a backslash, which Windows reads as a separator (a Linux name may hold one: leave it out of what a Windows image places)", ShowPath(c))
		}
		if i := strings.IndexAny(c, `:<>"|?*`); i >= 0 {
			return fmt.Errorf("%q contains %q, which Windows file names cannot", c, c[i])
		}
		for _, r := range c {
			if r < 0x20 {
				return fmt.Errorf("%q contains a control character, which Windows file names cannot", c)
			}
		}
		if win32 && (strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ")) {
			return fmt.Errorf("%q ends with a dot or space, which Windows drops from file names", c)
		}
		if win32 && reservedOnWindows(c) {
			return fmt.Errorf("%q is a reserved device name on Windows", c)
		}
		if strings.HasSuffix(strings.ToUpper(c), wcidirs) {
			return fmt.Errorf("%q ends with %s, which the Windows layer importer reserves for its directory metadata files", c, wcidirs)
		}
	}
	return nil
}

// maxNTFSName is the longest name, in UTF-16 units, NTFS holds in a
// directory; a Linux file name's 255 bytes never exceed it, but a name
// given as a destination, or an entry's in a base layer, may.
const maxNTFSName = 255

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// reservedOnWindows says whether Windows opens a device for the name c:
// the part before its first dot, trailing spaces dropped ("CON .txt" is
// CON), is CON, PRN, AUX, NUL, COM or LPT with a digit or a superscript
// ¹²³, or the console's CONIN$ and CONOUT$, in any case.
func reservedOnWindows(c string) bool {
	stem, _, _ := strings.Cut(c, ".")
	switch s := strings.ToUpper(strings.TrimRight(stem, " ")); s {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	default:
		if !strings.HasPrefix(s, "COM") && !strings.HasPrefix(s, "LPT") {
			return false
		}
		switch n := s[3:]; n {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return true
		}
	}
	return false
}
