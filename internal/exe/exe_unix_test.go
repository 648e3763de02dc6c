//go:build unix

package exe

import (
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// A FIFO must be skipped without opening it: opening one for reading blocks
// until a writer appears, which would hang the build.
func TestFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip(err)
	}
	if _, ok, err := Detect(p); ok || err != nil {
		t.Fatalf("Detect(fifo) = %v, %v; want false, nil", ok, err)
	}
	if err := Check(p, "/fifo", "linux", "amd64"); err != nil {
		t.Fatalf("Check(fifo) = %v, want nil", err)
	}
}

// A symlink is not followed: its target would be resolved on the build host,
// not inside the image.
func TestSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, elfHeader(elf.ELFCLASS64, elf.ELFDATA2LSB, elf.ELFOSABI_NONE, elf.EM_AARCH64), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{target, filepath.Join(dir, "missing")} {
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(dest, link); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := Detect(link); ok || err != nil {
			t.Fatalf("Detect(link to %s) = %v, %v; want false, nil", dest, ok, err)
		}
		if err := Check(link, "/usr/bin/link", "linux", "amd64"); err != nil {
			t.Fatalf("Check(link to %s) = %v, want nil", dest, err)
		}
	}
}

// CheckDynamic agrees with debug/elf's full parser on the executables of
// this machine: dynamic ones name their loader, static ones none.
func TestLoaderAgreesWithDebugELF(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/usr/bin/gcc", self} {
		// CheckDynamic, like Check, does not follow links.
		if p, err = filepath.EvalSymlinks(p); err != nil {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		want := ""
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b, err := io.ReadAll(prog.Open())
				if err != nil {
					t.Fatal(err)
				}
				want = strings.TrimRight(string(b), "\x00")
			}
		}
		f.Close()
		d, err := CheckDynamic(p, p, runtime.GOOS, runtime.GOARCH)
		if got := d.Interp; err != nil || got != want {
			t.Errorf("CheckDynamic(%s).Interp = %q, %v; debug/elf says %q", p, got, err, want)
		}
		if want != "" {
			seen++
		}
	}
	if seen == 0 {
		t.Skip("no dynamically linked executable found to compare")
	}
	if d, err := CheckDynamic("/etc/hostname", "/etc/hostname", runtime.GOOS, runtime.GOARCH); d.Interp != "" || err != nil {
		t.Errorf("a text file: %q, %v", d.Interp, err)
	}
}

// CheckDynamic agrees with debug/elf's full parser on the needed
// libraries and search paths of this machine's executables, and of one
// linked here with a run path.
func TestDynamicAgreesWithDebugELF(t *testing.T) {
	paths := []string{"/bin/sh", "/usr/bin/env", "/usr/bin/gcc"}
	if cc, err := exec.LookPath("cc"); err == nil {
		dir := t.TempDir()
		src := filepath.Join(dir, "m.c")
		if err := os.WriteFile(src, []byte("#include <math.h>\nint main(int c, char **v) { return (int)sqrt((double)c); }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "m")
		if b, err := exec.Command(cc, "-o", out, src, "-lm", "-Wl,--no-as-needed", "-Wl,-rpath,$ORIGIN/../lib:/opt/x", "-Wl,--enable-new-dtags").CombinedOutput(); err == nil {
			paths = append(paths, out)
		} else {
			t.Logf("cc: %v: %s", err, b)
		}
	}
	seen := 0
	for _, p := range paths {
		if p, err := filepath.EvalSymlinks(p); err == nil {
			f, err := elf.Open(p)
			if err != nil {
				continue
			}
			want, err := f.ImportedLibraries()
			if err != nil {
				t.Fatal(err)
			}
			runpath, _ := f.DynString(elf.DT_RUNPATH)
			rpath, _ := f.DynString(elf.DT_RPATH)
			f.Close()
			d, err := CheckDynamic(p, p, runtime.GOOS, runtime.GOARCH)
			if err != nil {
				t.Fatal(err)
			}
			if d.Interp == "" {
				continue
			}
			seen++
			if strings.Join(d.Needed, ",") != strings.Join(want, ",") {
				t.Errorf("%s: needed %q, debug/elf says %q", p, d.Needed, want)
			}
			if d.RunPath != strings.Join(runpath, ":") || d.RPath != strings.Join(rpath, ":") {
				t.Errorf("%s: run path %q, rpath %q; debug/elf says %q, %q", p, d.RunPath, d.RPath, runpath, rpath)
			}
			if strings.HasSuffix(p, "/m") && (d.RunPath != "$ORIGIN/../lib:/opt/x" || !slices.Contains(d.Needed, "libm.so.6")) {
				t.Errorf("%s: %+v, want libm.so.6 and the run path given", p, d)
			}
		}
	}
	if seen == 0 {
		t.Skip("no dynamically linked executable found to compare")
	}
}

// Program tells the programs of this machine (ET_EXEC, or a PIE: ET_DYN
// with a loader, or with DF_1_PIE where it is static, as runc's releases
// are) from its shared libraries (ET_DYN without either), as debug/elf
// reads them; a text file is none.
func TestProgramAgreesWithDebugELF(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"/bin/sh", "/usr/bin/env", "/usr/bin/gcc", self}
	// A static PIE, where gcc and glibc can make one.
	src := filepath.Join(t.TempDir(), "main.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	staticPIE := filepath.Join(t.TempDir(), "static-pie")
	if out, err := exec.Command("gcc", "-static-pie", "-o", staticPIE, src).CombinedOutput(); err != nil {
		t.Logf("no static PIE to compare: gcc -static-pie: %v: %s", err, out)
	} else {
		files = append(files, staticPIE)
	}
	libs, _ := filepath.Glob("/usr/lib/*-linux-gnu/lib*.so.*")
	var programs, libraries int
	for _, p := range append(files, libs...) {
		if p, err = filepath.EvalSymlinks(p); err != nil {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		interp := false
		for _, prog := range f.Progs {
			interp = interp || prog.Type == elf.PT_INTERP
		}
		flags1, _ := f.DynValue(elf.DT_FLAGS_1)
		pie := len(flags1) > 0 && flags1[0]&uint64(elf.DF_1_PIE) != 0
		want := f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN && (interp || pie)
		f.Close()
		if p == staticPIE && (!want || interp) {
			t.Errorf("gcc -static-pie made no static PIE by debug/elf: type %s, loader %v, DF_1_PIE %v", f.Type, interp, pie)
		}
		info, err := CheckDynamic(p, p, runtime.GOOS, runtime.GOARCH)
		if err != nil {
			continue // a library of another architecture (multiarch)
		}
		if info.Program != want {
			t.Errorf("CheckDynamic(%s).Program = %v; debug/elf says type %s, loader %v", p, info.Program, f.Type, interp)
		}
		if want {
			programs++
		} else {
			libraries++
		}
	}
	if programs == 0 || libraries == 0 {
		t.Fatalf("compared %d programs and %d libraries, want some of each", programs, libraries)
	}
	if info, err := CheckDynamic("/etc/hostname", "/etc/hostname", runtime.GOOS, runtime.GOARCH); info.Program || err != nil {
		t.Errorf("a text file: %+v, %v", info, err)
	}
}
