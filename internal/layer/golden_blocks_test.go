package layer_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/tree"
)

// blocksTree spans many compression blocks: incompressible and
// compressible content, files ending on and just off the 1 MiB block and
// 16 KiB dictionary boundaries, and an empty file.
func blocksTree(t *testing.T) *tree.Tree {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewChaCha8([32]byte{'b', 'l', 'o', 'c', 'k', 's'}))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	text := func(n int) []byte {
		var sb strings.Builder
		for sb.Len() < n {
			fmt.Fprintf(&sb, "line %d: key%d = value %d\n", sb.Len(), rng.IntN(50), rng.IntN(1000))
		}
		return []byte(sb.String()[:n])
	}
	files := map[string][]byte{
		"a/random.bin":   random(3<<20 + 777),
		"a/text.txt":     text(5<<19 + 3),
		"b/empty":        nil,
		"b/block":        random(1 << 20),
		"b/dict-edge":    text(16384),
		"c/dict-edge+1":  random(16385),
		"c/mostly-zeros": append(make([]byte, 1<<20+5), random(100)...),
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := tree.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestGoldenBlockDigests pins the digests of a layer spanning many
// compression blocks, written with several job counts: the compressors'
// framing (block size, dictionaries, final block) may change how it runs,
// never the bytes. The values were recorded with pgzip v1.3.0 and zstd
// of klauspost/compress v1.20.4 doing the framing, and checked as
// TestGoldenDigests says (sha256sum, gzip -dc and zstd -dc of the blobs
// kept with PALLET_GOLDEN_DIR; for gzip, also the tar GNU gzip
// decompressed put through pgzip v1.3.0 at the level, whose sha256 is
// the digest). The legacy level's digest is the one every gzip layer had
// before DefaultGzipLevel.
func TestGoldenBlockDigests(t *testing.T) {
	src := blocksTree(t)
	type setting struct {
		c         layer.Compression
		gzipLevel int
	}
	want := map[setting]string{
		{layer.Gzip, 0}:                     "sha256:f011283c93dcafab6af1e00347de1e1b8dbefbc411bfc3f7c8fbec6eb93c1d2a",
		{layer.Gzip, layer.LegacyGzipLevel}: "sha256:cb725d5ecc895a3a241f3267a1244f1cda909eafb3401e7dbbc0d5a88633ee43",
		{layer.Zstd, 0}:                     "sha256:5a7e1b3022f972a6a61a0285add87af6e5eb1f160cf5feb02d61d95755d329f0",
	}
	const diffID = "sha256:d4473310d5fa7a066c9e89f89753e13f525694713501047e970c0e5300499cce"
	for _, s := range []setting{{layer.Gzip, 0}, {layer.Gzip, layer.LegacyGzipLevel}, {layer.Zstd, 0}} {
		for _, jobs := range []int{1, 2, 5} {
			dir := t.TempDir()
			if keep := os.Getenv("PALLET_GOLDEN_DIR"); keep != "" {
				dir = filepath.Join(keep, fmt.Sprintf("blocks-%s%d-%d", s.c, s.gzipLevel, jobs))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			l, err := layer.Build(src, dir, layer.Options{Epoch: time.Unix(1700000000, 0), Compression: s.c, GzipLevel: s.gzipLevel, Jobs: jobs})
			if err != nil {
				t.Fatal(err)
			}
			digest, _ := l.Digest()
			d, _ := l.DiffID()
			if digest.String() != want[s] || d.String() != diffID {
				t.Errorf("%s level %d, %d jobs: digest %s diffID %s; want %s and %s", s.c, s.gzipLevel, jobs, digest, d, want[s], diffID)
			}
		}
	}
}
