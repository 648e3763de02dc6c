// Package output writes built images somewhere: an OCI image layout, a
// docker archive, or a registry. Every target writes all or nothing: a
// layout is built aside and renamed into place, a registry tag is set only
// after every blob and manifest it points at is in.
package output

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/refname"
)

// Image is one built image with its names. Exactly one of Image (a single
// platform) and Index (several platforms) is set.
type Image struct {
	Repository string
	Tags       []string
	Image      v1.Image
	Index      v1.ImageIndex
	// Referrers are OCI 1.1 artifact manifests about the image's
	// manifests (SBOMs, provenance), each naming its subject.
	Referrers []v1.Image
	// Pos, when set, is where the front end declares the image
	// ("pallet.yaml:9"), and About what each of its blobs and manifests
	// is ("layer of linux/amd64 placing app (pallet.yaml:14)"): a push
	// that fails names them, not only the request that failed.
	Pos   string
	About map[v1.Hash]string
}

// Target is where images go.
type Target interface {
	Write(ctx context.Context, images []Image) error
	String() string
}

// Options configure targets.
type Options struct {
	// Remote are extra registry options (transport, auth, jobs).
	Remote []remote.Option
	// Stdout is where "docker:-" writes; nil is os.Stdout.
	Stdout io.Writer
}

// Parse reads "oci:DIR", "docker:FILE" (FILE "-": standard output) or
// "registry:REF". A DIR or FILE that pallet would refuse to replace is
// refused here, so a wrong path fails before any work.
func Parse(spec string, opt Options) (Target, error) {
	kind, arg, ok := strings.Cut(spec, ":")
	if !ok || arg == "" {
		return nil, fmt.Errorf("output %q: want oci:DIR, docker:FILE.tar, docker:- or registry:REF", spec)
	}
	switch kind {
	case "oci":
		if err := checkPath(arg, replaceable); err != nil {
			return nil, fmt.Errorf("output %s: %w", spec, err)
		}
		return &Layout{Dir: arg}, nil
	case "docker":
		if arg == "-" {
			return stdoutArchive(spec, opt.Stdout)
		}
		if err := checkPath(arg, replaceableArchive); err != nil {
			return nil, fmt.Errorf("output %s: %w", spec, err)
		}
		return &DockerArchive{File: arg}, nil
	case "registry":
		return &Registry{Ref: arg, Options: opt.Remote}, nil
	}
	return nil, fmt.Errorf("output %q: unknown kind %q (want oci, docker or registry)", spec, kind)
}

// checkPath runs a replaceable check on where p really leads.
func checkPath(p string, check func(string) error) error {
	r, err := resolve(p)
	if err != nil {
		return err
	}
	return check(r)
}

// stdoutArchive is "docker:-". Like `docker save`, it refuses to pour a tar
// archive onto a terminal.
func stdoutArchive(spec string, w io.Writer) (Target, error) {
	if w == nil {
		w = os.Stdout
	}
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return nil, fmt.Errorf("output %s: standard output is a terminal; redirect it (> image.tar, | docker load)", spec)
	}
	return &DockerArchive{File: "-", Writer: w}, nil
}

// RefName is the name an image has inside a layout or archive:
// "repository:tag".
func RefName(repo, tag string) string { return repo + ":" + tag }

// containerdName is ref as containerd names an image: in full, with
// docker's default registry and library/ spelled out ("hello:latest" is
// "docker.io/library/hello:latest"). `ctr import` takes a layout's
// io.containerd.image.name as it stands, while the CRI plugin, and so the
// kubelet, looks images up by the full name alone: a short one is an
// image Kubernetes never finds and pulls instead. BuildKit's and docker's
// layouts, and ctr's own import of a docker archive, name images so.
func containerdName(ref string) (string, error) {
	n, err := refname.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("%s is not an image reference: %w", ref, err)
	}
	return n.String(), nil
}
