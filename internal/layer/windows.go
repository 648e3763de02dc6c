package layer

import (
	"archive/tar"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// Windows file attributes written in MSWINDOWS.fileattr.
const (
	attrDirectory    = 0x10
	attrArchive      = 0x20
	attrReparsePoint = 0x400
)

// PAX record names read by Windows' layer importer (hcsshim/go-winio).
const (
	paxFileAttr     = "MSWINDOWS.fileattr"
	paxRawSD        = "MSWINDOWS.rawsd"
	paxCreationTime = "LIBARCHIVE.creationtime"
)

// Security descriptors written on every entry. A layer without them is
// reported to import but not run once pulled; with them, files are owned
// by Administrators, writable by Administrators and SYSTEM, and readable
// and executable by Users, which is what a COPY on a Windows builder gives.
var (
	dirSD  = base64.StdEncoding.EncodeToString(SecurityDescriptor(true))
	fileSD = base64.StdEncoding.EncodeToString(SecurityDescriptor(false))
)

// windowsEncoder writes the layout hcsshim's importer creates entry by
// entry: "Hives" and "Files" first, then everything under Files/. For a
// base layer, Files/ alone and no Windows records.
type windowsEncoder struct {
	base bool
	// dirs lets a symlink be marked as a directory link when its target is
	// a directory in the same layer; Windows needs to know at creation.
	dirs map[string]bool
	// seen catches paths equal under Windows' case-insensitive names,
	// which the importer would refuse as "file exists".
	seen map[string]string
}

func newWindowsEncoder(entries []tree.Entry, base bool) *windowsEncoder {
	w := &windowsEncoder{base: base, dirs: map[string]bool{}, seen: map[string]string{}}
	for _, e := range entries {
		if e.Kind == tree.Dir {
			w.dirs[e.Path] = true
		}
	}
	return w
}

func (w *windowsEncoder) start(tw *tar.Writer, epoch time.Time) error {
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
	if err := windowsName(e.Path); err != nil {
		return nil, err
	}
	folded := strings.ToLower(e.Path)
	if prev, ok := w.seen[folded]; ok {
		return nil, fmt.Errorf("collides with %s: Windows paths are case-insensitive", prev)
	}
	w.seen[folded] = e.Path
	hdr, err := baseHeader(e, "Files/"+e.Path, epoch)
	if err != nil || w.base {
		return hdr, err
	}
	switch e.Kind {
	case tree.Dir:
		hdr.PAXRecords = windowsRecords(attrDirectory, dirSD, epoch)
	case tree.File:
		hdr.PAXRecords = windowsRecords(attrArchive, fileSD, epoch)
	case tree.Symlink:
		// Targets stay as written (not prefixed with Files/): they are
		// resolved on the running system, where Files/ is C:\.
		attr, sd := attrReparsePoint|attrArchive, fileSD
		if w.dirs[resolveLink(e.Path, e.Link)] {
			attr, sd = attrReparsePoint|attrDirectory, dirSD
		}
		hdr.Linkname = strings.ReplaceAll(e.Link, "\\", "/")
		hdr.PAXRecords = windowsRecords(attr, sd, epoch)
	}
	return hdr, nil
}

func resolveLink(p, target string) string {
	target = strings.ReplaceAll(target, "\\", "/")
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return path.Join(path.Dir(p), target)
}

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

// windowsName refuses a path Windows cannot create as written: a ':'
// would make an alternate data stream of the file before it, reserved
// device names and the characters <>"|?* cannot be created, and a
// trailing dot or space is silently dropped, so two files could merge.
func windowsName(p string) error {
	for _, c := range strings.Split(p, "/") {
		if i := strings.IndexAny(c, `:<>"|?*\`); i >= 0 {
			return fmt.Errorf("%q contains %q, which Windows file names cannot", c, c[i])
		}
		for _, r := range c {
			if r < 0x20 {
				return fmt.Errorf("%q contains a control character, which Windows file names cannot", c)
			}
		}
		if strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") {
			return fmt.Errorf("%q ends with a dot or space, which Windows drops from file names", c)
		}
		stem, _, _ := strings.Cut(c, ".")
		switch s := strings.ToUpper(stem); {
		case s == "CON", s == "PRN", s == "AUX", s == "NUL",
			len(s) == 4 && (strings.HasPrefix(s, "COM") || strings.HasPrefix(s, "LPT")) && s[3] >= '0' && s[3] <= '9':
			return fmt.Errorf("%q is a reserved device name on Windows", c)
		}
	}
	return nil
}

// Well-known SIDs as (identifier authority, sub-authorities).
var (
	sidSystem         = sid{5, []uint32{18}}      // S-1-5-18
	sidAdministrators = sid{5, []uint32{32, 544}} // S-1-5-32-544
	sidUsers          = sid{5, []uint32{32, 545}} // S-1-5-32-545
)

type sid struct {
	authority uint64
	subs      []uint32
}

func (s sid) bytes() []byte {
	b := make([]byte, 8+4*len(s.subs))
	b[0] = 1 // revision
	b[1] = byte(len(s.subs))
	// The identifier authority is a 48-bit big-endian value.
	for i := 0; i < 6; i++ {
		b[2+i] = byte(s.authority >> (8 * (5 - i)))
	}
	for i, sub := range s.subs {
		binary.LittleEndian.PutUint32(b[8+4*i:], sub)
	}
	return b
}

// Access masks and flags from the Windows SDK.
const (
	fileAllAccess       = 0x001F01FF
	fileGenericReadExec = 0x001200A9
	objectInheritAce    = 0x01
	containerInheritAce = 0x02
	accessAllowedAce    = 0x00

	seDaclPresent     = 0x0004
	seDaclAutoInherit = 0x0400
	seSelfRelative    = 0x8000
	aclRevision       = 2
	sdRevision        = 1
	sdHeaderSize      = 20
	aclHeaderSize     = 8
	aceHeaderPlusMask = 8
)

// SecurityDescriptor returns a self-relative security descriptor: owner and
// group Administrators, and a DACL granting full control to Administrators
// and SYSTEM and read/execute to Users. Directory ACEs are inheritable.
func SecurityDescriptor(dir bool) []byte {
	var flags byte
	if dir {
		flags = objectInheritAce | containerInheritAce
	}
	aces := []struct {
		mask uint32
		who  sid
	}{
		{fileAllAccess, sidAdministrators},
		{fileAllAccess, sidSystem},
		{fileGenericReadExec, sidUsers},
	}
	var acl []byte
	for _, a := range aces {
		sb := a.who.bytes()
		ace := make([]byte, aceHeaderPlusMask, aceHeaderPlusMask+len(sb))
		ace[0] = accessAllowedAce
		ace[1] = flags
		binary.LittleEndian.PutUint16(ace[2:], uint16(aceHeaderPlusMask+len(sb)))
		binary.LittleEndian.PutUint32(ace[4:], a.mask)
		acl = append(acl, append(ace, sb...)...)
	}
	aclHdr := make([]byte, aclHeaderSize)
	aclHdr[0] = aclRevision
	binary.LittleEndian.PutUint16(aclHdr[2:], uint16(aclHeaderSize+len(acl)))
	binary.LittleEndian.PutUint16(aclHdr[4:], uint16(len(aces)))
	acl = append(aclHdr, acl...)

	owner := sidAdministrators.bytes()
	group := sidAdministrators.bytes()
	sd := make([]byte, sdHeaderSize)
	sd[0] = sdRevision
	binary.LittleEndian.PutUint16(sd[2:], seSelfRelative|seDaclPresent|seDaclAutoInherit)
	ownerOff := sdHeaderSize
	groupOff := ownerOff + len(owner)
	daclOff := groupOff + len(group)
	binary.LittleEndian.PutUint32(sd[4:], uint32(ownerOff))
	binary.LittleEndian.PutUint32(sd[8:], uint32(groupOff))
	binary.LittleEndian.PutUint32(sd[12:], 0) // no SACL
	binary.LittleEndian.PutUint32(sd[16:], uint32(daclOff))
	sd = append(sd, owner...)
	sd = append(sd, group...)
	return append(sd, acl...)
}
