package layer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The security descriptors of a Windows layer's entries, as BuildKit
// writes them (util/winlayers) and a COPY on a Windows builder leaves them:
// owner Administrators, group SYSTEM, full control for Administrators and
// SYSTEM, read and execute for Users. Directories add what lets a
// non-admin user, such as nanoserver's ContainerUser, create files under
// them: Users may add files and subdirectories in the subtree, and CREATOR
// OWNER gets full control of what it creates there. SDDL names those two
// rights by their directory-service aliases: LC is 0x4, on a directory
// FILE_ADD_SUBDIRECTORY, and DC is 0x2, FILE_ADD_FILE. Both carry CI only,
// so they reach subdirectories and not files, where the same bits would
// mean append and write.
const (
	// DirectorySDDL is the security descriptor of every directory but
	// one the base holds with its own (Options.BaseDir), which Users
	// may not add to.
	DirectorySDDL = "O:BAG:SYD:(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)(A;;FA;;;BA)(A;OICIIO;GA;;;CO)(A;OICI;0x1200a9;;;BU)(A;CI;LC;;;BU)(A;CI;DC;;;BU)"
	// FileSDDL is the security descriptor of every file and file symlink.
	FileSDDL = "O:BAG:SYD:(A;;FA;;;BA)(A;;FA;;;SY)(A;;0x1200a9;;;BU)"
)

// Well-known SIDs, by their SDDL aliases.
const (
	sidAdministrators = "S-1-5-32-544" // BA
	sidSystem         = "S-1-5-18"     // SY
	sidUsers          = "S-1-5-32-545" // BU
	sidCreatorOwner   = "S-1-3-0"      // CO
)

// Access masks (winnt.h).
const (
	fileAllAccess      = 0x001F01FF // FA
	fileGenericReadExe = 0x001200A9 // FILE_GENERIC_READ | FILE_GENERIC_EXECUTE
	fileAddFile        = 0x00000002 // on a directory; SDDL "DC"
	fileAddSubdir      = 0x00000004 // on a directory; SDDL "LC"
	genericAll         = 0x10000000 // GA
)

// ACE types and flags.
const (
	accessAllowedAce    = 0x00
	accessDeniedAce     = 0x01
	objectInheritAce    = 0x01 // OI
	containerInheritAce = 0x02 // CI
	noPropagateInherit  = 0x04 // NP
	inheritOnlyAce      = 0x08 // IO: applies to children only
	inheritedAce        = 0x10 // ID
)

// Security descriptor layout and control bits.
const (
	seDaclPresent     = 0x0004
	seDaclAutoInherit = 0x0400
	seDaclProtected   = 0x1000
	seSelfRelative    = 0x8000
	aclRevision       = 2
	sdRevision        = 1
	sdHeaderSize      = 20
	aclHeaderSize     = 8
	aceHeaderPlusMask = 8
)

// ACE is one access control entry of a DACL.
type ACE struct {
	Type  uint8
	Flags uint8
	Mask  uint32
	SID   string // S-1-...
}

var (
	dirACEs = []ACE{
		{accessAllowedAce, objectInheritAce | containerInheritAce, fileAllAccess, sidAdministrators},
		{accessAllowedAce, objectInheritAce | containerInheritAce, fileAllAccess, sidSystem},
		{accessAllowedAce, 0, fileAllAccess, sidAdministrators},
		{accessAllowedAce, objectInheritAce | containerInheritAce | inheritOnlyAce, genericAll, sidCreatorOwner},
		{accessAllowedAce, objectInheritAce | containerInheritAce, fileGenericReadExe, sidUsers},
		{accessAllowedAce, containerInheritAce, fileAddSubdir, sidUsers},
		{accessAllowedAce, containerInheritAce, fileAddFile, sidUsers},
	}
	fileACEs = []ACE{
		{accessAllowedAce, 0, fileAllAccess, sidAdministrators},
		{accessAllowedAce, 0, fileAllAccess, sidSystem},
		{accessAllowedAce, 0, fileGenericReadExe, sidUsers},
	}
)

// SecurityDescriptor returns the self-relative security descriptor of a
// directory (DirectorySDDL) or a file (FileSDDL): header, owner, group,
// DACL, no SACL, in the order and with the control bits BuildKit uses.
func SecurityDescriptor(dir bool) []byte {
	aces := fileACEs
	if dir {
		aces = dirACEs
	}
	sd, err := encodeSecurityDescriptor(sidAdministrators, sidSystem, seSelfRelative|seDaclPresent, aces)
	if err != nil {
		panic(fmt.Sprintf("built-in security descriptor: %v", err)) // constants above are wrong
	}
	return sd
}

