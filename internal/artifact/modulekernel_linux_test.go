package artifact

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The key reads no file the kernel makes as it is read: a link to
// /proc/kmsg had the key wait forever for the next kernel message (as
// root), one to another file of /proc or /sys hashed what it said at
// that moment. Both are refused at the module's line, naming the link.
// A named pipe or a device in the module, or a link to one, is not
// opened: go build reads neither unless named as a source file (held).
func TestModuleKeyReadsNoKernelFiles(t *testing.T) {
	if _, err := os.Stat("/proc/version"); err != nil {
		t.Skip("no /proc")
	}
	f := &Fetcher{}
	for name, target := range map[string]string{"version": "/proc/version", "kernel": "/proc/sys/kernel"} {
		mod := t.TempDir()
		writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
		if err := os.Symlink(target, filepath.Join(mod, name)); err != nil {
			t.Fatal(err)
		}
		_, err := moduleKey(f, mod)
		var fe *FieldError
		if want := "go module " + mod + ": " + name + ", a link to " + target + ": " + target + " is on the kernel's proc filesystem"; err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &fe) || fe.Field != "module" {
			t.Errorf("a link to %s: %v, want an error blaming module saying %q", target, err, want)
		}
	}
	if _, err := moduleKey(f, "/proc/sys"); err == nil || !strings.Contains(err.Error(), "is on the kernel's proc filesystem") {
		t.Errorf("a module in /proc: %v, want it refused", err)
	}

	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	for _, p := range []string{filepath.Join(mod, "fifo"), filepath.Join(dir, "fifo")} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"pipe": filepath.Join(dir, "fifo"), "zero": "/dev/zero"} {
		if err := os.Symlink(target, filepath.Join(mod, name)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := moduleKey(f, mod)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("a module holding a named pipe and links to one and to a device: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the key of a module holding a named pipe and links to one and to a device still reads after 20s")
	}
}

// A named pipe or a device where go build reads a source file by its
// name (x.go, a link y.s to /dev/zero) is refused at the module's line:
// go build waits on the pipe forever, or reads what the device gives, and
// the key, which opens neither, left them out. So are the module's
// go.sum and vendor/modules.txt, which go build reads by name too. Names
// go build skips (_x.go, .x.go, other extensions) are left alone, as it
// leaves them.
func TestModuleKeyRefusesSpecialSourceFiles(t *testing.T) {
	for _, c := range []struct {
		name, target, want string
	}{
		{"x.go", "", "go build would read x.go as a source file, by its name, and it is a named pipe"},
		{"y.s", "/dev/zero", "y.s, a link to /dev/zero: go build would read y.s as a source file, by its name, and it is a character device"},
		{"_x.go", "", ""},
		{".x.go", "", ""},
		{"x.txt", "/dev/zero", ""},
		// Not sources, but read by name: go build waits on either
		// (go 1.26, tried: go.sum with a requirement to verify).
		{"go.sum", "", "go build would read go.sum, by its name, and it is a named pipe"},
		{"vendor/modules.txt", "", "go build would read vendor/modules.txt, by its name, and it is a named pipe"},
		{"sub/go.sum", "", ""},
	} {
		mod := t.TempDir()
		writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
		p := filepath.Join(mod, filepath.FromSlash(c.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if c.target == "" {
			err = syscall.Mkfifo(p, 0o644)
		} else {
			err = os.Symlink(c.target, p)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = moduleKey(&Fetcher{}, mod)
		var fe *FieldError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it left alone as go build leaves it", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &fe) || fe.Field != "module"):
			t.Errorf("%s: %v, want an error blaming module saying %q", c.name, err, c.want)
		}
	}
}

// A kernel filesystem mounted below a directory the key walks (a bind
// mount of /proc/sys/kernel/random in the module, as a chroot linked to
// holds /proc) is refused too, naming the file: only the module's root
// and the links' targets were asked about, and the key hashed what
// /proc/sys/kernel/random/uuid said at that moment, a new key each time.
func TestModuleKeyRefusesKernelFilesMountedInside(t *testing.T) {
	const src = "/proc/sys/kernel/random"
	if _, err := os.Stat(filepath.Join(src, "uuid")); err != nil {
		t.Skip("no " + src)
	}
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	for _, at := range []string{filepath.Join(mod, "p"), filepath.Join(dir, "chroot", "proc")} {
		if err := os.MkdirAll(at, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount(src, at, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("bind mount %s (needs root): %v", src, err)
		}
		t.Cleanup(func() { syscall.Unmount(at, syscall.MNT_DETACH) })
	}
	_, err := moduleKey(&Fetcher{}, mod)
	var fe *FieldError
	if want := "go module " + mod + ": " + filepath.Join(mod, "p") + "/"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is on the kernel's proc filesystem") || !errors.As(err, &fe) || fe.Field != "module" {
		t.Errorf("a module with /proc mounted inside: %v, want an error blaming module saying %q... is on the kernel's proc filesystem", err, want)
	}
	if err := syscall.Unmount(filepath.Join(mod, "p"), syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "chroot"), filepath.Join(mod, "chroot")); err != nil {
		t.Fatal(err)
	}
	_, err = moduleKey(&Fetcher{}, mod)
	if want := "chroot, a link to " + filepath.Join(dir, "chroot") + ": " + filepath.Join(dir, "chroot", "proc") + "/"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is on the kernel's proc filesystem") {
		t.Errorf("a link to a directory with /proc mounted inside: %v, want an error saying %q... is on the kernel's proc filesystem", err, want)
	}
}
