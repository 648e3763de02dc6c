// Package hive writes minimal Windows registry hive files: the regf format
// of Windows\System32\config\SYSTEM and its siblings, reduced to one empty
// root key with its security cell.
//
// A Windows base layer must hold the five hives DEFAULT, SAM, SECURITY,
// SOFTWARE and SYSTEM under Files\Windows\System32\config: hcsshim's
// ensureBaseLayer creates them as empty files when they are missing, and
// ProcessBaseLayer (HCS) then validates them. Empty files passed up to
// Windows Server 2022; "on Windows Server 2025 and later, these must be
// valid registry hives, not empty files" (Microsoft's host-process base
// image build script), which is why that image now ships minimal ones.
// Microsoft's were made with reg.exe load/unload and carry the build
// machine's SIDs, logon session and clock; the hives written here carry
// none of them.
//
// Layout of what Minimal writes (all integers little-endian; offsets in
// cells are relative to the first hive bin, file offset 4096, as the regf
// format defines them):
//
//	0x0000  base block ("regf"), 4096 bytes, checksum at 0x1FC
//	0x1000  hive bin ("hbin"), 4096 bytes:
//	          0x00 bin header, 32 bytes
//	          0x20 root key node cell ("nk"), allocated
//	          ...  security cell ("sk"), allocated, referenced by the nk
//	          ...  one free cell up to the end of the bin
//
// The field offsets are those documented by the regf format write-ups
// (libyal's "Windows NT Registry File (REGF) format", hivex's hivex.c
// structs) and visible in Microsoft's own minimal hives.
package hive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf16"
)

// Base block (file header) fields.
const (
	blockSize = 4096 // base block and hive bins come in multiples of this

	baseSignature     = "regf"
	offSequence1      = 0x004 // primary sequence number
	offSequence2      = 0x008 // secondary: equal to the primary in a clean hive
	offBaseTimestamp  = 0x00C // FILETIME of the last write
	offMajorVersion   = 0x014
	offMinorVersion   = 0x018
	offFileType       = 0x01C
	offFileFormat     = 0x020
	offRootCell       = 0x024 // offset of the root nk cell
	offHiveBinsSize   = 0x028 // bytes of hive bins after the base block
	offClustering     = 0x02C
	offFileName       = 0x030 // UTF-16LE, for debugging only
	fileNameBytes     = 64    // the field holds 31 characters and a NUL
	offChecksum       = 0x1FC // XOR of the 127 dwords before it
	sequenceNumber    = 1
	majorVersion      = 1
	minorVersion      = 3 // 1.3 loads on every Windows since XP; Microsoft's hpc hives are 1.3
	fileTypePrimary   = 0 // a primary hive file, not a log
	fileFormatDirect  = 1 // "direct memory load": the only format Windows writes
	clusteringFactor  = 1 // sectors per cluster, always 1
	checksumAllOnes   = 0xFFFFFFFF
	checksumIfAllOnes = 0xFFFFFFFE // the format reserves -1 and 0 and maps them
	checksumIfZero    = 1
)

// Hive bin header fields.
const (
	binSignature    = "hbin"
	binHeaderSize   = 32
	offBinOffset    = 0x04 // this bin's offset from the first bin
	offBinSize      = 0x08
	offBinTimestamp = 0x14 // meaningful in the first bin only
)

// Cell layout. A cell starts with a signed 32-bit size that counts the size
// field itself: negative when allocated, positive when free. Sizes are
// multiples of 8.
const (
	cellAlign     = 8
	cellSizeField = 4
	cellNil       = 0xFFFFFFFF // HCELL_NIL: "no cell"
)