func encodeSecurityDescriptor(owner, group string, control uint16, aces []ACE) ([]byte, error) {
	ob, err := encodeSID(owner)
	if err != nil {
		return nil, fmt.Errorf("owner: %w", err)
	}
	gb, err := encodeSID(group)
	if err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	acl := make([]byte, aclHeaderSize)
	for i, a := range aces {
		sb, err := encodeSID(a.SID)
		if err != nil {
			return nil, fmt.Errorf("ACE %d: %w", i, err)
		}
		ace := make([]byte, aceHeaderPlusMask, aceHeaderPlusMask+len(sb))
		ace[0], ace[1] = a.Type, a.Flags
		binary.LittleEndian.PutUint16(ace[2:], uint16(aceHeaderPlusMask+len(sb)))
		binary.LittleEndian.PutUint32(ace[4:], a.Mask)
		acl = append(acl, append(ace, sb...)...)
	}
	acl[0] = aclRevision
	binary.LittleEndian.PutUint16(acl[2:], uint16(len(acl)))
	binary.LittleEndian.PutUint16(acl[4:], uint16(len(aces)))

	sd := make([]byte, sdHeaderSize)
	sd[0] = sdRevision
	binary.LittleEndian.PutUint16(sd[2:], control)
	ownerOff := sdHeaderSize
	groupOff := ownerOff + len(ob)
	daclOff := groupOff + len(gb)
	binary.LittleEndian.PutUint32(sd[4:], uint32(ownerOff))
	binary.LittleEndian.PutUint32(sd[8:], uint32(groupOff))
	binary.LittleEndian.PutUint32(sd[12:], 0) // no SACL
	binary.LittleEndian.PutUint32(sd[16:], uint32(daclOff))
	sd = append(sd, ob...)
	sd = append(sd, gb...)
	return append(sd, acl...), nil
}

// encodeSID writes S-1-AUTHORITY-SUB-... in binary: revision, count, the
// 48-bit big-endian authority, then the sub-authorities little-endian.
func encodeSID(s string) ([]byte, error) {
	parts := strings.Split(s, "-")
	if len(parts) < 3 || parts[0] != "S" || parts[1] != "1" || len(parts) > 3+15 {
		return nil, fmt.Errorf("SID %q is not of the form S-1-AUTHORITY-SUBAUTHORITY", s)
	}
	auth, err := strconv.ParseUint(parts[2], 10, 48)
	if err != nil {
		return nil, fmt.Errorf("SID %q authority: %w", s, err)
	}
	subs := parts[3:]
	b := make([]byte, 8+4*len(subs))
	b[0], b[1] = 1, byte(len(subs))
	for i := 0; i < 6; i++ {
		b[2+i] = byte(auth >> (8 * (5 - i)))
	}
	for i, p := range subs {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("SID %q sub-authority %d: %w", s, i, err)
		}
		binary.LittleEndian.PutUint32(b[8+4*i:], uint32(v))
	}
	return b, nil
}

// SDDL renders the descriptor in Security Descriptor Definition Language,
// the way Windows prints one (ConvertSecurityDescriptorToStringSecurity-
// Descriptor): well-known SIDs and access masks by their aliases, other
// masks in hex. It lets a test compare a binary descriptor with the SDDL
// it is documented by.
func (s *SecurityInfo) SDDL() string {
	var b strings.Builder
	b.WriteString("O:" + sddlSID(s.Owner) + "G:" + sddlSID(s.Group) + "D:")
	if s.Control&seDaclProtected != 0 {
		b.WriteString("P")
	}
	if s.Control&seDaclAutoInherit != 0 {
		b.WriteString("AI")
	}
	for _, a := range s.ACEs {
		t := "A"
		if a.Type == accessDeniedAce {
			t = "D"
		}
		fmt.Fprintf(&b, "(%s;%s;%s;;;%s)", t, sddlACEFlags(a.Flags), sddlMask(a.Mask), sddlSID(a.SID))
	}
	return b.String()
}

// printedAliases are the aliases SDDL writes in place of their SIDs
// (sddlSIDs says which SID each names); others are written out.
var printedAliases = []string{"BA", "SY", "BU", "CO", "WD", "AU"}

func sddlSID(s string) string {
	for _, a := range printedAliases {
		if sddlSIDs[a] == s {
			return a
		}
	}
	return s
}

func sddlACEFlags(f uint8) string {
	var b strings.Builder
	for _, fl := range []struct {
		bit  uint8
		name string
	}{{objectInheritAce, "OI"}, {containerInheritAce, "CI"}, {noPropagateInherit, "NP"}, {inheritOnlyAce, "IO"}, {inheritedAce, "ID"}} {
		if f&fl.bit != 0 {
			b.WriteString(fl.name)
		}
	}
	return b.String()
}

