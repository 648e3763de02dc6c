package hive

import "encoding/binary"

// RootSDDL is the security of the root key of a hive written by Minimal:
// owned by Administrators with group SYSTEM, full control (KEY_ALL_ACCESS)
// for Administrators and SYSTEM, read (KEY_READ) for Users, each inherited
// by subkeys (CI). It names well-known SIDs only, where a hive made with
// reg.exe carries the SIDs of the machine and logon session that made it.
const RootSDDL = "O:BAG:SYD:(A;CI;KA;;;BA)(A;CI;KA;;;SY)(A;CI;KR;;;BU)"

// Security descriptor encoding (winnt.h).
const (
	sdRevision       = 1
	sdHeaderSize     = 20
	seDaclPresent    = 0x0004
	seSelfRelative   = 0x8000
	aclRevision      = 2
	aclHeaderSize    = 8
	aceHeaderAndMask = 8
	accessAllowed    = 0x00
	containerInherit = 0x02
	keyAllAccess     = 0x000F003F
	keyRead          = 0x00020019
)

// Well-known SIDs, as encoded: revision 1, sub-authority count, the 48-bit
// big-endian NT authority (5), then the sub-authorities little-endian.
var (
	sidAdministrators = encodeSID(32, 544) // S-1-5-32-544, BA
	sidSystem         = encodeSID(18)      // S-1-5-18, SY
	sidUsers          = encodeSID(32, 545) // S-1-5-32-545, BU
)

func encodeSID(subs ...uint32) []byte {
	b := make([]byte, 8+4*len(subs))
	b[0] = 1
	b[1] = byte(len(subs))
	b[7] = 5 // SECURITY_NT_AUTHORITY
	for i, s := range subs {
		binary.LittleEndian.PutUint32(b[8+4*i:], s)
	}
	return b
}

// RootSecurityDescriptor returns RootSDDL as a self-relative security
// descriptor, the form an sk cell stores: header, owner, group, DACL.
func RootSecurityDescriptor() []byte {
	aces := []struct {
		mask uint32
		sid  []byte
	}{
		{keyAllAccess, sidAdministrators},
		{keyAllAccess, sidSystem},
		{keyRead, sidUsers},
	}
	acl := make([]byte, aclHeaderSize)
	for _, a := range aces {
		ace := make([]byte, aceHeaderAndMask, aceHeaderAndMask+len(a.sid))
		ace[0] = accessAllowed
		ace[1] = containerInherit
		binary.LittleEndian.PutUint16(ace[2:], uint16(aceHeaderAndMask+len(a.sid)))
		binary.LittleEndian.PutUint32(ace[4:], a.mask)
		acl = append(acl, append(ace, a.sid...)...)
	}
	acl[0] = aclRevision
	binary.LittleEndian.PutUint16(acl[2:], uint16(len(acl)))
	binary.LittleEndian.PutUint16(acl[4:], uint16(len(aces)))

	sd := make([]byte, sdHeaderSize)
	sd[0] = sdRevision
	binary.LittleEndian.PutUint16(sd[2:], seSelfRelative|seDaclPresent)
	owner := sdHeaderSize
	group := owner + len(sidAdministrators)
	dacl := group + len(sidSystem)
	binary.LittleEndian.PutUint32(sd[4:], uint32(owner))
	binary.LittleEndian.PutUint32(sd[8:], uint32(group))
	binary.LittleEndian.PutUint32(sd[16:], uint32(dacl)) // no SACL: offset 12 stays 0
	sd = append(sd, sidAdministrators...)
	sd = append(sd, sidSystem...)
	return append(sd, acl...)
}
