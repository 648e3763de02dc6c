package output

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry pushes to a registry. Ref is "REPO[:TAG]" for a recipe with one
// image (its tags are pushed to REPO; a TAG in Ref replaces them), or
// "PREFIX/" to push every image as PREFIX/REPOSITORY:TAG.
type Registry struct {
	Ref     string
	Options []remote.Option
}

func (r *Registry) String() string { return "registry:" + r.Ref }

// Write pushes each image. go-containerregistry uploads every blob and
// child manifest before the manifest that carries the tag, so a failed push
// never leaves a tag pointing at a partial image. Further tags are added
// only after the first one is complete.
func (r *Registry) Write(ctx context.Context, images []Image) error {
	prefix := strings.HasSuffix(r.Ref, "/")
	if !prefix && len(images) != 1 {
		return fmt.Errorf("registry:%s names one repository but the build has %d images; use registry:PREFIX/ to push each under PREFIX", r.Ref, len(images))
	}
	opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, r.Options...)
	for _, im := range images {
		tags, err := r.refs(im, prefix)
		if err != nil {
			return err
		}
		first := tags[0]
		if im.Index != nil {
			err = remote.WriteIndex(first, im.Index, opts...)
		} else {
			err = remote.Write(first, im.Image, opts...)
		}
		if err != nil {
			return fmt.Errorf("push %s: %w", first, err)
		}
		for _, t := range tags[1:] {
			if im.Index != nil {
				err = remote.Tag(t, im.Index, opts...)
			} else {
				err = remote.Tag(t, im.Image, opts...)
			}
			if err != nil {
				return fmt.Errorf("tag %s: %w", t, err)
			}
		}
	}
	return nil
}

func (r *Registry) refs(im Image, prefix bool) ([]name.Tag, error) {
	var repo string
	tags := im.Tags
	if prefix {
		repo = r.Ref + im.Repository
	} else {
		ref, err := name.ParseReference(r.Ref)
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %w", r.Ref, err)
		}
		t, ok := ref.(name.Tag)
		if !ok {
			return nil, fmt.Errorf("registry:%s: push to a tag, not a digest", r.Ref)
		}
		repo = ref.Context().Name()
		// name.ParseReference defaults the tag to "latest"; only a tag
		// actually written in Ref replaces the recipe's tags.
		if strings.LastIndex(r.Ref, ":") > strings.LastIndex(r.Ref, "/") {
			tags = []string{t.TagStr()}
		}
	}
	out := make([]name.Tag, 0, len(tags))
	for _, tag := range tags {
		t, err := name.NewTag(repo + ":" + tag)
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %w", r.Ref, err)
		}
		out = append(out, t)
	}
	return out, nil
}
