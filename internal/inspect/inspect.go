// Package inspect describes images from outside: what an OCI layout, a
// docker archive or a registry holds, per platform, with layers and config.
// It reads through go-containerregistry only, so it sees what any other
// client would see.
package inspect

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/regauth"
)

// Image describes one manifest.
type Image struct {
	Name      string       `json:"name,omitempty"`
	Digest    string       `json:"digest"`
	MediaType string       `json:"mediaType"`
	Platform  string       `json:"platform"`
	OSVersion string       `json:"osVersion,omitempty"`
	Layers    []Layer      `json:"layers"`
	Config    v1.Config    `json:"config"`
	Created   v1.Time      `json:"created"`
	History   []v1.History `json:"history,omitempty"`
}

// Layer describes one layer blob.
type Layer struct {
	Digest    string   `json:"digest"`
	Size      int64    `json:"size"`
	MediaType string   `json:"mediaType"`
	URLs      []string `json:"urls,omitempty"`
}

// Index describes an index and the images under it.
type Index struct {
	Name      string  `json:"name,omitempty"`
	Digest    string  `json:"digest"`
	MediaType string  `json:"mediaType"`
	Images    []Image `json:"images"`
}

// Report is everything found at a location.
type Report struct {
	Source  string  `json:"source"`
	Indexes []Index `json:"indexes,omitempty"`
	Images  []Image `json:"images,omitempty"`
}

// Open inspects "oci:DIR", "docker:FILE" or a registry reference.
func Open(ctx context.Context, spec string, opts ...remote.Option) (*Report, error) {
	r := &Report{Source: spec}
	switch {
	case strings.HasPrefix(spec, "oci:"):
		return r, r.layout(strings.TrimPrefix(spec, "oci:"))
	case strings.HasPrefix(spec, "docker:"):
		return r, r.docker(strings.TrimPrefix(spec, "docker:"))
	case strings.HasPrefix(spec, "registry:"):
		return r, r.remote(ctx, strings.TrimPrefix(spec, "registry:"), opts)
	default:
		// A bare argument is a registry reference, but one that names a
		// file or directory here is far more likely a forgotten prefix
		// than an image on Docker Hub.
		if info, err := os.Stat(spec); err == nil {
			kind := "oci:"
			if !info.IsDir() {
				kind = "docker:"
			}
			return nil, fmt.Errorf("%s is a path on this machine, not a registry reference; did you mean %s%s?", spec, kind, spec)
		}
		return r, r.remote(ctx, spec, opts)
	}
}

func (r *Report) layout(dir string) error {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		n := d.Annotations["org.opencontainers.image.ref.name"]
		if err := r.add(n, d, func() (v1.ImageIndex, error) { return idx.ImageIndex(d.Digest) }, func() (v1.Image, error) { return idx.Image(d.Digest) }); err != nil {
			return err
		}
	}
	return nil
}

func (r *Report) docker(file string) error {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
	if err != nil {
		return err
	}
	for _, d := range m {
		tag := ""
		if len(d.RepoTags) > 0 {
			tag = d.RepoTags[0]
		}
		var t *name.Tag
		if tag != "" {
			nt, err := name.NewTag(tag)
			if err != nil {
				return err
			}
			t = &nt
		}
		img, err := tarball.ImageFromPath(file, t)
		if err != nil {
			return err
		}
		desc, err := describe(tag, img, nil)
		if err != nil {
			return err
		}
		r.Images = append(r.Images, desc)
	}
	return nil
}

func (r *Report) remote(ctx context.Context, ref string, opts []remote.Option) error {
	nref, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	desc, err := remote.Get(nref, regauth.Options(ctx, opts...)...)
	if err != nil {
		return regauth.Explain(err)
	}
	return r.add(ref, desc.Descriptor, desc.ImageIndex, desc.Image)
}

