package exe

import (
	"debug/pe"
	"encoding/binary"
	"fmt"
	"io"
)

// dosHeaderLen is the size of the DOS header; its last field, at 0x3c, is
// the offset of the PE signature.
const dosHeaderLen = 0x40

func detectPE(r io.ReaderAt, size int64, head []byte) (result, bool, error) {
	// "MZ" alone is a weak magic (text can start with it) and DOS programs
	// are not loadable on any platform pallet builds for, so anything
	// without a PE signature is treated as plain data.
	if len(head) < dosHeaderLen {
		return result{}, false, nil
	}
	sigOff := int64(binary.LittleEndian.Uint32(head[0x3c:]))
	if sigOff+4 > size {
		return result{}, false, nil
	}
	var sig [4]byte
	if err := readAt(r, sig[:], sigOff, "PE signature"); err != nil {
		return result{}, false, err
	}
	if string(sig[:]) != "PE\x00\x00" {
		return result{}, false, nil
	}
	var fh pe.FileHeader
	if err := readStruct(r, sigOff+4, binary.LittleEndian, &fh, "COFF file header"); err != nil {
		return result{}, false, err
	}
	res := single("windows", peArch(fh.Machine), "PE")
	switch fh.Machine {
	case pe.IMAGE_FILE_MACHINE_UNKNOWN:
		// The PE spec defines machine 0 as "applicable to any machine type".
		res.anyWindowsArch = true
	case pe.IMAGE_FILE_MACHINE_I386:
		optOff := sigOff + 4 + int64(binary.Size(fh))
		res.anyWindowsArch = hasCLRHeader(r, optOff, fh.SizeOfOptionalHeader)
	}
	return res, true, nil
}

func peArch(m uint16) string {
	switch m {
	case pe.IMAGE_FILE_MACHINE_AMD64:
		return "amd64"
	case pe.IMAGE_FILE_MACHINE_ARM64:
		return "arm64"
	case pe.IMAGE_FILE_MACHINE_I386:
		return "386"
	case pe.IMAGE_FILE_MACHINE_ARMNT:
		return "arm"
	case pe.IMAGE_FILE_MACHINE_RISCV64:
		return "riscv64"
	case pe.IMAGE_FILE_MACHINE_LOONGARCH64:
		return "loong64"
	case pe.IMAGE_FILE_MACHINE_IA64:
		return "ia64"
	case pe.IMAGE_FILE_MACHINE_UNKNOWN:
		return "any"
	}
	return fmt.Sprintf("pe-machine-0x%04x", m)
}

// hasCLRHeader reports whether the optional header at off has a non-empty
// COM descriptor (CLR runtime header) directory, i.e. the image is a .NET
// assembly. It only relaxes a check, so an unreadable header answers false
// rather than failing.
func hasCLRHeader(r io.ReaderAt, off int64, optSize uint16) bool {
	buf := make([]byte, optSize)
	if n, _ := r.ReadAt(buf, off); n < len(buf) || len(buf) < 2 {
		return false
	}
	// Offsets of NumberOfRvaAndSizes and of the data directories within
	// the PE32 and PE32+ optional headers.
	var countOff, dirOff int
	switch binary.LittleEndian.Uint16(buf) {
	case 0x10b:
		countOff, dirOff = 92, 96
	case 0x20b:
		countOff, dirOff = 108, 112
	default:
		return false
	}
	const idx = pe.IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR
	entry := dirOff + idx*8
	if len(buf) < entry+8 || binary.LittleEndian.Uint32(buf[countOff:]) <= idx {
		return false
	}
	return binary.LittleEndian.Uint32(buf[entry:]) != 0 && binary.LittleEndian.Uint32(buf[entry+4:]) != 0
}