// Access-mask aliases: whole masks first, then single rights that several
// can be combined from, as Windows tries them.
var (
	maskAliases = []struct {
		mask uint32
		name string
	}{{genericAll, "GA"}, {fileAllAccess, "FA"}, {0x00120089, "FR"}, {0x00120116, "FW"}, {0x001200A0, "FX"}, {0x000F003F, "KA"}, {0x00020019, "KR"}}
	rightAliases = []struct {
		mask uint32
		name string
	}{
		{0x80000000, "GR"}, {0x40000000, "GW"}, {0x20000000, "GX"},
		{0x00080000, "WO"}, {0x00040000, "WD"}, {0x00020000, "RC"}, {0x00010000, "SD"},
		{0x00000100, "CR"}, {0x00000080, "LO"}, {0x00000040, "DT"}, {0x00000020, "WP"},
		{0x00000010, "RP"}, {0x00000008, "SW"}, {0x00000004, "LC"}, {0x00000002, "DC"}, {0x00000001, "CC"},
	}
)

func sddlMask(m uint32) string {
	for _, a := range maskAliases {
		if m == a.mask {
			return a.name
		}
	}
	var b strings.Builder
	rest := m
	for _, a := range rightAliases {
		if rest&a.mask != 0 {
			b.WriteString(a.name)
			rest &^= a.mask
		}
	}
	if rest != 0 || m == 0 {
		return fmt.Sprintf("%#x", m)
	}
	return b.String()
}

// More control bits an SDDL string may set on a DACL.
const seDaclAutoInheritReq = 0x0100

// SecurityDescriptorFromSDDL turns the SDDL a layer gives in
// MSWINDOWS.sd into the self-relative descriptor go-winio makes of it:
// its reader falls back on that record where a layer has no
// MSWINDOWS.rawsd, as go-winio's writer made them before it wrote raw
// descriptors. It reads what Windows writes
// (ConvertSecurityDescriptorToStringSecurityDescriptor): an owner, a
// group and a DACL, its P, AI and AR flags, allow and deny ACEs with
// their inheritance flags, rights as a number or two-letter aliases, and
// SIDs written out or by an alias that names the same SID on every
// machine. Anything else is an error: a SACL, object ACEs, and an alias
// such as DA or LA, which Windows resolves against the domain or machine
// that imports the layer, so that pallet cannot know what it names.
func SecurityDescriptorFromSDDL(s string) ([]byte, error) {
	var owner, group string
	var control uint16 = seSelfRelative
	var aces []ACE
	rest := s
	for rest != "" {
		if len(rest) < 2 || rest[1] != ':' {
			return nil, fmt.Errorf("SDDL %q: %q is no section (O:, G:, D:)", s, rest)
		}
		tag := rest[0]
		rest = rest[2:]
		end := sddlSectionEnd(rest)
		body := rest[:end]
		rest = rest[end:]
		switch tag {
		case 'O', 'G':
			sid, err := sddlReadSID(body)
			if err != nil {
				return nil, fmt.Errorf("SDDL %q: %c: %w", s, tag, err)
			}
			if tag == 'O' {
				owner = sid
			} else {
				group = sid
			}
		case 'D':
			flags, list, _ := strings.Cut(body, "(")
			if list != "" {
				list = "(" + list
			}
			for f := flags; f != ""; {
				switch {
				case strings.HasPrefix(f, "P"):
					control |= seDaclProtected
					f = f[1:]
				case strings.HasPrefix(f, "AI"):
					control |= seDaclAutoInherit
					f = f[2:]
				case strings.HasPrefix(f, "AR"):
					control |= seDaclAutoInheritReq
					f = f[2:]
				default:
					return nil, fmt.Errorf("SDDL %q: DACL flag %q", s, f)
				}
			}
			control |= seDaclPresent
			for list != "" {
				i := strings.IndexByte(list, ')')
				if list[0] != '(' || i < 0 {
					return nil, fmt.Errorf("SDDL %q: ACE list %q", s, list)
				}
				a, err := sddlReadACE(list[1:i])
				if err != nil {
					return nil, fmt.Errorf("SDDL %q: ACE (%s): %w", s, list[1:i], err)
				}
				aces = append(aces, a)
				list = list[i+1:]
			}
		default:
			return nil, fmt.Errorf("SDDL %q: section %c: only an owner, a group and a DACL are read", s, tag)
		}
	}
	if owner == "" || group == "" || control&seDaclPresent == 0 {
		return nil, fmt.Errorf("SDDL %q: want an owner, a group and a DACL", s)
	}
	return encodeSecurityDescriptor(owner, group, control, aces)
}

