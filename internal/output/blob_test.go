package output

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/layer"
)

// cachedLayer puts a random layer's blob in dir, as pallet's cache holds
// it, and returns it as the layer file the build would use.
func cachedLayer(t *testing.T, dir string, verified bool) (*layer.File, []byte) {
	t.Helper()
	l, err := random.Layer(4096, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := l.Digest()
	diffID, _ := l.DiffID()
	path := filepath.Join(dir, d.Hex+".gzip")
	if err := os.WriteFile(path, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	f := layer.Open(path, d, diffID, int64(len(blob)), layer.Gzip)
	f.Verified = verified
	return f, blob
}

// A layout's blobs are files of their own: a write to one leaves the
// cache entry it came from intact (a hard link would share it).
func TestLayoutSharesNoInodeWithCache(t *testing.T) {
	for _, verified := range []bool{false, true} {
		cache := t.TempDir()
		l, blob := cachedLayer(t, cache, verified)
		out := filepath.Join(t.TempDir(), "out")
		img := newImage(t, "amd64", l)
		if err := (&Layout{Dir: out}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1"}, Image: img}}); err != nil {
			t.Fatal(err)
		}
		d, _ := l.Digest()
		outBlob := filepath.Join(out, "blobs", "sha256", d.Hex)
		got, err := os.ReadFile(outBlob)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, blob) {
			t.Fatalf("verified %v: the layout's blob differs from the cache's", verified)
		}
		ci, _ := os.Stat(l.Path)
		oi, _ := os.Stat(outBlob)
		if os.SameFile(ci, oi) {
			t.Errorf("verified %v: the layout's blob is the cache's file", verified)
		}
		if err := os.WriteFile(outBlob, []byte("clobbered"), 0o644); err != nil {
			t.Fatal(err)
		}
		if now, _ := os.ReadFile(l.Path); !bytes.Equal(now, blob) {
			t.Errorf("verified %v: writing the output changed the cache entry", verified)
		}
	}
}

// damagedLayer serves other bytes than its digest says, as a layer read
// from a damaged source would.
type damagedLayer struct {
	v1.Layer
	data []byte
}

func (d damagedLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(d.data)), nil
}

// A blob is checked against its digest as it is copied into a layout,
// unless its source says it was checked in this build; a damaged one
// fails the output, which is then not written.
func TestLayoutRefusesDamagedBlobs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T) v1.Layer
		want   string
	}{
		{"cached file with a flipped byte", func(t *testing.T) v1.Layer {
			l, blob := cachedLayer(t, t.TempDir(), false)
			blob[len(blob)/2] ^= 0xff
			os.WriteFile(l.Path, blob, 0o644)
			return l
		}, "digest"},
		{"truncated cached file", func(t *testing.T) v1.Layer {
			l, blob := cachedLayer(t, t.TempDir(), false)
			os.WriteFile(l.Path, blob[:len(blob)-10], 0o644)
			return l
		}, "bytes"},
		{"streamed layer", func(t *testing.T) v1.Layer {
			l, blob := cachedLayer(t, t.TempDir(), false)
			bad := bytes.Clone(blob)
			bad[0] ^= 0xff
			return damagedLayer{Layer: l, data: bad}
		}, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.damage(t)
			out := filepath.Join(t.TempDir(), "out")
			img := newImage(t, "amd64", l)
			err := (&Layout{Dir: out}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1"}, Image: img}})
			d, _ := l.Digest()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), d.String()) {
				t.Fatalf("want an error naming %s and %q, got %v", d, tc.want, err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a failed output was written")
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) != 0 {
				t.Errorf("temporaries left: %v", left)
			}
		})
	}
}

// A verified cached blob is cloned where the file system can (run with
// TMPDIR on btrfs or XFS to see it): a file of its own, with the same
// bytes, that a write leaves the cache's alone. Elsewhere cloneBlob
// reports that it did nothing, and the caller copies.
func TestCloneBlob(t *testing.T) {
	dir := t.TempDir()
	l, blob := cachedLayer(t, dir, true)
	p := layout.Path(filepath.Join(dir, "out"))
	d, _ := l.Digest()
	done, err := cloneBlob(p, d, int64(len(blob)), l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !done {
		if left, _ := filepath.Glob(filepath.Join(string(p), "blobs", "sha256", "*")); len(left) != 0 {
			t.Errorf("a failed clone left %v", left)
		}
		t.Skipf("the file system of %s cannot clone files", dir)
	}
	dst := blobPath(p, d)
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("clone differs from its source (%v)", err)
	}
	si, _ := os.Stat(l.Path)
	di, _ := os.Stat(dst)
	if os.SameFile(si, di) {
		t.Fatal("the clone is the source file")
	}
	f, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("clobbered"), 0)
	f.Close()
	if now, _ := os.ReadFile(l.Path); !bytes.Equal(now, blob) {
		t.Error("writing the clone changed the source")
	}
	// A source of another size than its layer says is refused.
	os.Remove(dst)
	if _, err := cloneBlob(p, d, int64(len(blob))+1, l.Path); err == nil {
		t.Error("a clone of the wrong size was accepted")
	}
}
