package exe

import (
	"bytes"
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
		typ          elf.Type
	)
	switch class {
	case elf.ELFCLASS32:
		var h elf.Header32
		if err := readStruct(r, 0, bo, &h, "ELF header"); err != nil {
			return result{}, false, err
		}
		machine, phoff, phent, phnum = elf.Machine(h.Machine), uint64(h.Phoff), h.Phentsize, h.Phnum
		typ = elf.Type(h.Type)
	case elf.ELFCLASS64:
		var h elf.Header64
		if err := readStruct(r, 0, bo, &h, "ELF header"); err != nil {
			return result{}, false, err
		}
		machine, phoff, phent, phnum = elf.Machine(h.Machine), h.Phoff, h.Phentsize, h.Phnum
		typ = elf.Type(h.Type)
	default:
		return result{}, false, corrupt("invalid ELF class %d", head[elf.EI_CLASS])
	}
	osabi := elf.OSABI(head[elf.EI_OSABI])
	res := single(elfOS(osabi), elfArch(machine, class, bo), "ELF")
	var staticPIE bool
	res.dynamic, staticPIE = elfDynamic(r, bo, class, phoff, phent, phnum)
	// A PIE is ET_DYN as a shared library is; its loader, or for a
	// static one its DF_1_PIE, tells it apart.
	res.program = typ == elf.ET_EXEC || typ == elf.ET_DYN && (res.dynamic.Interp != "" || staticPIE)
	return res, true, nil
}

// maxInterp bounds the loader path read from PT_INTERP: real ones are a
// few dozen bytes, and PATH_MAX is 4096. It bounds each name the dynamic
// section gives (DT_NEEDED, DT_RUNPATH, DT_RPATH) too.
const maxInterp = 4096

// maxDynamic bounds the dynamic section read (PT_DYNAMIC): real ones hold
// a few dozen entries of 16 bytes, this 4096 of them.
const maxDynamic = 64 << 10

// Dynamic is what a dynamically linked ELF executable needs in the image
// to start: its loader, and the shared libraries the loader looks for.
type Dynamic struct {
	// Interp is the program interpreter (PT_INTERP), the loader.
	Interp string `json:"interp,omitempty"`
	// Needed are the shared libraries it names (DT_NEEDED), by soname.
	Needed []string `json:"needed,omitempty"`
	// RunPath and RPath are the directories it asks the loader to look
	// in first (DT_RUNPATH; DT_RPATH, which glibc's loader reads only
	// when there is no DT_RUNPATH), each a colon-separated list as
	// written, $ORIGIN unexpanded.
	RunPath string `json:"runpath,omitempty"`
	RPath   string `json:"rpath,omitempty"`
}

// elfSegment is a PT_LOAD segment: where its bytes are in the file and
// in memory, which the dynamic section's addresses are.
type elfSegment struct{ vaddr, off, filesz uint64 }

// elfDynamic reads the program headers for PT_INTERP, and for an
// executable that has one, its dynamic section's needed libraries and
// search paths. A header table or an interpreter that cannot be read is
// none, and a dynamic section that cannot be read names nothing: the
// kernel or the loader would refuse the file, but the check of its
// platform has passed it, and this only serves warnings.
func elfDynamic(r io.ReaderAt, bo binary.ByteOrder, class elf.Class, phoff uint64, phent, phnum uint16) (d Dynamic, staticPIE bool) {
	var (
		loads          []elfSegment
		dynOff, dynLen uint64
		haveDyn        bool
	)
	for i := range uint64(phnum) {
		off := int64(phoff + i*uint64(phent))
		var typ elf.ProgType
		var foff, vaddr, size uint64
		switch class {
		case elf.ELFCLASS32:
			var ph elf.Prog32
			if phent < uint16(binary.Size(ph)) || readStruct(r, off, bo, &ph, "ELF program header") != nil {
				return Dynamic{}, false
			}
			typ, foff, vaddr, size = elf.ProgType(ph.Type), uint64(ph.Off), uint64(ph.Vaddr), uint64(ph.Filesz)
		default:
			var ph elf.Prog64
			if phent < uint16(binary.Size(ph)) || readStruct(r, off, bo, &ph, "ELF program header") != nil {
				return Dynamic{}, false
			}
			typ, foff, vaddr, size = elf.ProgType(ph.Type), ph.Off, ph.Vaddr, ph.Filesz
		}
		switch typ {
		case elf.PT_INTERP:
			if d.Interp != "" || size == 0 || size > maxInterp {
				continue
			}
			b := make([]byte, size)
			if readAt(r, b, int64(foff), "ELF interpreter") != nil {
				return Dynamic{}, false
			}
			d.Interp = strings.TrimRight(string(b), "\x00")
		case elf.PT_LOAD:
			loads = append(loads, elfSegment{vaddr: vaddr, off: foff, filesz: size})
		case elf.PT_DYNAMIC:
			if !haveDyn {
				dynOff, dynLen, haveDyn = foff, min(size, maxDynamic), true
			}
		}
	}
	if !haveDyn {
		return d, false
	}
	if d.Interp == "" {
		// A static PIE (Go's -buildmode=pie -static-pie, runc's
		// releases) has no loader: its dynamic section's DT_FLAGS_1
		// tells it from a shared library.
		return d, elfFlags1(r, bo, class, dynOff, dynLen)&uint64(elf.DF_1_PIE) != 0
	}
	d.Needed, d.RunPath, d.RPath = elfNeeded(r, bo, class, dynOff, dynLen, loads)
	return d, false
}

