package exe

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Real binaries are built once per test binary: each cross build costs
// seconds on a cold cache and the CI machines have two cores.
var (
	buildDir  string
	buildOnce sync.Once
	built     map[string]string
	buildErr  error
	errNoGo   = errors.New("no go toolchain in PATH")
)

var buildTargets = []string{"linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64", "darwin/arm64"}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "exe-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildAll() {
	goTool, err := exec.LookPath("go")
	if err != nil {
		buildErr = errNoGo
		return
	}
	src := filepath.Join(buildDir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		buildErr = err
		return
	}
	files := map[string]string{
		"go.mod":  "module exetest\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() {}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			buildErr = err
			return
		}
	}
	built = map[string]string{}
	for _, target := range buildTargets {
		goos, goarch, _ := strings.Cut(target, "/")
		out := filepath.Join(buildDir, goos+"-"+goarch)
		cmd := exec.Command(goTool, "build", "-ldflags=-s -w", "-o", out, ".")
		cmd.Dir = src
		// Clear GOFLAGS and GOWORK so the developer's settings (-race,
		// -mod=vendor, a go.work above the temp dir) cannot break the build.
		cmd.Env = append(os.Environ(),
			"GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0",
			"GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "GO111MODULE=on")
		if output, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build %s: %v\n%s", target, err, output)
			return
		}
		built[target] = out
	}
}