// Key node ("nk") fields, relative to the start of the cell data (after the
// size field).
const (
	nkSignature        = "nk"
	offNkFlags         = 0x02
	offNkTimestamp     = 0x04
	offNkParent        = 0x10
	offNkSubkeys       = 0x14 // count of stable subkeys
	offNkVolSubkeys    = 0x18 // count of volatile subkeys
	offNkSubkeyList    = 0x1C
	offNkVolSubkeyList = 0x20
	offNkValues        = 0x24 // count of values
	offNkValueList     = 0x28
	offNkSecurity      = 0x2C // offset of the key's sk cell
	offNkClass         = 0x30
	offNkNameLength    = 0x48
	offNkClassLength   = 0x4A
	nkFixedSize        = 0x4C // the name follows

	// The root key is the hive's entry point (KEY_HIVE_ENTRY), cannot be
	// deleted (KEY_NO_DELETE), and stores its name as 8-bit characters
	// (KEY_COMP_NAME), as Windows writes it.
	keyHiveEntry = 0x0004
	keyNoDelete  = 0x0008
	keyCompName  = 0x0020
	rootKeyFlags = keyHiveEntry | keyNoDelete | keyCompName

	// maxKeyName is the longest key name Windows accepts.
	maxKeyName = 255
)

// Security cell ("sk") fields. Security cells form a circular doubly-linked
// list; with a single one, both links point to itself.
const (
	skSignature     = "sk"
	offSkFlink      = 0x04
	offSkBlink      = 0x08
	offSkReferences = 0x0C // how many keys use this cell
	offSkLength     = 0x10
	skFixedSize     = 0x14 // the self-relative security descriptor follows
)

// FILETIME counts 100 ns intervals since 1601-01-01 UTC.
const (
	filetimeUnixOffset     = 116444736000000000 // 1970-01-01 as a FILETIME
	filetimeTicksPerSecond = 10000000
	filetimeTickNanos      = 100
)

// Minimal returns an 8 KiB registry hive holding one root key named name,
// with no subkeys and no values, secured by RootSecurityDescriptor.
// Every timestamp in it is t (as a FILETIME; zero for a zero or pre-1601
// t), so the bytes depend only on name and t: no GUIDs, no machine SIDs.
func Minimal(name string, t time.Time) ([]byte, error) {
	if err := checkKeyName(name); err != nil {
		return nil, fmt.Errorf("hive root key %q: %w", name, err)
	}
	ft := filetime(t)
	sd := RootSecurityDescriptor()

	nkSize := align(cellSizeField + nkFixedSize + len(name))
	skSize := align(cellSizeField + skFixedSize + len(sd))
	rootCell := binHeaderSize
	skCell := rootCell + nkSize
	freeCell := skCell + skSize
	if freeCell+cellAlign > blockSize {
		return nil, fmt.Errorf("hive root key %q: cells of %d bytes do not fit one hive bin", name, freeCell)
	}

	b := make([]byte, 2*blockSize)
	writeBaseBlock(b[:blockSize], name, ft, rootCell)
	bin := b[blockSize:]
	writeBinHeader(bin, ft)
	writeRootKey(bin[rootCell:rootCell+nkSize], name, ft, skCell)
	writeSecurity(bin[skCell:skCell+skSize], sd, skCell)
	putCellSize(bin[freeCell:], blockSize-freeCell, false)
	return b, nil
}

func checkKeyName(name string) error {
	if name == "" {
		return errors.New("a key name cannot be empty")
	}
	if len(name) > maxKeyName {
		return fmt.Errorf("longer than %d characters", maxKeyName)
	}
	for _, c := range []byte(name) {
		// KEY_COMP_NAME stores one byte per character; '\' separates keys.
		if c < 0x20 || c > 0x7E || c == '\\' {
			return fmt.Errorf("%q is not a printable ASCII character allowed in a key name", c)
		}
	}
	return nil
}

