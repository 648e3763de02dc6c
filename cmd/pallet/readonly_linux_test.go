package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pallet-dev/pallet/internal/uptodate"
)

// An output, record, metadata file or --sbom-dir on a read-only file
// system is refused before any work, naming the directory: the build did
// all its work and then failed writing, and with the record alone
// read-only it wrote the output and failed after it.
func TestReadOnlyDestinationRefusedUpFront(t *testing.T) {
	ro := t.TempDir()
	if err := unix.Mount("tmpfs", ro, "tmpfs", unix.MS_RDONLY, "size=1m"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mounting needs root")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "hello.txt"), "hello\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  hello: {local: {path: hello.txt}, licenses: none}
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: hello
        dest: /hello.txt
`)
	out := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"layout", []string{"-o", "oci:" + filepath.Join(ro, "out"), "--record", filepath.Join(t.TempDir(), "r.json")}},
		{"layout in a directory to make", []string{"-o", "oci:" + filepath.Join(ro, "a", "b", "out"), "--record", filepath.Join(t.TempDir(), "r.json")}},
		{"archive", []string{"-o", "docker:" + filepath.Join(ro, "app.tar"), "--record", filepath.Join(t.TempDir(), "r.json")}},
		{"record", []string{"-o", "oci:" + out, "--record", filepath.Join(ro, "r.json")}},
		{"metadata", []string{"-o", "oci:" + out, "--metadata-file", filepath.Join(ro, "m.json")}},
		{"documents", []string{"-o", "oci:" + out, "--sbom", "--sbom-dir", filepath.Join(ro, "docs")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "cache")
			args := append([]string{"build", "-q", "-f", recipe, "--cache-dir", cache}, c.args...)
			_, err := pallet(t, args...)
			if err == nil || !strings.Contains(err.Error(), "cannot write in "+ro+" (read-only file system)") {
				t.Fatalf("got %v, want a refusal naming %s as read-only", err, ro)
			}
			if _, err := os.Stat(cache); err == nil {
				t.Error("the build started: the cache was opened before the refusal")
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("the output was written though the build was refused")
			}
		})
	}
}

// A build answered from the note of the last one writes nothing, so its
// outputs' file system turned read-only since is no refusal: the check
// for it comes after the answer.
func TestUpToDateNeedsNoWritableOutput(t *testing.T) {
	fs := t.TempDir()
	if err := unix.Mount("tmpfs", fs, "tmpfs", 0, "size=4m"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mounting needs root")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(fs, unix.MNT_DETACH) })
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	build := func() (string, error) {
		return pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+filepath.Join(fs, "out"))
	}
	if out, err := build(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	time.Sleep(uptodate.Settle + 100*time.Millisecond)
	if out, err := build(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := unix.Mount("tmpfs", fs, "tmpfs", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	out, err := build()
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("got %v, want the build up to date:\n%s", err, out)
	}
}
