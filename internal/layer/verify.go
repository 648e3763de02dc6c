package layer

import (
	"archive/tar"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/tree"
)

// SecurityInfo is a self-relative security descriptor as read back.
type SecurityInfo struct {
	Owner, Group string
	// Control holds the descriptor's SE_* control bits.
	Control uint16
	// ACEs is the DACL, in order.
	ACEs []ACE
	// Grants maps each SID to the access the DACL allows it on the object
	// itself: the union of its access-allowed ACEs that are not
	// inherit-only.
	Grants map[string]uint32
}

// ParseSecurityDescriptor reads a self-relative security descriptor as
// Windows would: revision 1, the self-relative flag, owner, group and DACL
// offsets inside the blob, and well-formed SIDs and ACEs (access-allowed
// or access-denied).
func ParseSecurityDescriptor(b []byte) (*SecurityInfo, error) {
	if len(b) < sdHeaderSize {
		return nil, fmt.Errorf("descriptor of %d bytes", len(b))
	}
	if b[0] != sdRevision {
		return nil, fmt.Errorf("revision %d, want 1", b[0])
	}
	info := &SecurityInfo{Control: binary.LittleEndian.Uint16(b[2:]), Grants: map[string]uint32{}}
	if info.Control&seSelfRelative == 0 {
		return nil, fmt.Errorf("control %#x lacks SE_SELF_RELATIVE", info.Control)
	}
	var offs [3]int
	for i, at := range []int{4, 8, 16} { // owner, group, DACL
		o := int(binary.LittleEndian.Uint32(b[at:]))
		if o < sdHeaderSize || o >= len(b) {
			return nil, fmt.Errorf("offset %d at byte %d is outside the %d-byte blob", o, at, len(b))
		}
		offs[i] = o
	}
	var err error
	if info.Owner, _, err = parseSID(b[offs[0]:]); err != nil {
		return nil, fmt.Errorf("owner: %w", err)
	}
	if info.Group, _, err = parseSID(b[offs[1]:]); err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	if info.ACEs, err = parseACL(b[offs[2]:]); err != nil {
		return nil, err
	}
	for _, a := range info.ACEs {
		if a.Type == accessAllowedAce && a.Flags&inheritOnlyAce == 0 {
			info.Grants[a.SID] |= a.Mask
		}
	}
	return info, nil
}

func parseACL(acl []byte) ([]ACE, error) {
	if len(acl) < aclHeaderSize || acl[0] != aclRevision {
		return nil, errors.New("bad ACL header")
	}
	size := int(binary.LittleEndian.Uint16(acl[2:]))
	count := int(binary.LittleEndian.Uint16(acl[4:]))
	if size > len(acl) {
		return nil, fmt.Errorf("ACL size %d beyond the blob", size)
	}
	var aces []ACE
	p := aclHeaderSize
	for i := 0; i < count; i++ {
		if p+aceHeaderPlusMask > size {
			return nil, fmt.Errorf("ACE %d beyond the ACL", i)
		}
		aceSize := int(binary.LittleEndian.Uint16(acl[p+2:]))
		if aceSize < aceHeaderPlusMask || p+aceSize > size {
			return nil, fmt.Errorf("ACE %d size %d", i, aceSize)
		}
		if t := acl[p]; t != accessAllowedAce && t != accessDeniedAce {
			return nil, fmt.Errorf("ACE %d has type %d; only access-allowed and access-denied ACEs are expected", i, t)
		}
		who, n, err := parseSID(acl[p+aceHeaderPlusMask : p+aceSize])
		if err != nil {
			return nil, fmt.Errorf("ACE %d: %w", i, err)
		}
		if aceHeaderPlusMask+n != aceSize {
			return nil, fmt.Errorf("ACE %d size %d, its SID ends at %d", i, aceSize, aceHeaderPlusMask+n)
		}
		aces = append(aces, ACE{Type: acl[p], Flags: acl[p+1], Mask: binary.LittleEndian.Uint32(acl[p+4:]), SID: who})
		p += aceSize
	}
	if p != size {
		return nil, fmt.Errorf("ACEs end at %d, ACL size is %d", p, size)
	}
	return aces, nil
}

