package exe

import (
	"debug/macho"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// magicFat64 is the universal header for slices beyond 4 GiB; debug/macho
// has no constant for it.
const magicFat64 = 0xcafebabf

// maxFatArchs separates universal binaries from Java class files, which
// share the 0xcafebabe magic. In a class file the next four bytes are the
// minor and major version; the major version is at least 45, so the word
// is at least 45 where a universal binary's architecture count is a handful.
// file(1) draws the line at the same place.
const maxFatArchs = 30

func isMachO(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	switch binary.BigEndian.Uint32(head) {
	case macho.Magic32, macho.Magic64, macho.MagicFat, magicFat64:
		return true
	}
	switch binary.LittleEndian.Uint32(head) {
	case macho.Magic32, macho.Magic64:
		return true
	}
	return false
}

func detectMachO(r io.ReaderAt, size int64, head []byte) (result, bool, error) {
	magic := binary.BigEndian.Uint32(head)
	if magic == macho.MagicFat || magic == magicFat64 {
		return detectFat(r, size, head, magic == magicFat64)
	}
	var bo binary.ByteOrder = binary.BigEndian
	if magic != macho.Magic32 && magic != macho.Magic64 {
		bo = binary.LittleEndian
	}
	var h macho.FileHeader
	if err := readStruct(r, 0, bo, &h, "Mach-O header"); err != nil {
		return result{}, false, err
	}
	return single("darwin", machoArch(h.Cpu), "Mach-O"), true, nil
}

func detectFat(r io.ReaderAt, size int64, head []byte, is64 bool) (result, bool, error) {
	if len(head) < 8 {
		return result{}, false, nil
	}
	n := binary.BigEndian.Uint32(head[4:])
	if n == 0 || n > maxFatArchs {
		return result{}, false, nil
	}
	// fat_arch is cputype, cpusubtype, offset, size, align (5 x uint32);
	// fat_arch_64 widens offset and size to uint64 and adds a reserved word.
	entryLen := 20
	if is64 {
		entryLen = 32
	}
	buf := make([]byte, int(n)*entryLen)
	if err := readAt(r, buf, 8, "Mach-O universal header"); err != nil {
		return result{}, false, err
	}
	var archs []string
	for i := range int(n) {
		e := buf[i*entryLen:]
		cpu := macho.Cpu(binary.BigEndian.Uint32(e))
		var off, sz uint64
		if is64 {
			off, sz = binary.BigEndian.Uint64(e[8:]), binary.BigEndian.Uint64(e[16:])
		} else {
			off, sz = uint64(binary.BigEndian.Uint32(e[8:])), uint64(binary.BigEndian.Uint32(e[12:]))
		}
		if off > uint64(size) || sz > uint64(size)-off {
			return result{}, false, corrupt("Mach-O universal slice %d (offset %d, size %d) extends past end of file (%d bytes)", i, off, sz, size)
		}
		// arm64 and arm64e both map to arm64; list each name once.
		if a := machoArch(cpu); !slices.Contains(archs, a) {
			archs = append(archs, a)
		}
	}
	res := result{
		Platform: Platform{OS: "darwin", Arch: joinArchs(archs), Format: "Mach-O"},
		archs:    archs,
	}
	return res, true, nil
}

// cpuArm64_32 is the ILP32 arm64 ABI used by watchOS.
const cpuArm64_32 macho.Cpu = 0x0200000c

func machoArch(c macho.Cpu) string {
	switch c {
	case macho.CpuAmd64:
		return "amd64"
	case macho.CpuArm64:
		return "arm64"
	case macho.Cpu386:
		return "386"
	case macho.CpuArm:
		return "arm"
	case macho.CpuPpc:
		return "ppc"
	case macho.CpuPpc64:
		return "ppc64"
	case cpuArm64_32:
		return "arm64_32"
	}
	return fmt.Sprintf("macho-cpu-0x%x", uint32(c))
}
