package build

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
)

// BaseConfig reads the config of base ref for platform p as a build with
// opt resolves it (resolveBase): through image.Resolver, offline only from
// a layout, with the build's registry bounds, and ctx's credentials and
// insecure registries; dir resolves an oci: layout, as the plan's Dir
// does. It returns the image's manifest digest too, by which the base can
// be named so that the build takes the very image read. A Dockerfile's
// front end asks for it before there is a plan: a Dockerfile sets no
// limits of its own, so opt's are the build's.
//
// Only the manifest and config are read: the layers, which the build's
// cache keeps (Resolver.Blobs), are not, so no cache is opened here.
func BaseConfig(ctx context.Context, opt Options, dir, ref string, p platform.Platform) (*v1.ConfigFile, v1.Hash, error) {
	if err := opt.Network.allowsBase(ref); err != nil {
		return nil, v1.Hash{}, err
	}
	ctx = withTransferBounds(ctx, fetcherLimits(limits(opt.Limits, plan.Limits{})))
	r := &image.Resolver{Dir: dir}
	img, err := r.Base(ctx, ref, p)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("base %s: config: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, v1.Hash{}, fmt.Errorf("base %s: %w", ref, err)
	}
	return cf, d, nil
}
