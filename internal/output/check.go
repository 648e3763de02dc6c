package output

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/pallet-dev/pallet/internal/refname"
)

// Planned is what an output can know of an image before it is built: its
// names, and how many runnable manifests it will hold (one per platform
// and base).
type Planned struct {
	Repository string
	Tags       []string
	Manifests  int
}

// checker is a Target that can tell, from the plan alone, images it
// could not write.
type checker interface {
	check(images []Planned) error
}

// CheckImages refuses, before any work, images some target could not
// write: a build that is bound to fail at its last step should fail at
// its first.
func CheckImages(targets []Target, images []Planned) error {
	for _, t := range targets {
		c, ok := t.(checker)
		if !ok {
			continue
		}
		if err := c.check(images); err != nil {
			return fmt.Errorf("output %s: %w", t, err)
		}
	}
	return nil
}

func (d *DockerArchive) check(images []Planned) error {
	for _, im := range images {
		if im.Manifests > 1 {
			return fmt.Errorf("image %s would have %d platforms or bases and a docker archive holds one per name; build one platform for it (--platform)", im.Repository, im.Manifests)
		}
		for _, tag := range im.Tags {
			if _, err := name.NewTag(RefName(im.Repository, tag)); err != nil {
				return fmt.Errorf("%s is not a name docker load takes: %w", RefName(im.Repository, tag), err)
			}
		}
	}
	return checkContainerdNames(images)
}

// checkContainerdNames refuses, before the build, a name that
// containerdName, which the layout and archive write every tag through,
// would refuse once the images are built: with library/ spelled out, a
// repository of one component has a path 8 characters longer, and a
// namespace without a host is part of docker.io's path, over the
// grammar's 255 where the plan's check, which reads the name as written,
// took it.
func checkContainerdNames(images []Planned) error {
	for _, im := range images {
		for _, tag := range im.Tags {
			if _, err := containerdName(RefName(im.Repository, tag)); err != nil {
				return fmt.Errorf("%w, as docker and containerd read it in full", err)
			}
		}
	}
	return nil
}

func (r *Registry) check(images []Planned) error {
	if err := r.holds(len(images)); err != nil {
		return err
	}
	prefix := strings.HasSuffix(r.Ref, "/")
	for _, im := range images {
		if prefix && namesHost(im.Repository) {
			return fmt.Errorf("image repository %s names a registry host, so under the prefix it would be pushed to %s%s; give the repository without its host, or push it with registry:%s", im.Repository, r.Ref, im.Repository, im.Repository)
		}
		probe := Image{Repository: im.Repository, Tags: im.Tags}
		var err error
		if r.ByDigest {
			_, err = r.repository(probe)
		} else {
			_, err = r.refs(probe, prefix)
		}
		if err != nil {
			return err
		}
		// go-containerregistry takes "file:///x" or "../x" for a name on
		// the host "file:" or "..", which the push would look up only
		// once the build is done.
		full := r.Ref
		if prefix {
			full += im.Repository
		}
		if _, err := refname.ParseNormalizedNamed(full); err != nil {
			return fmt.Errorf("registry:%s: %s is not a registry reference, as docker reads one (%v)", r.Ref, full, err)
		}
	}
	return nil
}

// namesHost reports whether a repository's first component is a registry
// host, by the rule docker uses: it has a dot or a port, or is localhost.
func namesHost(repo string) bool {
	first, _, ok := strings.Cut(repo, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}
