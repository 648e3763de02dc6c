package exe

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

func detectELF(r io.ReaderAt, head []byte) (result, bool, error) {
	if len(head) < elf.EI_NIDENT {
		return result{}, false, corrupt("truncated ELF identification (%d bytes)", len(head))
	}
	var bo binary.ByteOrder
	switch elf.Data(head[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return result{}, false, corrupt("invalid ELF data encoding %d", head[elf.EI_DATA])
	}
	if v := elf.Version(head[elf.EI_VERSION]); v != elf.EV_CURRENT {
		return result{}, false, corrupt("invalid ELF version %d", v)
	}
	// e_machine sits inside the first 20 bytes, but a file cut off before
	// the end of the ELF header cannot be loaded, so demand all of it.
	class := elf.Class(head[elf.EI_CLASS])
	var (
		machine      elf.Machine
		phoff        uint64
		phent, phnum uint16
	)
	switch class {
	case elf.ELFCLASS32:
		var h elf.Header32
		if err := readStruct(r, 0, bo, &h, "ELF header"); err != nil {
			return result{}, false, err
		}
		machine, phoff, phent, phnum = elf.Machine(h.Machine), uint64(h.Phoff), h.Phentsize, h.Phnum
	case elf.ELFCLASS64:
		var h elf.Header64
		if err := readStruct(r, 0, bo, &h, "ELF header"); err != nil {
			return result{}, false, err
		}
		machine, phoff, phent, phnum = elf.Machine(h.Machine), h.Phoff, h.Phentsize, h.Phnum
	default:
		return result{}, false, corrupt("invalid ELF class %d", head[elf.EI_CLASS])
	}
	osabi := elf.OSABI(head[elf.EI_OSABI])
	res := single(elfOS(osabi), elfArch(machine, class, bo), "ELF")
	res.interp = elfInterpreter(r, bo, class, phoff, phent, phnum)
	return res, true, nil
}

// maxInterp bounds the loader path read from PT_INTERP: real ones are a
// few dozen bytes, and PATH_MAX is 4096.
const maxInterp = 4096

// elfInterpreter reads the program headers for PT_INTERP: the loader a
// dynamically linked executable needs in the image to start. A header
// table or an interpreter that cannot be read is none: the kernel would
// refuse the file, but the check of its platform has passed it, and this
// only serves a warning.
func elfInterpreter(r io.ReaderAt, bo binary.ByteOrder, class elf.Class, phoff uint64, phent, phnum uint16) string {
	for i := range uint64(phnum) {
		off := int64(phoff + i*uint64(phent))
		var typ elf.ProgType
		var foff, size uint64
		switch class {
		case elf.ELFCLASS32:
			var ph elf.Prog32
			if phent < uint16(binary.Size(ph)) || readStruct(r, off, bo, &ph, "ELF program header") != nil {
				return ""
			}
			typ, foff, size = elf.ProgType(ph.Type), uint64(ph.Off), uint64(ph.Filesz)
		default:
			var ph elf.Prog64
			if phent < uint16(binary.Size(ph)) || readStruct(r, off, bo, &ph, "ELF program header") != nil {
				return ""
			}
			typ, foff, size = elf.ProgType(ph.Type), ph.Off, ph.Filesz
		}
		if typ != elf.PT_INTERP {
			continue
		}
		if size == 0 || size > maxInterp {
			return ""
		}
		b := make([]byte, size)
		if readAt(r, b, int64(foff), "ELF interpreter") != nil {
			return ""
		}
		return strings.TrimRight(string(b), "\x00")
	}
	return ""
}

// elfOS maps the ELF OS ABI byte to a GOOS. Linux toolchains, Go's included,
// leave it at NONE (System V), so NONE means Linux in a container image.
func elfOS(abi elf.OSABI) string {
	switch abi {
	case elf.ELFOSABI_NONE, elf.ELFOSABI_LINUX:
		return "linux"
	case elf.ELFOSABI_FREEBSD:
		return "freebsd"
	case elf.ELFOSABI_NETBSD:
		return "netbsd"
	case elf.ELFOSABI_OPENBSD:
		return "openbsd"
	case elf.ELFOSABI_SOLARIS:
		return "solaris"
	case elf.ELFOSABI_AIX:
		return "aix"
	case elf.ELFOSABI_HURD:
		return "hurd"
	}
	return fmt.Sprintf("elf-osabi-%d", uint8(abi))
}

// elfArch maps e_machine to a GOARCH. Several machines cover both word sizes
// or both byte orders, and Go names those variants separately.
func elfArch(m elf.Machine, class elf.Class, bo binary.ByteOrder) string {
	is64 := class == elf.ELFCLASS64
	le := bo == binary.LittleEndian
	switch m {
	case elf.EM_X86_64:
		if !is64 {
			return "x32"
		}
		return "amd64"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_386:
		return "386"
	case elf.EM_PPC64:
		if le {
			return "ppc64le"
		}
		return "ppc64"
	case elf.EM_PPC:
		return "ppc"
	case elf.EM_S390:
		if is64 {
			return "s390x"
		}
		return "s390"
	case elf.EM_RISCV:
		if is64 {
			return "riscv64"
		}
		return "riscv32"
	case elf.EM_MIPS:
		switch {
		case is64 && le:
			return "mips64le"
		case is64:
			return "mips64"
		case le:
			return "mipsle"
		}
		return "mips"
	case elf.EM_LOONGARCH:
		if is64 {
			return "loong64"
		}
		return "loong32"
	case elf.EM_SPARCV9:
		return "sparc64"
	}
	return fmt.Sprintf("elf-machine-0x%x", uint16(m))
}
