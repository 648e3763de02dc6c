package main

import (
	"archive/tar"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// A base's device nodes and named pipes (a Debian rootfs has /dev/null
// and friends in its layer, some images /run/initctl) are the base's: its
// layer is kept as it is, byte for byte, by a recipe and by a Dockerfile,
// and a file placed beside them, or over one, is placed as on any base.
// Only what pallet places itself is held to files, directories and links.
func TestBaseDevicesKept(t *testing.T) {
	dir := t.TempDir()
	baseDigest := linuxBaseLayout(t, dir, []tar.Header{
		{Name: "dev/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		{Name: "dev/sda", Typeflag: tar.TypeBlock, Mode: 0o660, Devmajor: 8},
		{Name: "dev/console", Typeflag: tar.TypeChar, Mode: 0o600, Devmajor: 5, Devminor: 1},
		{Name: "run/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "run/initctl", Typeflag: tar.TypeFifo, Mode: 0o600},
	}, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "latest"}))
	writeFile(t, filepath.Join(dir, "app"), "app\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    local: {path: app}
    licenses: none
images:
  app:
    tags: [v1]
    base: oci:base
    platforms: [linux/amd64]
    files:
      - {artifact: app, dest: /dev/app}
      - {artifact: app, dest: /dev/console}
      - {artifact: app, dest: /run/}
`)
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM oci:base\nCOPY app /dev/\nCOPY app /dev/console\nCOPY app /run/\n")

	for _, recipe := range []string{"pallet.yaml", "Dockerfile"} {
		out := filepath.Join(t.TempDir(), "out")
		log := mustPallet(t, "build", "-f", filepath.Join(dir, recipe), "-o", "oci:"+out)
		if strings.Contains(log, "warn") {
			t.Errorf("%s: the build warns:\n%s", recipe, log)
		}
		p, err := layout.FromPath(out)
		if err != nil {
			t.Fatal(err)
		}
		idx := layoutIndex(t, out)
		img, err := p.Image(idx.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if d, err := layers[0].Digest(); err != nil || d != baseDigest {
			t.Errorf("%s: the base's layer is %v (%v), was %v", recipe, d, err, baseDigest)
		}
		got := map[string]byte{}
		for _, l := range layers[1:] {
			rc, err := l.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got[strings.TrimSuffix(h.Name, "/")] = h.Typeflag
			}
			rc.Close()
		}
		for _, p := range []string{"dev/app", "dev/console", "run/app"} {
			if got[p] != tar.TypeReg {
				t.Errorf("%s: /%s not placed as a file: %v", recipe, p, got)
			}
		}
	}
}

// A named pipe or a socket in a local artifact's directory is refused at
// the artifact's line, naming it, without waiting on the pipe: pallet
// places files, directories and links of its own, and a pipe has no
// content to hash but what a writer sends. (An archive's device nodes and
// pipes are skipped with a warning instead, TestArchiveSpecialFilesWarned:
// upstream's archive is not the recipe's to change.)
func TestLocalSpecialFilesRefused(t *testing.T) {
	for _, kind := range []string{"named pipe", "socket"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "d", "a"), "a\n")
			special := filepath.Join(dir, "d", "sub", "s")
			if err := os.MkdirAll(filepath.Dir(special), 0o755); err != nil {
				t.Fatal(err)
			}
			if kind == "named pipe" {
				if err := syscall.Mkfifo(special, 0o644); err != nil {
					t.Skip(err)
				}
			} else {
				l, err := net.Listen("unix", special)
				if err != nil {
					t.Skip(err)
				}
				defer l.Close()
			}
			writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  d:
    local: {path: d}
    licenses: none
images:
  x:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: d, dest: /d/}
`)
			done := make(chan struct{})
			var log string
			var err error
			go func() {
				defer close(done)
				log, err = pallet(t, "build", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the build waits on the " + kind)
			}
			want := "pallet.yaml:4: artifact d (linux/amd64, local): " + special + " is a " + kind + ": only files, directories and symlinks can be placed"
			if err == nil || !strings.Contains(log+err.Error(), want) {
				t.Errorf("error = %v\n%s\nwant %s", err, log, want)
			}
		})
	}
}
