package output

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Digest is the digest of what im is: its index, or its one manifest.
func (im Image) Digest() (v1.Hash, error) {
	if im.Index != nil {
		return im.Index.Digest()
	}
	return im.Image.Digest()
}

// Written says what a write of images to t produced, one line per image
// and name, as CI scripts take it (crane, ko): REPO:TAG@DIGEST for a push,
// REPO@DIGEST for a push by digest, the index or manifest digest for a
// layout or archive.
func Written(t Target, images []Image) ([]string, error) {
	var out []string
	for _, im := range images {
		d, err := im.Digest()
		if err != nil {
			return nil, err
		}
		r, ok := t.(*Registry)
		if !ok {
			out = append(out, d.String())
			continue
		}
		if r.ByDigest {
			ref, err := r.digestRef(im)
			if err != nil {
				return nil, err
			}
			out = append(out, ref.String())
			continue
		}
		tags, err := r.refs(im, len(r.Ref) > 0 && r.Ref[len(r.Ref)-1] == '/')
		if err != nil {
			return nil, err
		}
		for _, tag := range tags {
			out = append(out, tag.String()+"@"+d.String())
		}
	}
	return out, nil
}
