// Package output writes built images somewhere: an OCI image layout, a
// docker archive, or a registry. Every target writes all or nothing: a
// layout is built aside and renamed into place, a registry tag is set only
// after every blob and manifest it points at is in.
package output

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Image is one built image with its names. Exactly one of Image (a single
// platform) and Index (several platforms) is set.
type Image struct {
	Repository string
	Tags       []string
	Image      v1.Image
	Index      v1.ImageIndex
}

// abandoned is how long a temporary output, untouched, is taken to be the
// remains of a killed build and removed by the next build of that output.
const abandoned = time.Hour

// Target is where images go.
type Target interface {
	Write(ctx context.Context, images []Image) error
	String() string
}

// Options configure targets.
type Options struct {
	// Remote are extra registry options (transport, auth, jobs).
	Remote []remote.Option
}

// Parse reads "oci:DIR", "docker:FILE" or "registry:REF".
func Parse(spec string, opt Options) (Target, error) {
	kind, arg, ok := strings.Cut(spec, ":")
	if !ok || arg == "" {
		return nil, fmt.Errorf("output %q: want oci:DIR, docker:FILE.tar or registry:REF", spec)
	}
	switch kind {
	case "oci":
		// Checked here too, so a wrong directory fails before any work.
		if err := replaceable(filepath.Clean(arg)); err != nil {
			return nil, fmt.Errorf("output %s: %w", spec, err)
		}
		return &Layout{Dir: arg}, nil
	case "docker":
		return &DockerArchive{File: arg}, nil
	case "registry":
		return &Registry{Ref: arg, Options: opt.Remote}, nil
	}
	return nil, fmt.Errorf("output %q: unknown kind %q (want oci, docker or registry)", spec, kind)
}

// RefName is the name an image has inside a layout or archive:
// "repository:tag".
func RefName(repo, tag string) string { return repo + ":" + tag }
