package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// pallet lock killed (SIGKILL) while it writes the recipe leaves the old
// recipe or the new one, never part of either; what it left beside it
// (its temporary) the next lock removes, so nothing of it reaches a
// commit of the checkout. The kill lands as the temporary is created: a
// recipe of megabytes of comments makes the write long enough to be
// caught in.
func TestLockKilledWhileWriting(t *testing.T) {
	body := []byte("payload")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	var b strings.Builder
	b.WriteString("version: 1\n")
	for b.Len() < 3<<20 {
		b.WriteString("# " + strings.Repeat("comment ", 12) + "\n")
	}
	b.WriteString("artifacts:\n  a:\n    url:\n      url: " + srv.URL + "/a.bin\n    licenses: none\n" +
		"images:\n  app:\n    base: scratch\n    platforms: [linux/amd64]\n    files:\n      - {artifact: a, dest: /a/}\n")
	old := b.String()
	locked := strings.Replace(old, "/a.bin\n", "/a.bin\n      sha256: "+fixture.SHA256(body)+"\n", 1)

	bin := filepath.Join(t.TempDir(), "pallet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "pallet.yaml")
	var left []string
	for attempt := 0; attempt < 10 && left == nil; attempt++ {
		if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		killed := killOnTemporary(t, dir, exec.Command(bin, "lock", "-q", "-f", file))
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != old && string(got) != locked {
			t.Fatalf("attempt %d: lock killed at %q left a recipe neither old nor new (%d bytes)", attempt, killed, len(got))
		}
		for _, e := range dirNames(t, dir) {
			if e != "pallet.yaml" {
				left = append(left, e)
			}
		}
	}
	if left == nil {
		t.Fatal("no kill landed while lock wrote: nothing was left to remove")
	}
	t.Logf("a killed lock left %v", left)
	if out, err := exec.Command(bin, "lock", "-q", "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("lock after the kill: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(file); string(got) != locked {
		t.Error("the recipe was not locked after the kill")
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("beside the recipe after the next lock: %v", names)
	}
}

// killOnTemporary runs cmd and SIGKILLs it as soon as it creates a
// hidden file in dir that is not a lock (a temporary it writes through),
// returning that file's name ("" when cmd ended first).
func killOnTemporary(t *testing.T, dir string, cmd *exec.Cmd) string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	buf := make([]byte, 64<<10)
	for {
		// Poll, so that a command that ends without a temporary ends
		// the wait.
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 100)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			t.Fatal(err)
		}
		if n == 0 {
			select {
			case <-exited:
				return ""
			default:
				continue
			}
		}
		m, err := unix.Read(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if strings.HasPrefix(name, ".") && !strings.HasSuffix(name, ".lock") {
				cmd.Process.Kill()
				<-exited
				return name
			}
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
