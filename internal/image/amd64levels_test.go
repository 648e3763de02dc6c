package image

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A registry index whose image names no platform is taken for linux/amd64,
// as go-containerregistry and an OCI layout's reading take it: it is the
// base of a linux/amd64/v3 build too, whose closest image it is, where
// go-containerregistry, asked for v3, finds none.
func TestRegistryBaseEntryWithoutPlatform(t *testing.T) {
	reg := testregistry.Start(t, nil)
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: img})
	ref := reg.Host + "/noplatform/base:v1"
	nref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(nref, idx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"linux/amd64", "linux/amd64/v3"} {
		p, err := platform.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&Resolver{}).Base(context.Background(), ref, p)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if d, err := got.Digest(); err != nil || d != want {
			t.Errorf("%s: the base is %v (%v), want %v", s, d, err, want)
		}
	}
}

// A registry index whose images name no platform is read as containerd
// reads it, and as a layout is: each image's platform is its config's.
// go-containerregistry took them all for linux/amd64, so an arm64 build
// found no image, and an amd64 build took the arm64 one, listed first.
func TestRegistryBaseEntriesWithoutPlatformByConfig(t *testing.T) {
	reg := testregistry.Start(t, nil)
	images := map[string]v1.Image{}
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"arm64", "amd64"} {
		img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: arch})
		if err != nil {
			t.Fatal(err)
		}
		images[arch] = img
		adds = append(adds, mutate.IndexAddendum{Add: img})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	if m, err := idx.IndexManifest(); err != nil || m.Manifests[0].Platform != nil {
		t.Fatalf("the index's entries name a platform: %v", err)
	}
	ref := reg.Host + "/byconfig/base:v1"
	nref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(nref, idx); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		got, err := (&Resolver{}).Base(context.Background(), ref, platform.Platform{OS: "linux", Arch: arch})
		if err != nil {
			t.Errorf("linux/%s: %v", arch, err)
			continue
		}
		want, _ := images[arch].Digest()
		if d, err := got.Digest(); err != nil || d != want {
			t.Errorf("linux/%s: the base is %v (%v), want %v", arch, d, err, want)
		}
	}
	_, err = (&Resolver{}).Base(context.Background(), ref, platform.Platform{OS: "linux", Arch: "riscv64"})
	if want := "its index has no image for linux/riscv64 (it holds linux/arm64 (by its config); linux/amd64 (by its config))"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("linux/riscv64: err = %v, want %q", err, want)
	}
}
