package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/pallet-dev/pallet/internal/layer"
)

// limit measures what no layer writer can beat on this machine, over the
// same bytes pallet wrote: the uncompressed layers of an OCI layout.
// Each is copied to a file first (not timed, and read once so that it is
// in the page cache, as pallet's inputs are in a warm run); then timed:
// pallet's compressor alone (layer.NewCompressor: its level, -jobs
// blocks or zstd jobs at once), into nothing; and one sha256 pass over
// the same bytes. It prints
// "bytes=N compress_s=W compress_cpu_s=C sha256_s=W sha256_cpu_s=C".
func limit(args []string) error {
	fs := flag.NewFlagSet("limit", flag.ExitOnError)
	jobs := fs.Int("jobs", runtime.NumCPU(), "blocks compressed at once (pallet build --jobs)")
	comp := fs.String("compression", "gzip", "gzip or zstd")
	level := fs.Int("gzip-level", layer.DefaultGzipLevel, "gzip deflate level")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: workload limit [-jobs J] [-compression gzip|zstd] [-gzip-level L] LAYOUT")
	}
	tmp, err := os.MkdirTemp("", "workload-limit-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tars, total, err := unpackLayers(fs.Arg(0), tmp)
	if err != nil {
		return err
	}
	for _, p := range tars { // into the page cache
		if err := readAll(p, io.Discard); err != nil {
			return err
		}
	}
	cw, cc, err := timed(func() error {
		for _, p := range tars {
			if err := compressFile(p, *comp, *jobs, *level); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	hw, hc, err := timed(func() error {
		h := sha256.New()
		for _, p := range tars {
			if err := readAll(p, h); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("bytes=%d compress_s=%.3f compress_cpu_s=%.2f sha256_s=%.3f sha256_cpu_s=%.2f\n", total, cw, cc, hw, hc)
	return nil
}

// unpackLayers writes the uncompressed layers of every image in the
// layout under dir.
func unpackLayers(path, dir string) ([]string, int64, error) {
	idx, err := layout.ImageIndexFromPath(path)
	if err != nil {
		return nil, 0, fmt.Errorf("layout %s: %w", path, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, 0, err
	}
	var (
		tars  []string
		total int64
	)
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, 0, fmt.Errorf("image %s: %w", d.Digest, err)
		}
		layers, err := img.Layers()
		if err != nil {
			return nil, 0, err
		}
		for _, l := range layers {
			rc, err := l.Uncompressed()
			if err != nil {
				return nil, 0, err
			}
			p := filepath.Join(dir, fmt.Sprintf("%d.tar", len(tars)))
			n, err := writeFile(p, rc)
			rc.Close()
			if err != nil {
				return nil, 0, err
			}
			tars = append(tars, p)
			total += n
		}
	}
	return tars, total, nil
}

func writeFile(path string, r io.Reader) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func readAll(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func compressFile(path, comp string, jobs, level int) error {
	c, err := layer.ParseCompression(comp)
	if err != nil {
		return err
	}
	zw, err := layer.NewCompressor(io.Discard, layer.Options{Compression: c, Jobs: max(jobs, 1), GzipLevel: level, Compressors: layer.NewCompressors(max(jobs, 1))})
	if err != nil {
		return err
	}
	if err := readAll(path, zw); err != nil {
		return err
	}
	return zw.Close()
}

// timed runs fn and returns its wall and CPU (user + system) seconds.
func timed(fn func() error) (wall, cpu float64, err error) {
	c0 := cpuSeconds()
	t0 := time.Now()
	err = fn()
	return time.Since(t0).Seconds(), cpuSeconds() - c0, err
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