// parseSID renders a binary SID as S-1-AUTHORITY-SUB-... and returns its size.
func parseSID(b []byte) (string, int, error) {
	if len(b) < 8 || b[0] != 1 {
		return "", 0, errors.New("bad SID header")
	}
	n := int(b[1])
	size := 8 + 4*n
	if len(b) < size {
		return "", 0, errors.New("SID truncated")
	}
	var auth uint64
	for i := 0; i < 6; i++ {
		auth = auth<<8 | uint64(b[2+i])
	}
	s := "S-1-" + strconv.FormatUint(auth, 10)
	for i := 0; i < n; i++ {
		s += "-" + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[8+4*i:])), 10)
	}
	return s, size, nil
}

// WindowsEntry is one entry of a Windows layer as read back.
type WindowsEntry struct {
	Header   *tar.Header
	Security *SecurityInfo
}

// walkWindows reads a Windows layer tar entry by entry and checks its
// layout: the roots first, in order, as directories; every other path under
// a root; each parent before its children; no path twice, comparing names
// without case (collisionKey), names Windows can create (WindowsName), and
// times go-winio can read. check sees each entry (i counts from 0) and reports what
// else is wrong with it.
func walkWindows(r io.Reader, roots []string, check func(i int, h *tar.Header) error) error {
	tr := tar.NewReader(r)
	// seen finds duplicates as pallet refuses them (collisionKey); found
	// finds parents as NTFS does (ntfsKey), which folds less.
	seen, found := map[string]bool{}, map[string]bool{}
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(h.Name, "/")
		fail := func(format string, a ...any) error {
			return fmt.Errorf("entry %d %s: %s", i, name, fmt.Sprintf(format, a...))
		}
		if i < len(roots) {
			if name != roots[i] || h.Typeflag != tar.TypeDir {
				return fail("the %s entry must be the directory %s", [...]string{"first", "second"}[i], roots[i])
			}
		} else {
			slash := strings.IndexByte(name, '/')
			if slash < 0 || !slices.Contains(roots, name[:slash]) {
				under := slices.Clone(roots)
				slices.Reverse(under) // Files/ first: where content belongs
				return fail("not under %s/", strings.Join(under, "/ or "))
			}
			if parent := name[:strings.LastIndex(name, "/")]; !found[NTFSKey(parent)] {
				return fail("parent %s does not come before it", parent)
			}
			if err := WindowsName(name[slash+1:]); err != nil {
				return fail("%v", err)
			}
		}
		if h.ModTime.After(lastWindowsTime) {
			return fail("time %s is after %s, the last go-winio reads", h.ModTime.UTC().Format(time.RFC3339), lastWindowsTime.UTC().Format(time.RFC3339))
		}
		if seen[collisionKey(name)] {
			return fail("written twice (Windows compares names without case)")
		}
		seen[collisionKey(name)] = true
		found[NTFSKey(name)] = true
		if err := check(i, h); err != nil {
			return fail("%v", err)
		}
	}
}

