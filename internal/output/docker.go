package output

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DockerArchive writes a tarball that `docker load` accepts. That format
// holds one platform per name, so a multi-platform image must be narrowed
// with --platform first.
type DockerArchive struct {
	File string
}

func (d *DockerArchive) String() string { return "docker:" + d.File }

// Write writes the archive to a temporary file and renames it into place.
func (d *DockerArchive) Write(ctx context.Context, images []Image) error {
	refs := map[name.Reference]v1.Image{}
	for _, im := range images {
		if im.Image == nil {
			return fmt.Errorf("docker archive %s: image %s has several platforms and a docker archive holds one; choose one with --platform", d.File, im.Repository)
		}
		for _, tag := range im.Tags {
			t, err := name.NewTag(RefName(im.Repository, tag))
			if err != nil {
				return fmt.Errorf("docker archive: %s: %w", RefName(im.Repository, tag), err)
			}
			refs[t] = im.Image
		}
	}
	if err := os.MkdirAll(filepath.Dir(d.File), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.File), "."+filepath.Base(d.File)+".new-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tarball.MultiRefWrite(refs, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("docker archive %s: %w", d.File, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), d.File)
}