// sddlSectionEnd is where the section starting s ends: at the next
// section's tag outside an ACE.
func sddlSectionEnd(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && i+1 < len(s) && s[i+1] == ':' && strings.IndexByte("OGDS", c) >= 0:
			return i
		}
	}
	return len(s)
}

func sddlReadACE(a string) (ACE, error) {
	f := strings.Split(a, ";")
	if len(f) != 6 {
		return ACE{}, fmt.Errorf("%d fields, want 6", len(f))
	}
	var ace ACE
	switch f[0] {
	case "A":
		ace.Type = accessAllowedAce
	case "D":
		ace.Type = accessDeniedAce
	default:
		return ACE{}, fmt.Errorf("type %q: only allow (A) and deny (D) are read", f[0])
	}
	for fl := f[1]; fl != ""; fl = fl[2:] {
		if len(fl) < 2 {
			return ACE{}, fmt.Errorf("flags %q", f[1])
		}
		switch fl[:2] {
		case "OI":
			ace.Flags |= objectInheritAce
		case "CI":
			ace.Flags |= containerInheritAce
		case "NP":
			ace.Flags |= noPropagateInherit
		case "IO":
			ace.Flags |= inheritOnlyAce
		case "ID":
			ace.Flags |= inheritedAce
		default:
			return ACE{}, fmt.Errorf("flag %q", fl[:2])
		}
	}
	if f[3] != "" || f[4] != "" {
		return ACE{}, errors.New("an object ACE")
	}
	mask, err := sddlReadMask(f[2])
	if err != nil {
		return ACE{}, err
	}
	ace.Mask = mask
	if ace.SID, err = sddlReadSID(f[5]); err != nil {
		return ACE{}, err
	}
	return ace, nil
}

func sddlReadMask(m string) (uint32, error) {
	// A number is read as Windows reads it (wcstoul, base 0): 0x hex,
	// 0 octal, else decimal; Windows itself writes hex.
	if m != "" && m[0] >= '0' && m[0] <= '9' {
		v, err := strconv.ParseUint(m, 0, 32)
		if err != nil {
			return 0, fmt.Errorf("rights %q: %w", m, err)
		}
		return uint32(v), nil
	}
	var mask uint32
	for r := m; r != ""; r = r[2:] {
		if len(r) < 2 {
			return 0, fmt.Errorf("rights %q", m)
		}
		v, ok := sddlRight(r[:2])
		if !ok {
			return 0, fmt.Errorf("right %q", r[:2])
		}
		mask |= v
	}
	if mask == 0 {
		return 0, fmt.Errorf("rights %q: none", m)
	}
	return mask, nil
}

func sddlRight(a string) (uint32, bool) {
	for _, r := range maskAliases {
		if r.name == a {
			return r.mask, true
		}
	}
	for _, r := range rightAliases {
		if r.name == a {
			return r.mask, true
		}
	}
	switch a {
	case "KW":
		return 0x00020006, true
	case "KX":
		return 0x00020019, true
	}
	return 0, false
}

// sddlSIDs are the SDDL aliases that name one SID on every machine.
var sddlSIDs = map[string]string{
	"AN": "S-1-5-7", "AO": "S-1-5-32-548", "AU": "S-1-5-11", "BA": sidAdministrators,
	"BG": "S-1-5-32-546", "BO": "S-1-5-32-551", "BU": sidUsers, "CG": "S-1-3-1",
	"CO": sidCreatorOwner, "IU": "S-1-5-4", "LS": "S-1-5-19", "NS": "S-1-5-20",
	"NU": "S-1-5-2", "OW": "S-1-3-4", "PO": "S-1-5-32-550", "PS": "S-1-5-10",
	"PU": "S-1-5-32-547", "RC": "S-1-5-12", "RD": "S-1-5-32-555", "RE": "S-1-5-32-552",
	"RU": "S-1-5-32-554", "SO": "S-1-5-32-549", "SU": "S-1-5-6", "SY": sidSystem,
	"WD": "S-1-1-0", "WR": "S-1-5-33", "AC": "S-1-15-2-1", "IS": "S-1-5-32-568",
}

func sddlReadSID(s string) (string, error) {
	if v, ok := sddlSIDs[s]; ok {
		return v, nil
	}
	if strings.HasPrefix(s, "S-1-") {
		if _, err := encodeSID(s); err != nil {
			return "", err
		}
		return s, nil
	}
	return "", fmt.Errorf("SID %q: not written out, nor an alias that names one SID on every machine", s)
}
