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

// A registry base whose index lists windows/amd64 for two Windows versions
// is refused as ambiguous, naming them; one version, or a Linux platform
// beside it, is not.
func TestRegistryBaseSeveralWindowsVersions(t *testing.T) {
	reg := testregistry.Start(t, nil)
	winVersions := []string{"10.0.17763.6532", "10.0.20348.2849"}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, v := range winVersions {
		img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "windows", Architecture: "amd64", OSVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "windows", Architecture: "amd64", OSVersion: v}}})
	}
	linux, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: linux, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	ref := reg.Host + "/windows/base:multi"
	nref, _ := name.ParseReference(ref)
	if err := remote.WriteIndex(nref, idx); err != nil {
		t.Fatal(err)
	}
	r := &Resolver{}
	_, err = r.Base(context.Background(), ref, platform.Platform{OS: "windows", Arch: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "2 Windows versions") || !strings.Contains(err.Error(), winVersions[0]) || !strings.Contains(err.Error(), winVersions[1]) {
		t.Errorf("an ambiguous Windows base: %v", err)
	}
	if _, err := r.Base(context.Background(), ref, platform.Platform{OS: "linux", Arch: "amd64"}); err != nil {
		t.Errorf("the Linux entry of the same index: %v", err)
	}
}
