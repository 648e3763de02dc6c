package layer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/tree"
)

// goldenTree is one fixed tree: a directory, a plain file, an executable
// and a symlink, placed under /opt/golden/.
func goldenTree(t *testing.T) *tree.Tree {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"bin/tool":   {"#!/bin/sh\necho golden\n", 0o755},
		"etc/a.conf": {"key = value\n", 0o644},
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("bin/tool", filepath.Join(dir, "tool")); err != nil {
		t.Fatal(err)
	}
	src, err := tree.FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := tree.New()
	if err := out.Place(src, tree.Placement{Dest: "/opt/golden/"}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGoldenDigests pins the digests of goldenTree's layer in each format
// and compression: a change to any byte pallet writes (tar headers, order,
// PAX records, compression settings) shows here, and with it the need for
// a new layer cache key version.
//
// How the values were checked independently of pallet's own hashing, on
// the layer blob written by this test (PALLET_GOLDEN_DIR=/tmp/g go test
// -run Golden ./internal/layer/ keeps them):
//   - digest: `sha256sum BLOB`;
//   - diffID: `gzip -dc BLOB | sha256sum` (gzip), `zstd -dc BLOB | sha256sum` (zstd);
//   - content: `gzip -dc BLOB | tar -tvv --full-time` (GNU tar) lists the
//     entries, owners 0/0, the epoch as mtime, and modes 0755/0644;
//     for the Windows format the same listing shows Hives/ and Files/
//     first and every path under Files/, and Python's tarfile shows the
//     MSWINDOWS.fileattr, MSWINDOWS.rawsd (not on the two roots) and
//     LIBARCHIVE.creationtime PAX records on each entry;
//   - gzip bytes: `gzip -dc BLOB | P | sha256sum` gives the digest, where P
//     is pgzip v1.3.0 (NewWriterLevel at the layer's level,
//     SetConcurrency(1<<20, 2), stdin to stdout): another implementation
//     of the framing, from the tar GNU gzip decompressed. The legacy-level
//     rows are the digests of every gzip layer before DefaultGzipLevel,
//     checked the same way (pgzip's DefaultCompression).
func TestGoldenDigests(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		format         layer.Format
		compression    layer.Compression
		gzipLevel      int
		digest, diffID string
	}{
		{layer.Linux, layer.Gzip, 0, "sha256:117f4c880da79a898972bce1bfa03174009aaeeab23bc5dbabbea081019c1969", "sha256:395011618f369350e954d87106a1a53ff9afae10609d848cdc6b05e998e9bcc5"},
		{layer.Windows, layer.Gzip, 0, "sha256:4d99f65bf0c715ff98fb56635e09b5661d56b9e0315c298e2af22412d716cea4", "sha256:2ed0c7d8212258b14f3f4dfe38a151d55905b1d16f53d3a6f8606ec8ddc660da"},
		{layer.Linux, layer.Gzip, layer.LegacyGzipLevel, "sha256:7306e314146f1cae308dccb6494ae620f9be9a886f337e1fbc287da8a3dbd529", "sha256:395011618f369350e954d87106a1a53ff9afae10609d848cdc6b05e998e9bcc5"},
		{layer.Windows, layer.Gzip, layer.LegacyGzipLevel, "sha256:d7c6488a774471b500882b0d183e0d4bb526ebc7b9f360215e93d9a91b788d35", "sha256:2ed0c7d8212258b14f3f4dfe38a151d55905b1d16f53d3a6f8606ec8ddc660da"},
		{layer.Windows, layer.Zstd, 0, "sha256:783d9d8317033c937130288128e424a372b53a3312731ba27d8f30d310145219", "sha256:2ed0c7d8212258b14f3f4dfe38a151d55905b1d16f53d3a6f8606ec8ddc660da"},
		{layer.Linux, layer.Zstd, 0, "sha256:22f0a49a6e2d975eaae399f6f37a1478178517488c9d6c939a576694bc2db93e", "sha256:395011618f369350e954d87106a1a53ff9afae10609d848cdc6b05e998e9bcc5"},
	} {
		name := tc.format.String() + "-" + string(tc.compression)
		if tc.gzipLevel != 0 {
			name += fmt.Sprint(tc.gzipLevel)
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if keep := os.Getenv("PALLET_GOLDEN_DIR"); keep != "" {
				dir = filepath.Join(keep, name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			l, err := layer.Build(goldenTree(t), dir, layer.Options{Format: tc.format, Epoch: epoch, Compression: tc.compression, GzipLevel: tc.gzipLevel})
			if err != nil {
				t.Fatal(err)
			}
			// validate.Layer reads the blob as gzip only; a zstd layer's
			// Uncompressed is checked against its DiffID instead.
			if tc.compression == layer.Gzip {
				if err := validate.Layer(l); err != nil {
					t.Errorf("validate.Layer: %v", err)
				}
			} else {
				rc, err := l.Uncompressed()
				if err != nil {
					t.Fatal(err)
				}
				h := sha256.New()
				_, err = io.Copy(h, rc)
				rc.Close()
				if diffID, _ := l.DiffID(); err != nil || "sha256:"+hex.EncodeToString(h.Sum(nil)) != diffID.String() {
					t.Errorf("uncompressed content does not hash to the diffID %s (%v)", diffID, err)
				}
			}
			digest, _ := l.Digest()
			diffID, _ := l.DiffID()
			if digest.String() != tc.digest || diffID.String() != tc.diffID {
				t.Errorf("digest %s diffID %s; want %s and %s", digest, diffID, tc.digest, tc.diffID)
			}
		})
	}
}
