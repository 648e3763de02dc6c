// Package exe identifies which platform an executable file was built for, so
// that an image build can refuse binaries that could never run in the image:
// a Linux ELF binary copied into a Windows image, or an arm64 binary placed in
// an amd64 image.
//
// Only the fixed-size headers are read. The full parsers in debug/elf,
// debug/pe and debug/macho also walk section and symbol tables, which costs
// I/O on large binaries and rejects files the OS loader would happily run
// (stripped or packed binaries with odd section tables), so this package
// decodes the headers itself using those packages' types and constants.
package exe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/regfile"
)

// Platform is what an executable file was built for, in Go/OCI terms.
//
// OS is "linux", "windows", "darwin" (or e.g. "freebsd" for ELF files marked
// with another OS ABI). Arch is "amd64", "arm64", "arm", "386", "ppc64le",
// "s390x", "riscv64", or for anything else a descriptive string such as
// "elf-machine-0x1234". For a universal (fat) Mach-O file Arch lists every
// architecture it contains, comma-separated. Format is "ELF", "PE" or
// "Mach-O".
type Platform struct {
	OS, Arch string
	Format   string
}

// String formats p as "linux/amd64 (ELF)".
func (p Platform) String() string {
	return p.OS + "/" + p.Arch + " (" + p.Format + ")"
}

// result is what the format decoders report. It carries more than Platform
// because Check needs every slice of a fat binary, and needs to know about
// architecture-neutral .NET assemblies, neither of which fits in Platform.
type result struct {
	Platform
	archs []string
	// anyWindowsArch marks an i386 PE image carrying a CLR header. AnyCPU
	// .NET assemblies are always stamped i386 yet run natively on every
	// Windows architecture, and Windows images ship many of them, so
	// treating the stamp literally would reject perfectly good images.
	anyWindowsArch bool
	// dynamic is what an ELF executable needs to start: its loader
	// (PT_INTERP) and shared libraries.
	dynamic Dynamic
	// program: an ELF file the kernel runs (Info.Program).
	program bool
}

// Info is what CheckDynamic learns of a file beside its platform.
type Info struct {
	// Program says the file is an ELF program the kernel runs
	// (ET_EXEC, or ET_DYN with a loader: a PIE), not a shared library
	// or an object file: one placed without an execute bit is a
	// mistake no runtime forgives.
	Program bool `json:"program,omitempty"`
	Dynamic
}

// sniffLen covers every magic this package looks at, plus the DOS header's
// pointer to the PE header at 0x3c.
const sniffLen = 64

// errCorrupt marks files that start with an executable magic but whose
// header cannot be decoded; it is wrapped, so callers see the detail.
var errCorrupt = errors.New("corrupt executable header")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, args...))
}

// Detect reads the header of the file at path.
//
// ok is false, with a nil error, when the file is not an executable or object
// format at all: scripts, text, data, archives, empty or tiny files, DOS-only
// "MZ" programs, Java class files, and anything that is not a regular file
// (symlinks are not followed).
// An error is returned only for I/O errors or for a file that starts with an
// executable magic but has a corrupt or truncated header.
func Detect(path string) (p Platform, ok bool, err error) {
	r, ok, err := detectPath(path)
	if err != nil {
		return Platform{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return r.Platform, ok, nil
}

// Check returns an error when the executable at path does not match the image
// platform wantOS/wantArch (e.g. "windows", "amd64"). Files that are not
// executables pass. name is the path inside the image and is used in the
// message, for example:
//
//	/k/antrea/bin/agent.exe: built for linux/amd64 (ELF), image is windows/amd64
//
// A universal Mach-O file passes if any of its architectures matches. An
// i386 Windows image with a .NET CLR header passes for every Windows
// architecture, since AnyCPU assemblies carry that stamp regardless of where
// they run.
func Check(path, name, wantOS, wantArch string) error {
	_, err := CheckDynamic(path, name, wantOS, wantArch)
	return err
}

// CheckDynamic is Check, and also returns what a dynamically linked ELF
// executable needs to start: its loader and the shared libraries it
// names (DT_NEEDED), with the directories it has the loader look in.
// Its Dynamic is zero for a static executable or any other file. The headers and
// the dynamic section are read with bounds (names of at most 4096 bytes,
// a dynamic section of at most 64 KiB), and what cannot be read is left
// out rather than failing: it only serves warnings.
func CheckDynamic(path, name, wantOS, wantArch string) (Info, error) {
	r, ok, err := detectPath(path)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", name, err)
	}
	if !ok {
		return Info{}, nil
	}
	if r.OS == wantOS && (slices.Contains(r.archs, wantArch) || r.anyWindowsArch) {
		return Info{Program: r.program, Dynamic: r.dynamic}, nil
	}
	return Info{}, fmt.Errorf("%s: built for %s, image is %s/%s", name, r.Platform, wantOS, wantArch)
}

func detectPath(path string) (result, bool, error) {
	// Lstat before opening: a FIFO, a device or a directory is never an
	// executable, so it is passed over here, not refused as regfile.Open
	// refuses it. Symlinks are not followed either: in a build context they usually
	// point at paths that only make sense inside the image, and following
	// them would check a file on the build host instead.
	lst, err := os.Lstat(path)
	if err != nil {
		return result{}, false, err
	}
	if !lst.Mode().IsRegular() {
		return result{}, false, nil
	}
	f, err := regfile.Open(path)
	if err != nil {
		return result{}, false, err
	}
	defer f.Close()
	// Re-stat the open file so the size matches what is read, and give up
	// if the path was swapped for something else in between.
	st, err := f.Stat()
	if err != nil {
		return result{}, false, err
	}
	if !os.SameFile(lst, st) {
		return result{}, false, errors.New("file changed while being checked")
	}
	return detect(f, st.Size())
}

// detect identifies the format of r, which holds size bytes.
func detect(r io.ReaderAt, size int64) (result, bool, error) {
	head := make([]byte, min(size, sniffLen))
	n, err := r.ReadAt(head, 0)
	if n < len(head) && err != io.EOF {
		return result{}, false, err
	}
	// io.EOF here means the file shrank since it was stat'ed; judge what
	// is there rather than fail.
	head = head[:n]
	switch {
	case len(head) >= 4 && string(head[:4]) == "\x7fELF":
		return detectELF(r, head)
	case len(head) >= 2 && string(head[:2]) == "MZ":
		return detectPE(r, size, head)
	case isMachO(head):
		return detectMachO(r, size, head)
	}
	return result{}, false, nil
}

// readAt fills b from offset off, reporting a short read as a corrupt header
// because every caller has already seen a valid magic.
func readAt(r io.ReaderAt, b []byte, off int64, what string) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		return corrupt("truncated %s: need %d bytes at offset %d, got %d", what, len(b), off, n)
	}
	return err
}

// readStruct decodes the fixed-size struct v from offset off.
func readStruct(r io.ReaderAt, off int64, bo binary.ByteOrder, v any, what string) error {
	buf := make([]byte, binary.Size(v))
	if err := readAt(r, buf, off, what); err != nil {
		return err
	}
	_, err := binary.Decode(buf, bo, v)
	return err
}

func single(goos, arch, format string) result {
	return result{Platform: Platform{OS: goos, Arch: arch, Format: format}, archs: []string{arch}}
}

func joinArchs(archs []string) string {
	return strings.Join(archs, ",")
}
