package build

import (
	"encoding/json"

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
