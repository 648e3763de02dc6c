package image

import (
	"context"
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