func writeBaseBlock(b []byte, name string, ft uint64, rootCell int) {
	copy(b, baseSignature)
	le := binary.LittleEndian
	le.PutUint32(b[offSequence1:], sequenceNumber)
	le.PutUint32(b[offSequence2:], sequenceNumber)
	le.PutUint64(b[offBaseTimestamp:], ft)
	le.PutUint32(b[offMajorVersion:], majorVersion)
	le.PutUint32(b[offMinorVersion:], minorVersion)
	le.PutUint32(b[offFileType:], fileTypePrimary)
	le.PutUint32(b[offFileFormat:], fileFormatDirect)
	le.PutUint32(b[offRootCell:], uint32(rootCell))
	le.PutUint32(b[offHiveBinsSize:], blockSize)
	le.PutUint32(b[offClustering:], clusteringFactor)
	fn := utf16.Encode([]rune(name))
	for i := 0; i < len(fn) && 2*i < fileNameBytes-2; i++ {
		le.PutUint16(b[offFileName+2*i:], fn[i])
	}
	le.PutUint32(b[offChecksum:], Checksum(b))
}

// Checksum is the base block checksum: the XOR of the 127 little-endian
// dwords before offset 0x1FC, where the results 0xFFFFFFFF and 0 are
// stored as 0xFFFFFFFE and 1.
func Checksum(base []byte) uint32 {
	var x uint32
	for i := 0; i < offChecksum; i += 4 {
		x ^= binary.LittleEndian.Uint32(base[i:])
	}
	switch x {
	case checksumAllOnes:
		return checksumIfAllOnes
	case 0:
		return checksumIfZero
	}
	return x
}

func writeBinHeader(bin []byte, ft uint64) {
	copy(bin, binSignature)
	le := binary.LittleEndian
	le.PutUint32(bin[offBinOffset:], 0)
	le.PutUint32(bin[offBinSize:], blockSize)
	le.PutUint64(bin[offBinTimestamp:], ft)
}

func writeRootKey(cell []byte, name string, ft uint64, skCell int) {
	putCellSize(cell, len(cell), true)
	d := cell[cellSizeField:]
	le := binary.LittleEndian
	copy(d, nkSignature)
	le.PutUint16(d[offNkFlags:], rootKeyFlags)
	le.PutUint64(d[offNkTimestamp:], ft)
	// The root has no parent in its own hive; Windows links it into the
	// registry when it loads the hive and checks no parent for the root.
	le.PutUint32(d[offNkParent:], cellNil)
	le.PutUint32(d[offNkSubkeys:], 0)
	le.PutUint32(d[offNkVolSubkeys:], 0)
	le.PutUint32(d[offNkSubkeyList:], cellNil)
	le.PutUint32(d[offNkVolSubkeyList:], cellNil)
	le.PutUint32(d[offNkValues:], 0)
	le.PutUint32(d[offNkValueList:], cellNil)
	le.PutUint32(d[offNkSecurity:], uint32(skCell))
	le.PutUint32(d[offNkClass:], cellNil)
	le.PutUint16(d[offNkNameLength:], uint16(len(name)))
	le.PutUint16(d[offNkClassLength:], 0)
	copy(d[nkFixedSize:], name)
}

func writeSecurity(cell, sd []byte, self int) {
	putCellSize(cell, len(cell), true)
	d := cell[cellSizeField:]
	le := binary.LittleEndian
	copy(d, skSignature)
	le.PutUint32(d[offSkFlink:], uint32(self))
	le.PutUint32(d[offSkBlink:], uint32(self))
	le.PutUint32(d[offSkReferences:], 1) // the root key
	le.PutUint32(d[offSkLength:], uint32(len(sd)))
	copy(d[skFixedSize:], sd)
}

func putCellSize(cell []byte, size int, allocated bool) {
	v := int32(size)
	if allocated {
		v = -v
	}
	binary.LittleEndian.PutUint32(cell, uint32(v))
}

func align(n int) int { return (n + cellAlign - 1) &^ (cellAlign - 1) }

// filetime converts t to a FILETIME, 0 for a zero t or one before 1601.
func filetime(t time.Time) uint64 {
	secs := t.Unix() + filetimeUnixOffset/filetimeTicksPerSecond
	if t.IsZero() || secs < 0 {
		return 0
	}
	return uint64(secs)*filetimeTicksPerSecond + uint64(t.Nanosecond()/filetimeTickNanos)
}
