package build

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/pallet-dev/pallet/internal/bounded"

	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Metadata is what --metadata-file holds.
type Metadata struct {
	Images  []MetadataImage  `json:"images"`
	Outputs []MetadataOutput `json:"outputs"`
}

// MetadataImage is one image: its index (or one manifest) and manifests.
type MetadataImage struct {
	record.Result
	Manifests []MetadataManifest `json:"manifests"`
}

// MetadataManifest is one platform's manifest on one base.
type MetadataManifest struct {
	Platform string `json:"platform"`
	Base     string `json:"base"`
	Digest   string `json:"digest"`
	// Config is the config's digest, the image ID docker shows.
	Config string `json:"config"`
}

// MetadataOutput is what one output holds.
type MetadataOutput struct {
	Output  string   `json:"output"`
	Written []string `json:"written"`
}

func writeMetadata(path string, outputs []output.Target, res *Result) error {
	var m Metadata
	for _, r := range res.Record.Results {
		mi := MetadataImage{Result: r, Manifests: []MetadataManifest{}}
		for _, im := range res.Record.Images {
			if im.Name == r.Name {
				mi.Manifests = append(mi.Manifests, MetadataManifest{Platform: im.Platform, Base: im.Base, Digest: im.Digest, Config: im.Config})
			}
		}
		m.Images = append(m.Images, mi)
	}
	for i, t := range outputs {
		m.Outputs = append(m.Outputs, MetadataOutput{Output: t.String(), Written: res.Written[i]})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tempfile.SweepBeside(path)
	return tempfile.WriteFile(path, append(data, '\n'))
}

// maxMetadata bounds a build's metadata file read back: it names each
// image's digest per output, a few hundred bytes an image.
const maxMetadata = 16 << 20

// PushedImage is the image a build's metadata file names (pallet index
// create --from-metadata): the one image it built, or the one called
// imageName. It is looked for where the build pushed it (its outputs'
// REPO@DIGEST lines), in repo first, else taken to be in repo.
func PushedImage(file string, repo name.Repository, imageName string) (name.Digest, error) {
	data, err := bounded.ReadFile(file, maxMetadata)
	if err != nil {
		return name.Digest{}, fmt.Errorf("--from-metadata: %w", err)
	}
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return name.Digest{}, fmt.Errorf("--from-metadata %s: %w", file, err)
	}
	var names []string
	var digest string
	for _, im := range m.Images {
		names = append(names, im.Name)
		if imageName == "" && len(m.Images) == 1 || im.Name == imageName {
			digest = im.Digest
		}
	}
	if digest == "" {
		if imageName == "" {
			return name.Digest{}, fmt.Errorf("--from-metadata %s: the build made %d images (%s); choose one with --image", file, len(names), strings.Join(names, ", "))
		}
		return name.Digest{}, fmt.Errorf("--from-metadata %s: no image %q (it has %s)", file, imageName, strings.Join(names, ", "))
	}
	var pushed []name.Digest
	for _, o := range m.Outputs {
		if !strings.HasPrefix(o.Output, "registry:") {
			continue
		}
		for _, w := range o.Written {
			if d, err := name.NewDigest(w); err == nil && d.DigestStr() == digest {
				pushed = append(pushed, d)
			}
		}
	}
	if i := slices.IndexFunc(pushed, func(d name.Digest) bool { return d.Context().Name() == repo.Name() }); i >= 0 {
		return pushed[i], nil
	}
	if len(pushed) > 0 {
		return pushed[0], nil
	}
	d, err := name.NewDigest(repo.Name()+"@"+digest, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("--from-metadata %s: image %s: %w", file, digest, err)
	}
	return d, nil
}