func (r *Report) add(n string, d v1.Descriptor, index func() (v1.ImageIndex, error), img func() (v1.Image, error)) error {
	switch {
	case d.MediaType.IsIndex():
		idx, err := index()
		if err != nil {
			return err
		}
		out := Index{Name: n, Digest: d.Digest.String(), MediaType: string(d.MediaType)}
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		for _, cd := range im.Manifests {
			if !cd.MediaType.IsImage() {
				continue
			}
			ci, err := idx.Image(cd.Digest)
			if err != nil {
				return err
			}
			desc, err := describe("", ci, cd.Platform)
			if err != nil {
				return err
			}
			out.Images = append(out.Images, desc)
		}
		r.Indexes = append(r.Indexes, out)
	case d.MediaType.IsImage():
		i, err := img()
		if err != nil {
			return err
		}
		desc, err := describe(n, i, nil)
		if err != nil {
			return err
		}
		r.Images = append(r.Images, desc)
	}
	return nil
}

func describe(n string, img v1.Image, p *v1.Platform) (Image, error) {
	out := Image{Name: n}
	d, err := img.Digest()
	if err != nil {
		return out, err
	}
	out.Digest = d.String()
	mt, err := img.MediaType()
	if err != nil {
		return out, err
	}
	out.MediaType = string(mt)
	cf, err := img.ConfigFile()
	if err != nil {
		return out, err
	}
	pl := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if p != nil {
		pl = *p
	}
	out.Platform = pl.OS + "/" + pl.Architecture
	if pl.Variant != "" {
		out.Platform += "/" + pl.Variant
	}
	out.OSVersion = cf.OSVersion
	out.Config = cf.Config
	out.Created = cf.Created
	out.History = cf.History
	m, err := img.Manifest()
	if err != nil {
		return out, err
	}
	for _, l := range m.Layers {
		out.Layers = append(out.Layers, Layer{Digest: l.Digest.String(), Size: l.Size, MediaType: string(l.MediaType), URLs: l.URLs})
	}
	return out, nil
}

// Print writes r for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%s\n", r.Source)
	for _, idx := range r.Indexes {
		fmt.Fprintf(w, "\n%s  index %s (%s)\n", idx.Name, idx.Digest, shortType(idx.MediaType))
		for _, im := range idx.Images {
			printImage(w, im, "  ")
		}
	}
	for _, im := range r.Images {
		fmt.Fprintf(w, "\n%s\n", im.Name)
		printImage(w, im, "  ")
	}
}

func printImage(w io.Writer, im Image, in string) {
	plat := im.Platform
	if im.OSVersion != "" {
		plat += " (os.version " + im.OSVersion + ")"
	}
	fmt.Fprintf(w, "%s%s  %s (%s)\n", in, plat, im.Digest, shortType(im.MediaType))
	var total int64
	for _, l := range im.Layers {
		total += l.Size
		foreign := ""
		if len(l.URLs) > 0 {
			foreign = "  foreign: " + strings.Join(l.URLs, " ")
		}
		fmt.Fprintf(w, "%s  layer %s %10s  %s%s\n", in, l.Digest, size(l.Size), shortType(l.MediaType), foreign)
	}
	fmt.Fprintf(w, "%s  %d layers, %s\n", in, len(im.Layers), size(total))
	c := im.Config
	for _, kv := range []struct {
		k string
		v any
	}{{"entrypoint", c.Entrypoint}, {"cmd", c.Cmd}, {"env", c.Env}, {"workdir", c.WorkingDir}, {"user", c.User}, {"labels", c.Labels}, {"ports", c.ExposedPorts}} {
		if s := fmt.Sprint(kv.v); s != "" && s != "[]" && s != "map[]" {
			fmt.Fprintf(w, "%s  %-10s %s\n", in, kv.k, s)
		}
	}
}

func shortType(t string) string {
	switch types.MediaType(t) {
	case types.OCIImageIndex:
		return "oci index"
	case types.DockerManifestList:
		return "docker list"
	case types.OCIManifestSchema1:
		return "oci manifest"
	case types.DockerManifestSchema2:
		return "docker manifest"
	case types.OCILayer:
		return "tar+gzip"
	case types.OCILayerZStd:
		return "tar+zstd"
	case types.DockerLayer:
		return "docker tar+gzip"
	case types.DockerForeignLayer:
		return "foreign tar+gzip"
	}
	return t
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
