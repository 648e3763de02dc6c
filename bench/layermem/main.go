// Command layermem measures what writing layers costs in memory and time,
// as a build does it: a 1 GiB image of incompressible data split into N
// layers, written through layer.Build with the build's concurrency (at
// most -jobs layers at once, each file hashed first as the cache key
// needs, then checked as it is written). It reports the process's peak
// resident set size (VmHWM of /proc/self/status), wall and CPU time.
//
//	layermem -in DIR -layers N [-jobs J] [-compression gzip|zstd] [-size BYTES]
//
// DIR holds the input: 64 files of size/64 bytes, generated (seeded
// ChaCha8, so every run reads the same bytes) when missing. Layer i of N
// takes files i*64/N to (i+1)*64/N-1: the same bytes at every layer
// count. Blobs go to a temporary directory and are removed as soon as
// they are written.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/tree"
)

// parts is how many input files the image is made of: 64 so that 1, 4,
// 16 and 64 layers all take whole files.
const parts = 64

func main() {
	log.SetFlags(0)
	log.SetPrefix("layermem: ")
	in := flag.String("in", "", "input directory (generated when missing)")
	layers := flag.Int("layers", 4, "number of layers (a divisor of 64)")
	jobs := flag.Int("jobs", runtime.NumCPU(), "layers written at once and blocks compressed per layer, as pallet build --jobs")
	comp := flag.String("compression", "gzip", "gzip or zstd")
	size := flag.Int64("size", 1<<30, "total bytes of the image")
	flag.Parse()
	if *in == "" || *layers < 1 || parts%*layers != 0 || *size%parts != 0 {
		log.Fatal("usage: layermem -in DIR -layers N (N divides 64) [-jobs J] [-compression gzip|zstd] [-size BYTES, a multiple of 64]")
	}
	c, err := layer.ParseCompression(*comp)
	if err != nil {
		log.Fatal(err)
	}
	if err := generate(*in, *size/parts); err != nil {
		log.Fatal(err)
	}
	// Generating wrote through small buffers, but the peak is reset
	// anyway so that only the layers are measured.
	resetPeak()
	out, err := os.MkdirTemp("", "layermem-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(out)

	start := time.Now()
	blobs, digests, err := build(*in, out, *layers, *jobs, c)
	if err != nil {
		log.Fatal(err)
	}
	wall := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("layers=%d jobs=%d compression=%s bytes=%d blob_bytes=%d wall_s=%.3f cpu_s=%.2f peak_rss_mb=%.1f heap_sys_mb=%.1f num_gc=%d digests=%s\n",
		*layers, *jobs, c, *size, blobs, wall.Seconds(), cpuSeconds(), peakRSS(), float64(ms.HeapSys)/(1<<20), ms.NumGC, digests)
}

// generate writes the 64 input files of n bytes each, unless they exist
// with that size already.
func generate(dir string, n int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewChaCha8([32]byte{'l', 'a', 'y', 'e', 'r', 'm', 'e', 'm'}))
	buf := make([]byte, 1<<20)
	for i := 0; i < parts; i++ {
		p := filepath.Join(dir, fmt.Sprintf("part%02d.bin", i))
		if info, err := os.Stat(p); err == nil && info.Size() == n {
			continue
		}
		if err := writeRandom(p, rng, buf, n); err != nil {
			return fmt.Errorf("generating %s: %w", p, err)
		}
	}
	return nil
}

func writeRandom(path string, rng *rand.Rand, buf []byte, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for left := n; left > 0; {
		chunk := buf[:min(int64(len(buf)), left)]
		for i := 0; i+8 <= len(chunk); i += 8 {
			v := rng.Uint64()
			for j := 0; j < 8; j++ {
				chunk[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
		left -= int64(len(chunk))
	}
	return f.Close()
}

// build writes the layers as pallet's build does: at most jobs at once,
// each file's digest known before its layer is written (the cache key)
// and checked while it is written. It returns the blobs' total size and
// a digest of their digests in layer order (the same bytes before and
// after a change to how layers are written give the same one).
func build(in, out string, layers, jobs int, c layer.Compression) (int64, string, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		total   int64
		errs    []error
		writers = make(chan struct{}, jobs)
		digests = make([]string, layers)
	)
	per := parts / layers
	for i := 0; i < layers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writers <- struct{}{}
			defer func() { <-writers }()
			n, digest, err := oneLayer(in, out, i*per, per, jobs, c)
			mu.Lock()
			defer mu.Unlock()
			total += n
			digests[i] = digest
			if err != nil {
				errs = append(errs, fmt.Errorf("layer %d: %w", i, err))
			}
		}()
	}
	wg.Wait()
	sum := sha256.Sum256([]byte(strings.Join(digests, "\n")))
	return total, hex.EncodeToString(sum[:8]), errors.Join(errs...)
}

func oneLayer(in, out string, first, n, jobs int, c layer.Compression) (int64, string, error) {
	t := tree.New()
	sums := map[string]string{}
	for k := first; k < first+n; k++ {
		p := filepath.Join(in, fmt.Sprintf("part%02d.bin", k))
		info, err := os.Stat(p)
		if err != nil {
			return 0, "", err
		}
		if sums[p], err = hashFile(p); err != nil {
			return 0, "", err
		}
		if err := t.Add(tree.Entry{Path: "data/" + filepath.Base(p), Kind: tree.File, Mode: 0o644, Source: p, Size: info.Size()}); err != nil {
			return 0, "", err
		}
	}
	l, err := layer.Build(t, out, layer.Options{Epoch: time.Unix(0, 0), Compression: c, Jobs: jobs,
		Expect: func(p string) string { return sums[p] }})
	if err != nil {
		return 0, "", err
	}
	size, _ := l.Size()
	digest, _ := l.Digest()
	return size, digest.Hex, os.Remove(l.(*layer.File).Path)
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// resetPeak sets VmHWM back to the current RSS (Linux: "5" written to
// clear_refs); elsewhere the peak includes the generation.
func resetPeak() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is VmHWM in MB, -1 when /proc cannot say.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