// elfDynEntries calls fn with each tag and value of the dynamic section
// of dynLen bytes at dynOff, up to DT_NULL, or not at all where it
// cannot be read.
func elfDynEntries(r io.ReaderAt, bo binary.ByteOrder, class elf.Class, dynOff, dynLen uint64, fn func(tag elf.DynTag, val uint64)) {
	entSize := uint64(16)
	if class == elf.ELFCLASS32 {
		entSize = 8
	}
	buf := make([]byte, dynLen-dynLen%entSize)
	if readAt(r, buf, int64(dynOff), "ELF dynamic section") != nil {
		return
	}
	for off := uint64(0); off+entSize <= uint64(len(buf)); off += entSize {
		var tag, val uint64
		if class == elf.ELFCLASS32 {
			tag, val = uint64(int32(bo.Uint32(buf[off:]))), uint64(bo.Uint32(buf[off+4:]))
		} else {
			tag, val = bo.Uint64(buf[off:]), bo.Uint64(buf[off+8:])
		}
		if elf.DynTag(tag) == elf.DT_NULL {
			return
		}
		fn(elf.DynTag(tag), val)
	}
}

// elfFlags1 is the dynamic section's DT_FLAGS_1, or 0.
func elfFlags1(r io.ReaderAt, bo binary.ByteOrder, class elf.Class, dynOff, dynLen uint64) uint64 {
	var flags uint64
	elfDynEntries(r, bo, class, dynOff, dynLen, func(tag elf.DynTag, val uint64) {
		if tag == elf.DT_FLAGS_1 {
			flags = val
		}
	})
	return flags
}

// elfNeeded reads the dynamic section of dynLen bytes at dynOff: the
// sonames of DT_NEEDED and the DT_RUNPATH and DT_RPATH strings, from the
// string table DT_STRTAB gives by address, found in the file through the
// PT_LOAD segment that maps it.
func elfNeeded(r io.ReaderAt, bo binary.ByteOrder, class elf.Class, dynOff, dynLen uint64, loads []elfSegment) (needed []string, runpath, rpath string) {
	var (
		strtab, strsz  uint64
		haveTab        bool
		neededAt       []uint64
		runAt, rAt     uint64
		haveRun, haveR bool
	)
	elfDynEntries(r, bo, class, dynOff, dynLen, func(tag elf.DynTag, val uint64) {
		switch tag {
		case elf.DT_NEEDED:
			neededAt = append(neededAt, val)
		case elf.DT_STRTAB:
			strtab, haveTab = val, true
		case elf.DT_STRSZ:
			strsz = val
		case elf.DT_RUNPATH:
			runAt, haveRun = val, true
		case elf.DT_RPATH:
			rAt, haveR = val, true
		}
	})
	if !haveTab {
		return nil, "", ""
	}
	// The string table's file offset: the segment that maps its address.
	var tabOff uint64
	found := false
	for _, s := range loads {
		if strtab >= s.vaddr && strtab-s.vaddr < s.filesz {
			tabOff, found = s.off+(strtab-s.vaddr), true
			// The table ends with the segment's bytes in the file.
			strsz = min(strsz, s.filesz-(strtab-s.vaddr))
			break
		}
	}
	if !found {
		return nil, "", ""
	}
	str := func(at uint64) (string, bool) {
		if at >= strsz {
			return "", false
		}
		b := make([]byte, min(strsz-at, maxInterp))
		if readAt(r, b, int64(tabOff+at), "ELF string table") != nil {
			return "", false
		}
		n := bytes.IndexByte(b, 0)
		if n < 0 {
			return "", false
		}
		return string(b[:n]), true
	}
	for _, at := range neededAt {
		if s, ok := str(at); ok && s != "" {
			needed = append(needed, s)
		}
	}
	if haveRun {
		runpath, _ = str(runAt)
	}
	if haveR {
		rpath, _ = str(rAt)
	}
	return needed, runpath, rpath
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
