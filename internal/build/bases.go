package build

import (
	"context"
	"fmt"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/platform"
)

// base resolves a base image under the build's network policy: offline,
// only bases that need no registry.
func (b *builder) base(ctx context.Context, ref string, p platform.Platform) (v1.Image, error) {
	if f, ok := b.prefetched[baseKey{ref, p.String()}]; ok {
		<-f.done
		return f.img, f.err
	}
	return b.resolveBase(ctx, ref, p)
}

func (b *builder) resolveBase(ctx context.Context, ref string, p platform.Platform) (v1.Image, error) {
	if err := b.opt.Network.allowsBase(ref); err != nil {
		return nil, err
	}
	return b.bases.Base(ctx, ref, p)
}

// allowsBase refuses, offline, a base that only a registry holds.
func (n Network) allowsBase(ref string) error {
	if n.Offline && !image.IsBuiltin(ref) && !strings.HasPrefix(ref, "oci:") {
		return fmt.Errorf("base %s is in a registry, and the build is offline; give it as an OCI layout (oci:DIR)", ref)
	}
	return nil
}

// baseKey names a base for one platform.
type baseKey struct{ ref, platform string }

// baseFuture is a base being resolved.
type baseFuture struct {
	done chan struct{}
	img  v1.Image
	err  error
}

// prefetchBases starts resolving every base of the plan, once per
// platform, while the artifacts are fetched and built: a registry's
// manifest and config round trips, or a built-in base's layer, then
// overlap that work instead of following it. So does the reading of
// each base's view (its layers, downloaded and listed on a fresh
// cache), which every layer placed on a Linux base, and every Windows
// layer, waits for.
//
// It returns a wait for the built-in bases, which write into the work
// directory and must be done before it is removed, and for the views,
// which write into the cache, even when the build fails; a view not
// started by then is not started. Resolving the others only reads, into
// memory, and a failing build does not wait for it.
//
// The bases are resolved under a context of their own, which the wait
// of a failed build cancels first: the images it resolves read their
// layers under it, and a view being read would otherwise download a
// base's layers, gigabytes on a fresh cache, before the failure is
// reported. A build that succeeds leaves it be, as its outputs read the
// bases' layers after it returns.
func (b *builder) prefetchBases(ctx context.Context) (wait func(failed bool)) {
	ctx, cancel := context.WithCancel(ctx)
	b.prefetched = map[baseKey]*baseFuture{}
	var builtins []*baseFuture
	var views sync.WaitGroup
	over := make(chan struct{})
	// Every future is in the map before any starts: reading a view
	// looks its base up there (base), which would race with the map
	// still being filled.
	type prefetch struct {
		ref string
		p   platform.Platform
		f   *baseFuture
	}
	var todo []prefetch
	for _, im := range b.plan.Images {
		for _, pi := range im.Platforms {
			for _, ref := range pi.Bases {
				k := baseKey{ref, pi.Platform.String()}
				if b.prefetched[k] != nil {
					continue
				}
				f := &baseFuture{done: make(chan struct{})}
				b.prefetched[k] = f
				todo = append(todo, prefetch{ref, pi.Platform, f})
			}
		}
	}
	for _, t := range todo {
		ref, p, f := t.ref, t.p, t.f
		if image.IsBuiltin(ref) {
			builtins = append(builtins, f)
		}
		go func() {
			defer close(f.done)
			f.img, f.err = b.resolveBase(ctx, ref, p)
		}()
		if image.IsBuiltin(ref) {
			continue
		}
		views.Add(1)
		go func() {
			defer views.Done()
			select {
			case <-f.done:
			case <-over:
				return
			}
			select {
			case <-over:
				return
			default:
			}
			// Its error, kept in the view's future, is the
			// placing layer's to report, with its names.
			if p.IsWindows() {
				_, _ = b.windowsViewOf(ctx, ref, p)
			} else {
				_, _ = b.viewOf(ctx, ref, p)
			}
		}()
	}
	return func(failed bool) {
		if failed {
			cancel()
		}
		close(over)
		for _, f := range builtins {
			<-f.done
		}
		views.Wait()
	}
}

// warnMixedHostProcess warns of an index that holds Linux entries and a
// Windows entry without os.version (a host-process image): containerd on
// Windows matches an entry without os.version only from 1.6.18 and 1.7.0
// on; older ones find no match in such an index.
func (b *builder) warnMixedHostProcess(name string, imgs []v1.Image) {
	var linux, hpc bool
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return
		}
		linux = linux || cf.OS == "linux"
		hpc = hpc || (cf.OS == "windows" && cf.OSVersion == "")
	}
	if linux && hpc {
		b.opt.Progress.Warn("image %s: its index holds Linux images and a Windows image without os.version (host-process); Windows nodes need containerd 1.6.18 or 1.7.0 and later to pull it", name)
	}
}
