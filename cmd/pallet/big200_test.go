package main

import (
	"archive/tar"
	"archive/zip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
)

// TestBigInputs builds, with pallet as its own process, a Linux and a
// Windows image from a 9 GiB file (sparse, with random data past 8 GiB,
// so past the tar header's octal size) and a zip64 archive holding a
// 4.5 GiB member, and checks that each layer holds the bytes exactly,
// that its diff ID is its content's, that the process stays well under
// 200 MB however large the files, and that a rebuild with nothing
// changed reads none of it again. It needs about 10 MB of disk but
// minutes of CPU, so it runs only with PALLET_BIG=1.
func TestBigInputs(t *testing.T) {
	if os.Getenv("PALLET_BIG") != "1" {
		t.Skip("set PALLET_BIG=1 to build from files of 9 GiB (minutes of CPU)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pallet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	const size = 9 << 30
	big := filepath.Join(dir, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{8<<30 + 12345, size - 1<<20} {
		chunk := make([]byte, 1<<20)
		rand.Read(chunk)
		if _, err := f.WriteAt(chunk, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	bigSum := readerSum(t, io.NewSectionReader(mustOpen(t, big), 0, size))

	// The zip's member is the last 4.5 GiB of the file: over 4 GiB, so
	// archive/zip writes zip64 sizes, with the random data in it.
	const zipOff = 9<<30 - 4608<<20
	zipPath := filepath.Join(dir, "big.zip")
	zf, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "big4.bin", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), io.NewSectionReader(mustOpen(t, big), zipOff, size-zipOff)); err != nil {
		t.Fatal(err)
	}
	zipSum := hex.EncodeToString(h.Sum(nil))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zf.Close()

	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, fmt.Sprintf(`version: 1
artifacts:
  big: {local: {path: %s}, licenses: none, check: false}
  z: {local: {path: %s, extract: {}}, licenses: none, check: false}
images:
  lin:
    base: scratch
    platforms: [linux/amd64]
    files: [{artifact: big, dest: /data/}, {artifact: z, dest: /z/}]
  win:
    base: windows-hostprocess-scratch
    platforms: [windows/amd64]
    files: [{artifact: big, dest: /data/}, {artifact: z, dest: /z/}]
`, big, zipPath))
	out := filepath.Join(dir, "out")
	build := func() (time.Duration, string) {
		t.Helper()
		cmd := exec.Command(bin, "build", "-f", recipe, "--cache-dir", filepath.Join(dir, "cache"), "-o", "oci:"+out, "--progress", "plain")
		start := time.Now()
		b, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("pallet build: %v\n%s", err, b)
		}
		// Linux gives the peak resident set in KiB.
		peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
		t.Logf("build: %v, peak RSS %d MB", took, peak>>20)
		if peak > 200<<20 {
			t.Errorf("pallet build's peak RSS was %d MB, want well under 200 MB\n%s", peak>>20, b)
		}
		return took, string(b)
	}
	first, _ := build()

	want := map[string]string{"data/big.bin": bigSum, "z/big4.bin": zipSum}
	for _, im := range layoutImages(t, out) {
		layers, err := im.img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, l := range layers {
			diffID, err := l.DiffID()
			if err != nil {
				t.Fatal(err)
			}
			rc, err := l.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			all := sha256.New()
			tr := tar.NewReader(io.TeeReader(rc, all))
			for {
				hdr, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: layer %s: %v", im.desc.Digest, diffID, err)
				}
				name := strings.TrimPrefix(hdr.Name, "Files/")
				sum, ok := want[name]
				if !ok {
					continue
				}
				found[name] = true
				if got := readerSum(t, tr); got != sum {
					t.Errorf("%s: %s holds content of sha256 %s, want %s", im.desc.Digest, hdr.Name, got, sum)
				}
			}
			// The rest (the end blocks and any padding) is part of the
			// diff ID, and reading to the end checks the gzip trailer.
			if _, err := io.Copy(io.Discard, io.TeeReader(rc, all)); err != nil {
				t.Fatal(err)
			}
			rc.Close()
			if got := "sha256:" + hex.EncodeToString(all.Sum(nil)); got != diffID.String() {
				t.Errorf("%s: layer content hashes to %s, its diff ID says %s", im.desc.Digest, got, diffID)
			}
		}
		for name := range want {
			if !found[name] {
				t.Errorf("%s: no %s in its layers", im.desc.Digest, name)
			}
		}
	}

	// Reading 9 GiB took the first build most of its time; a rebuild
	// that read it again could not take a tenth of it.
	again, log := build()
	if again > first/10 {
		t.Errorf("a rebuild with nothing changed took %v, the first build %v: the files were read again\n%s", again, first, log)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readerSum is the sha256 of what r holds.
func readerSum(t *testing.T, r io.Reader) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