// VerifyWindows reads a Windows layer tar entry by entry and checks what
// the Windows importer relies on: Hives and Files first, every other path
// under Files/ (or Hives/), each parent before its children, no path twice
// (ignoring case as NTFS does), names Windows can create, times the
// importer can read, symlink targets without the Files/ prefix
// that stay inside it (see windowsLinkTarget), a link whose target the
// layer itself holds typed as that target is (a directory link to a
// directory, a file link to anything else), on every
// entry the file attributes and a creation time, and on every entry but
// the two roots a valid security descriptor. It returns the entries, for
// callers to check contents.
func VerifyWindows(r io.Reader) ([]WindowsEntry, error) {
	var out []WindowsEntry
	files := linkIndex{entries: map[string]tree.Entry{}}
	err := walkWindows(r, []string{"Hives", "Files"}, func(i int, h *tar.Header) error {
		if p, ok := strings.CutPrefix(strings.TrimSuffix(h.Name, "/"), "Files/"); ok {
			files.entries[NTFSKey(p)] = headerEntry(p, h)
		}
		attr, err := strconv.Atoi(h.PAXRecords[paxFileAttr])
		if err != nil {
			return fmt.Errorf("%s %q", paxFileAttr, h.PAXRecords[paxFileAttr])
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if attr != attrDirectory {
				return fmt.Errorf("directory with %s %d, want %d", paxFileAttr, attr, attrDirectory)
			}
		case tar.TypeReg:
			if attr != attrArchive {
				return fmt.Errorf("file with %s %d, want %d", paxFileAttr, attr, attrArchive)
			}
		case tar.TypeSymlink:
			if attr&attrReparsePoint == 0 {
				return errors.New("symlink without the reparse-point attribute")
			}
			if strings.HasPrefix(h.Linkname, "Files/") {
				return fmt.Errorf("symlink target %q carries the Files/ prefix", h.Linkname)
			}
			if _, err := windowsLinkTarget(strings.TrimPrefix(h.Name, "Files/"), h.Linkname); err != nil {
				return err
			}
		}
		if _, err := strconv.ParseFloat(h.PAXRecords[paxCreationTime], 64); err != nil {
			return fmt.Errorf("%s %q", paxCreationTime, h.PAXRecords[paxCreationTime])
		}
		if i < 2 {
			if _, ok := h.PAXRecords[paxRawSD]; ok {
				return errors.New("a root with a security descriptor: it would become the ACL of C:\\")
			}
			out = append(out, WindowsEntry{Header: h})
			return nil
		}
		raw, err := base64.StdEncoding.DecodeString(h.PAXRecords[paxRawSD])
		if err != nil || len(raw) == 0 {
			return fmt.Errorf("%s missing or not base64", paxRawSD)
		}
		sec, err := ParseSecurityDescriptor(raw)
		if err != nil {
			return fmt.Errorf("%s: %v", paxRawSD, err)
		}
		out = append(out, WindowsEntry{Header: h, Security: sec})
		return nil
	})
	if err != nil {
		return out, err
	}
	return out, checkLinkTypes(out, files)
}

func headerEntry(p string, h *tar.Header) tree.Entry {
	e := tree.Entry{Path: p, Kind: tree.File, Link: h.Linkname}
	switch h.Typeflag {
	case tar.TypeDir:
		e.Kind = tree.Dir
	case tar.TypeSymlink:
		e.Kind = tree.Symlink
	}
	return e
}

// checkLinkTypes refuses a link typed against what its layer holds at its
// target: Windows opens a directory only through a directory link, and a
// file only through a file link. A target outside the layer is not known
// here (the writer types those from the whole image).
func checkLinkTypes(entries []WindowsEntry, files linkIndex) error {
	for i, e := range entries {
		h := e.Header
		if h.Typeflag != tar.TypeSymlink {
			continue
		}
		p := strings.TrimPrefix(h.Name, "Files/")
		to, ok := linkDest(p, h.Linkname)
		if !ok {
			continue
		}
		kind, known := files.resolve(to, 0)
		if !known {
			continue
		}
		attr, _ := strconv.Atoi(h.PAXRecords[paxFileAttr])
		if isDir := kind == tree.Dir; isDir != (attr&attrDirectory != 0) {
			return fmt.Errorf("entry %d %s: a link to a %s typed with %s %d", i, h.Name, kind, paxFileAttr, attr)
		}
	}
	return nil
}

// VerifyWindowsBase reads a base layer as pallet writes the built-in
// host-process base, in the shape of Microsoft's: Files first and every
// other path under it, parents first, no path twice (as NTFS compares), no
// Hives (the importer makes a base layer's hives) and no Windows records.
func VerifyWindowsBase(r io.Reader) ([]*tar.Header, error) {
	var out []*tar.Header
	err := walkWindows(r, []string{"Files"}, func(_ int, h *tar.Header) error {
		for k := range h.PAXRecords {
			if strings.HasPrefix(k, "MSWINDOWS.") || strings.HasPrefix(k, "LIBARCHIVE.") {
				return fmt.Errorf("a Windows record, %s, in a base layer", k)
			}
		}
		out = append(out, h)
		return nil
	})
	return out, err
}
