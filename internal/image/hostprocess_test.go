package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/hive"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

var windowsAMD64 = platform.Platform{OS: "windows", Arch: "amd64"}

// baseFiles verifies img's one layer in the base layout and returns its
// regular files by path under Files/.
func baseFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := layer.VerifyWindowsBase(bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[strings.TrimPrefix(h.Name, "Files/")] = b
		}
	}
}

// The built-in base holds the five hives as minimal valid ones (what
// Windows Server 2025 needs), stamped with the build epoch, and keeps the
// host-process config: no os.version, cmd.exe.
func TestHostProcessScratchHives(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	img, err := hostProcessCurrent.build(windowsAMD64, t.TempDir(), epoch, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := baseFiles(t, img)
	for _, name := range []string{"DEFAULT", "SAM", "SECURITY", "SOFTWARE", "SYSTEM"} {
		got := files["Windows/System32/config/"+name]
		want, err := hive.Minimal(name, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, not the minimal hive for %s", name, len(got), name)
		}
	}
	if len(files) != 6 || !strings.Contains(string(files["License/NOTICE.txt"]), "minimal registry hive") {
		t.Errorf("files %d, notice %q", len(files), files["License/NOTICE.txt"])
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "windows" || cf.OSVersion != "" || strings.Join(cf.Config.Cmd, " ") != `c:\windows\system32\cmd.exe` {
		t.Errorf("config os %s os.version %q cmd %q", cf.OS, cf.OSVersion, cf.Config.Cmd)
	}
	again, err := hostProcessCurrent.build(windowsAMD64, t.TempDir(), epoch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d1, d2 := imageDigest(t, img), imageDigest(t, again); d1 != d2 {
		t.Errorf("two builds differ: %s, %s", d1, d2)
	}
}

// HostProcessScratchV1 is the base as pallet wrote it before the hives
// became valid, byte for byte. The digests were printed by the code of
// commit dcbdd88 (hostProcessScratch then, empty hives), run at these two
// epochs before any change of this series.
func TestHostProcessScratchV1Unchanged(t *testing.T) {
	for _, tc := range []struct {
		epoch                int64
		image, layer, diffID string
	}{
		{0, "7a7d2493121de852dbfe76b792d386030348a4d627cbc220b731d90b2b22ecb3", "fe094a22b79e9bcdedc7f3d1fd029bc41059fff5a66007e637dd684cba84a95e", "263a18c8b245356f332dbb49f2c1122aa4e3975727edcd01f5db316ab897cd94"},
		{1700000000, "673eb2d31b18f0b247f58d9fb2c798c5d5cf0962f57ee748f4cfbe327c92acb7", "f8efab7974a1774cd400e96d30e126518f0adbee63b619d0de088349c138e47d", "80382f25e5e0e6782f75186cd587e93a3c8f58d102ae7a0ecc8c9d075c5bcc99"},
	} {
		img := checkBaseDigests(t, hostProcessV1, tc.epoch, tc.image, tc.layer, tc.diffID)
		for p, b := range baseFiles(t, img) {
			if strings.HasPrefix(p, "Windows/System32/config/") && len(b) != 0 {
				t.Errorf("%s: %d bytes, want an empty file", p, len(b))
			}
		}
	}
}

func TestHostProcessScratchRefusesLinux(t *testing.T) {
	for name, base := range map[string]hostProcessBase{
		HostProcessScratch:   hostProcessCurrent,
		HostProcessScratchV1: hostProcessV1,
	} {
		_, err := base.build(platform.Platform{OS: "linux", Arch: "amd64"}, t.TempDir(), time.Time{}, nil)
		if err == nil || !strings.Contains(err.Error(), name+" is a Windows base") {
			t.Errorf("%s on linux: %v", name, err)
		}
	}
}

// checkBaseDigests builds b at epoch and fails unless its image, layer
// and diff ID digests are the ones given; it gives the image.
func checkBaseDigests(t *testing.T, b hostProcessBase, epoch int64, image, layer, diffID string) v1.Image {
	t.Helper()
	img, err := b.build(windowsAMD64, t.TempDir(), time.Unix(epoch, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := img.Layers()
	ld, _ := ls[0].Digest()
	li, _ := ls[0].DiffID()
	if got := imageDigest(t, img); got != image || ld.Hex != layer || li.Hex != diffID {
		t.Errorf("%s at epoch %d: image %s layer %s diffID %s; want %s %s %s", b.name, epoch, got, ld.Hex, li.Hex, image, layer, diffID)
	}
	return img
}

func imageDigest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.Hex
}

// The built-in base's bytes do not depend on how its layer is written:
// the digests were printed by the code of commit e02288d, which wrote
// the hives and the notice to files and hashed them, before the layer
// took them from memory. The layer at epoch 0 is also the base layer
// (aed7a7c0…) of the bench's Windows image that pallet a259379, which
// predates that series, wrote and `pallet inspect` listed.
func TestHostProcessScratchUnchanged(t *testing.T) {
	for _, tc := range []struct {
		epoch                int64
		image, layer, diffID string
	}{
		{0, "ebd6e1ba71909cf9194baf1808b2c374669ce0f62cd24b21fdb0d00715a0abac", "aed7a7c059f5dc338efce34053ba99707111062531d36f5e5ac668025f064ca6", "542ede16a729f913e3099c26e3fc91f5064c15e3f8c14aee0d836e82c061902f"},
		{1700000000, "29e9a794efbafab3020f4ea04860f2fcf561f92d073add8521f2d8c2fdf68291", "d73f85136b5119f6b49b88ea2eefb8862722d449107c8b8bda0bf053e9e64996", "1cb7ea65fadf017a9c02c2b177c19a9d05964ebd00879ad16a4ab561ca92bda1"},
	} {
		checkBaseDigests(t, hostProcessCurrent, tc.epoch, tc.image, tc.layer, tc.diffID)
	}
}

// A built-in base's layer is handed over before its files exist: a
// cache that holds the layer writes nothing, and the sums it keys the
// layer by are those of the files Write then writes, however often it
// is called.
func TestBuiltinBaseLayerWrittenOnlyOnWrite(t *testing.T) {
	for _, base := range []hostProcessBase{hostProcessCurrent, hostProcessV1} {
		work := t.TempDir()
		var got BaseLayer
		_, err := base.build(windowsAMD64, work, time.Unix(1700000000, 0), func(bl BaseLayer) (v1.Layer, error) {
			got = bl
			return static.NewLayer([]byte("held"), types.OCILayer), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if names, err := os.ReadDir(work); err != nil || len(names) != 0 {
			t.Errorf("%s: a layer not built wrote %v (%v)", base.name, names, err)
		}
		for range 2 {
			if err := got.Write(); err != nil {
				t.Fatalf("%s: %v", base.name, err)
			}
		}
		files := 0
		for e := range got.Tree.All() {
			if e.Kind != tree.File {
				continue
			}
			b, err := os.ReadFile(e.Source)
			if err != nil {
				t.Fatalf("%s: %v", base.name, err)
			}
			sum := sha256.Sum256(b)
			if want := hex.EncodeToString(sum[:]); got.Sum(e.Source) != want || int64(len(b)) != e.Size {
				t.Errorf("%s: %s: sum %s size %d; the file written has %s, %d bytes", base.name, e.Path, got.Sum(e.Source), e.Size, want, len(b))
			}
			files++
		}
		if files != 6 {
			t.Errorf("%s: %d files, want 6", base.name, files)
		}
	}
}