// goBinary returns the path of a tiny Go program built for target.
func goBinary(t *testing.T, target string) string {
	t.Helper()
	buildOnce.Do(buildAll)
	if errors.Is(buildErr, errNoGo) {
		t.Skip(buildErr)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built[target]
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func readPrefix(t *testing.T, path string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

func TestDetectBuilt(t *testing.T) {
	tests := []struct {
		target string
		want   Platform
	}{
		{"linux/amd64", Platform{"linux", "amd64", "ELF"}},
		{"linux/arm64", Platform{"linux", "arm64", "ELF"}},
		{"windows/amd64", Platform{"windows", "amd64", "PE"}},
		{"windows/arm64", Platform{"windows", "arm64", "PE"}},
		{"darwin/arm64", Platform{"darwin", "arm64", "Mach-O"}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			got, ok, err := Detect(goBinary(t, tt.target))
			if err != nil || !ok || got != tt.want {
				t.Fatalf("Detect = %+v, %v, %v; want %+v, true, nil", got, ok, err, tt.want)
			}
		})
	}
}

func TestCheckBuilt(t *testing.T) {
	tests := []struct {
		target, name, wantOS, wantArch string
		wantErr                        string // "" means Check must pass
	}{
		{"linux/amd64", "/usr/bin/agent", "linux", "amd64", ""},
		{"linux/arm64", "/usr/bin/agent", "linux", "arm64", ""},
		{"windows/amd64", "/k/antrea/bin/agent.exe", "windows", "amd64", ""},
		{"windows/arm64", "/k/antrea/bin/agent.exe", "windows", "arm64", ""},
		{"darwin/arm64", "/bin/tool", "darwin", "arm64", ""},
		{"linux/amd64", "/k/antrea/bin/agent.exe", "windows", "amd64",
			"/k/antrea/bin/agent.exe: built for linux/amd64 (ELF), image is windows/amd64"},
		{"linux/arm64", "/usr/bin/agent", "linux", "amd64",
			"/usr/bin/agent: built for linux/arm64 (ELF), image is linux/amd64"},
		{"windows/arm64", "C:/app/app.exe", "windows", "amd64",
			"C:/app/app.exe: built for windows/arm64 (PE), image is windows/amd64"},
		{"windows/amd64", "/usr/bin/app", "linux", "amd64",
			"/usr/bin/app: built for windows/amd64 (PE), image is linux/amd64"},
		{"darwin/arm64", "/usr/bin/tool", "linux", "arm64",
			"/usr/bin/tool: built for darwin/arm64 (Mach-O), image is linux/arm64"},
	}
	for _, tt := range tests {
		t.Run(tt.target+"-in-"+tt.wantOS+"-"+tt.wantArch, func(t *testing.T) {
			err := Check(goBinary(t, tt.target), tt.name, tt.wantOS, tt.wantArch)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Check = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestNotExecutable(t *testing.T) {
	dosOnly := make([]byte, 0x80)
	copy(dosOnly, "MZ")
	binary.LittleEndian.PutUint32(dosOnly[0x3c:], 0x40)
	copy(dosOnly[0x40:], "NE")
	dosPastEOF := make([]byte, 0x40)
	copy(dosPastEOF, "MZ")
	binary.LittleEndian.PutUint32(dosPastEOF[0x3c:], 0xffffff00)

	tests := []struct {
		name string
		data []byte
	}{
		{"script", []byte("#!/bin/sh\necho hello\n")},
		{"text", []byte("just some text that is long enough to be sniffed properly\n")},
		{"empty", nil},
		{"one byte", []byte{0x7f}},
		{"bare MZ", []byte("MZ")},
		{"DOS header without PE", dosOnly},
		{"PE offset past EOF", dosPastEOF},
		{"java class", []byte{0xca, 0xfe, 0xba, 0xbe, 0x00, 0x00, 0x00, 0x34, 0x00, 0x1d, 0x0a, 0x00}},
		{"java 1.1 class", []byte{0xca, 0xfe, 0xba, 0xbe, 0x00, 0x03, 0x00, 0x2d, 0x00, 0x1d}},
		{"short cafebabe", []byte{0xca, 0xfe, 0xba, 0xbe}},
		{"gzip", []byte{0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 3}},
		{"ar archive", []byte("!<arch>\ndebian-binary   1342943816  0     0     100644  4         `\n2.0\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "f", tt.data)
			got, ok, err := Detect(p)
			if err != nil || ok {
				t.Fatalf("Detect = %+v, %v, %v; want not ok, nil error", got, ok, err)
			}
			if err := Check(p, "/f", "windows", "amd64"); err != nil {
				t.Fatalf("Check = %v, want nil", err)
			}
		})
	}

	t.Run("directory", func(t *testing.T) {
		if _, ok, err := Detect(t.TempDir()); ok || err != nil {
			t.Fatalf("Detect(dir) = %v, %v; want false, nil", ok, err)
		}
	})
}

func TestCorrupt(t *testing.T) {
	badClass := elfHeader(elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.EM_X86_64)
	badClass[elf.EI_CLASS] = 7
	fatOutOfRange := fatBinary(false, 0x1000, 16, macho.CpuArm64)
	fatTruncated := fatBinary(false, 0x1000, 16, macho.CpuArm64, macho.CpuAmd64)[:30]

	tests := []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{"truncated ELF", func(t *testing.T) []byte { return readPrefix(t, goBinary(t, "linux/amd64"), 20) }},
		{"truncated PE", func(t *testing.T) []byte {
			b, err := os.ReadFile(goBinary(t, "windows/amd64"))
			if err != nil {
				t.Fatal(err)
			}
			// Cut inside the COFF header that follows the PE signature.
			return b[:binary.LittleEndian.Uint32(b[0x3c:])+10]
		}},
		{"truncated Mach-O", func(t *testing.T) []byte { return readPrefix(t, goBinary(t, "darwin/arm64"), 16) }},
		{"bare ELF magic", func(*testing.T) []byte { return []byte("\x7fELF") }},
		{"bad ELF class", func(*testing.T) []byte { return badClass }},
		{"fat slice past EOF", func(*testing.T) []byte { return fatOutOfRange[:0x1000] }},
		{"fat table truncated", func(*testing.T) []byte { return fatTruncated }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "bad", tt.data(t))
			got, ok, err := Detect(p)
			if err == nil || !errors.Is(err, errCorrupt) {
				t.Fatalf("Detect = %+v, %v, %v; want a corrupt-header error", got, ok, err)
			}
			if !strings.HasPrefix(err.Error(), p+": ") {
				t.Errorf("Detect error %q does not name the file", err)
			}
			err = Check(p, "/bin/bad", "linux", "amd64")
			if err == nil || !strings.HasPrefix(err.Error(), "/bin/bad: ") {
				t.Fatalf("Check = %v, want an error naming /bin/bad", err)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope")
	if _, _, err := Detect(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Detect = %v, want ErrNotExist", err)
	}
	if err := Check(p, "/nope", "linux", "amd64"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Check = %v, want ErrNotExist", err)
	}
}

// elfHeader returns a bare ELF header, enough for Detect.
func elfHeader(class elf.Class, data elf.Data, osabi elf.OSABI, m elf.Machine) []byte {
	var ident [elf.EI_NIDENT]byte
	copy(ident[:], elf.ELFMAG)
	ident[elf.EI_CLASS] = byte(class)
	ident[elf.EI_DATA] = byte(data)
	ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	ident[elf.EI_OSABI] = byte(osabi)
	var bo binary.ByteOrder = binary.LittleEndian
	if data == elf.ELFDATA2MSB {
		bo = binary.BigEndian
	}
	var h any
	if class == elf.ELFCLASS32 {
		h = &elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: 1, Ehsize: 52}
	} else {
		h = &elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(m), Version: 1, Ehsize: 64}
	}
	b, err := binary.Append(nil, bo, h)
	if err != nil {
		panic(err)
	}
	return b
}

func TestELFHeaders(t *testing.T) {
	tests := []struct {
		name  string
		class elf.Class
		data  elf.Data
		osabi elf.OSABI
		m     elf.Machine
		want  Platform
	}{
		{"ppc64le", elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.EM_PPC64, Platform{"linux", "ppc64le", "ELF"}},
		{"ppc64", elf.ELFCLASS64, elf.ELFDATA2MSB, elf.ELFOSABI_NONE, elf.EM_PPC64, Platform{"linux", "ppc64", "ELF"}},
		{"s390x", elf.ELFCLASS64, elf.ELFDATA2MSB, elf.ELFOSABI_NONE, elf.EM_S390, Platform{"linux", "s390x", "ELF"}},
		{"riscv64", elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.EM_RISCV, Platform{"linux", "riscv64", "ELF"}},
		{"arm", elf.ELFCLASS32, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.EM_ARM, Platform{"linux", "arm", "ELF"}},
		{"386 gnu", elf.ELFCLASS32, elf.ELFDATA2LSB, elf.ELFOSABI_LINUX, elf.EM_386, Platform{"linux", "386", "ELF"}},
		{"freebsd", elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_FREEBSD, elf.EM_X86_64, Platform{"freebsd", "amd64", "ELF"}},
		{"unknown machine", elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.Machine(0x1234), Platform{"linux", "elf-machine-0x1234", "ELF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "elf", elfHeader(tt.class, tt.data, tt.osabi, tt.m))
			got, ok, err := Detect(p)
			if err != nil || !ok || got != tt.want {
				t.Fatalf("Detect = %+v, %v, %v; want %+v", got, ok, err, tt.want)
			}
		})
	}
}

// peImage returns the headers of a PE32 image for machine; clr adds a CLR
// runtime header directory entry, as in a .NET assembly.
func peImage(machine uint16, clr bool) []byte {
	b := make([]byte, 0x40)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 0x40)
	b = append(b, "PE\x00\x00"...)
	opt := pe.OptionalHeader32{Magic: 0x10b, NumberOfRvaAndSizes: 16}
	if clr {
		opt.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR] = pe.DataDirectory{VirtualAddress: 0x2008, Size: 0x48}
	}
	fh := pe.FileHeader{
		Machine:              machine,
		SizeOfOptionalHeader: uint16(binary.Size(opt)),
		Characteristics:      pe.IMAGE_FILE_EXECUTABLE_IMAGE | pe.IMAGE_FILE_DLL,
	}
	b, err := binary.Append(b, binary.LittleEndian, &fh)
	if err == nil {
		b, err = binary.Append(b, binary.LittleEndian, &opt)
	}
	if err != nil {
		panic(err)
	}
	return b
}

func TestPEHeaders(t *testing.T) {
	tests := []struct {
		name             string
		data             []byte
		want             Platform
		wantOS, wantArch string
		wantErr          string
	}{
		{"anycpu .NET dll in amd64 image", peImage(pe.IMAGE_FILE_MACHINE_I386, true),
			Platform{"windows", "386", "PE"}, "windows", "amd64", ""},
		{"anycpu .NET dll in arm64 image", peImage(pe.IMAGE_FILE_MACHINE_I386, true),
			Platform{"windows", "386", "PE"}, "windows", "arm64", ""},
		{".NET dll in linux image", peImage(pe.IMAGE_FILE_MACHINE_I386, true),
			Platform{"windows", "386", "PE"}, "linux", "amd64",
			"/x.dll: built for windows/386 (PE), image is linux/amd64"},
		{"native 386 dll in amd64 image", peImage(pe.IMAGE_FILE_MACHINE_I386, false),
			Platform{"windows", "386", "PE"}, "windows", "amd64",
			"/x.dll: built for windows/386 (PE), image is windows/amd64"},
		{"armnt", peImage(pe.IMAGE_FILE_MACHINE_ARMNT, false),
			Platform{"windows", "arm", "PE"}, "windows", "arm", ""},
		{"amd64 .NET dll is strict", peImage(pe.IMAGE_FILE_MACHINE_AMD64, true),
			Platform{"windows", "amd64", "PE"}, "windows", "arm64",
			"/x.dll: built for windows/amd64 (PE), image is windows/arm64"},
		{"unknown machine", peImage(0x1234, false),
			Platform{"windows", "pe-machine-0x1234", "PE"}, "windows", "amd64",
			"/x.dll: built for windows/pe-machine-0x1234 (PE), image is windows/amd64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "x.dll", tt.data)
			got, ok, err := Detect(p)
			if err != nil || !ok || got != tt.want {
				t.Fatalf("Detect = %+v, %v, %v; want %+v", got, ok, err, tt.want)
			}
			err = Check(p, "/x.dll", tt.wantOS, tt.wantArch)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Check = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// fatBinary returns a universal Mach-O file whose slices all point at one
// thin Mach-O header of sliceLen bytes placed at off.
func fatBinary(is64 bool, off, sliceLen int, cpus ...macho.Cpu) []byte {
	var b []byte
	if is64 {
		b = binary.BigEndian.AppendUint32(b, magicFat64)
	} else {
		b = binary.BigEndian.AppendUint32(b, macho.MagicFat)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(cpus)))
	for _, c := range cpus {
		b = binary.BigEndian.AppendUint32(b, uint32(c))
		b = binary.BigEndian.AppendUint32(b, 0) // cpusubtype
		if is64 {
			b = binary.BigEndian.AppendUint64(b, uint64(off))
			b = binary.BigEndian.AppendUint64(b, uint64(sliceLen))
			b = binary.BigEndian.AppendUint32(b, 12) // align
			b = binary.BigEndian.AppendUint32(b, 0)  // reserved
		} else {
			b = binary.BigEndian.AppendUint32(b, uint32(off))
			b = binary.BigEndian.AppendUint32(b, uint32(sliceLen))
			b = binary.BigEndian.AppendUint32(b, 12)
		}
	}
	b = append(b, make([]byte, off-len(b))...)
	slice := make([]byte, sliceLen)
	binary.LittleEndian.PutUint32(slice, macho.Magic64)
	return append(b, slice...)
}

func TestFatMachO(t *testing.T) {
	tests := []struct {
		name             string
		data             []byte
		wantArchs        string
		wantOS, wantArch string
		wantErr          string
	}{
		{"universal has arm64", fatBinary(false, 0x1000, 64, macho.CpuAmd64, macho.CpuArm64),
			"amd64,arm64", "darwin", "arm64", ""},
		{"universal has amd64", fatBinary(false, 0x1000, 64, macho.CpuAmd64, macho.CpuArm64),
			"amd64,arm64", "darwin", "amd64", ""},
		{"universal lacks 386", fatBinary(false, 0x1000, 64, macho.CpuAmd64, macho.CpuArm64),
			"amd64,arm64", "darwin", "386",
			"/bin/u: built for darwin/amd64,arm64 (Mach-O), image is darwin/386"},
		{"universal in linux image", fatBinary(false, 0x1000, 64, macho.CpuAmd64, macho.CpuArm64),
			"amd64,arm64", "linux", "arm64",
			"/bin/u: built for darwin/amd64,arm64 (Mach-O), image is linux/arm64"},
		{"fat64", fatBinary(true, 0x1000, 64, macho.CpuArm64, macho.CpuPpc64),
			"arm64,ppc64", "darwin", "arm64", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, "u", tt.data)
			got, ok, err := Detect(p)
			want := Platform{"darwin", tt.wantArchs, "Mach-O"}
			if err != nil || !ok || got != want {
				t.Fatalf("Detect = %+v, %v, %v; want %+v", got, ok, err, want)
			}
			err = Check(p, "/bin/u", tt.wantOS, tt.wantArch)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Check = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestPlatformString(t *testing.T) {
	if got, want := (Platform{"linux", "amd64", "ELF"}).String(), "linux/amd64 (ELF)"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}
