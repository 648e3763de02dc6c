// Package inspect describes images from outside: what an OCI layout, a
// docker archive or a registry holds, per platform, with layers and config.
// It reads through go-containerregistry, so it sees what any other
// client would see; the OCI layout inside a docker archive, which it has
// no reader for, is read here into its partial images (dockerLayout).
package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/bounded"
	pimage "github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// Image describes one manifest.
type Image struct {
	// Name is the first of Tags, or the reference as given.
	Name string `json:"name,omitempty"`
	// Tags are every name the location gives this digest: the
	// org.opencontainers.image.ref.name of each layout entry, the
	// RepoTags of a docker archive, the reference given for a registry.
	Tags      []string `json:"tags,omitempty"`
	Digest    string   `json:"digest"`
	MediaType string   `json:"mediaType"`
	// ID is the config's digest: the image ID docker shows once it has
	// loaded or pulled the image, and the one name of an image in a
	// docker archive, which holds no manifest (its Digest is that of the
	// manifest go-containerregistry makes for it, as crane digest
	// --tarball prints).
	ID        string       `json:"id"`
	Platform  string       `json:"platform"`
	OSVersion string       `json:"osVersion,omitempty"`
	Layers    []Layer      `json:"layers"`
	Config    v1.Config    `json:"config"`
	Created   v1.Time      `json:"created"`
	History   []v1.History `json:"history,omitempty"`
	// Attachments are the artifact types of the OCI 1.1 referrers of
	// this manifest (SBOMs, provenance), sorted.
	Attachments []string `json:"attachments,omitempty"`
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
	// Name is the first of Tags, or the reference as given.
	Name string `json:"name,omitempty"`
	// Tags are every name the location gives this digest (see Image.Tags).
	Tags      []string `json:"tags,omitempty"`
	Digest    string   `json:"digest"`
	MediaType string   `json:"mediaType"`
	Images    []Image  `json:"images"`
}

// Report is everything found at a location.
type Report struct {
	Source  string  `json:"source"`
	Indexes []Index `json:"indexes,omitempty"`
	Images  []Image `json:"images,omitempty"`
}

// refName is the annotation naming an entry of an OCI layout's index.
const refName = "org.opencontainers.image.ref.name"

// Kind is the kind of place a Location names.
type Kind int

const (
	// Layout is an OCI image layout, oci:DIR[:REF].
	Layout Kind = iota
	// Archive is a docker archive, docker:FILE.
	Archive
	// Registry is an image in a registry, [registry:]REF.
	Registry
)

// Location is where an image reference, as pallet inspect and pallet
// sbom take it, points.
type Location struct {
	Kind Kind
	// Path is the layout's directory or the archive's file.
	Path string
	// Ref is, in a layout, the name of the entries meant (empty for
	// all of them); of a registry, the reference.
	Ref string
}

// ParseLocation reads "oci:DIR", "oci:DIR:REF" (the entries named REF,
// as skopeo reads them), "docker:FILE", "registry:REF" or a bare
// registry reference. A bare one that names a path here is refused
// with the prefix it lacks.
func ParseLocation(spec string) (Location, error) {
	// An empty name after a prefix would read the working directory as
	// a layout, or ask a registry for nothing: refused, with the form.
	if s, ok := strings.CutPrefix(spec, "oci:"); ok {
		dir, ref := SplitLayout(s)
		if dir == "" {
			return Location{}, fmt.Errorf("%q names no directory: want oci:DIR or oci:DIR:TAG (oci:. for the working directory)", spec)
		}
		return Location{Kind: Layout, Path: dir, Ref: ref}, nil
	}
	if s, ok := strings.CutPrefix(spec, "docker:"); ok {
		if s == "" {
			return Location{}, fmt.Errorf("%q names no file: want docker:FILE.tar", spec)
		}
		return Location{Kind: Archive, Path: s}, nil
	}
	if s, ok := strings.CutPrefix(spec, "registry:"); ok {
		if s == "" {
			return Location{}, fmt.Errorf("%q names no image: want registry:REGISTRY/REPO:TAG", spec)
		}
		return Location{Kind: Registry, Ref: s}, nil
	}
	if err := notAPath(spec); err != nil {
		return Location{}, err
	}
	return Location{Kind: Registry, Ref: spec}, nil
}

// Open inspects the images at spec, a location as ParseLocation reads it.
func Open(ctx context.Context, spec string, opts ...remote.Option) (*Report, error) {
	loc, err := ParseLocation(spec)
	if err != nil {
		return nil, err
	}
	r := &Report{Source: spec}
	switch loc.Kind {
	case Layout:
		return r, r.layout(loc.Path, loc.Ref)
	case Archive:
		return r, r.docker(loc.Path)
	}
	return r, r.remote(ctx, loc.Ref, opts)
}

// notAPath refuses a bare argument that names a file or directory here
// (relative or absolute, with a :REF after a directory): far more likely
// a forgotten prefix than an image on Docker Hub. One that is written as
// a path but does not exist is refused too, rather than sent to a
// registry named "." or "..".
func notAPath(spec string) error {
	if info, err := os.Stat(spec); err == nil {
		kind := "oci:"
		if !info.IsDir() {
			kind = "docker:"
		}
		return fmt.Errorf("%s is a path on this machine, not a registry reference; did you mean %s%s?", spec, kind, spec)
	}
	if dir, ref := SplitLayout(spec); ref != "" {
		// An image may be named as a directory here is (redis:7 beside
		// ./redis): the way to it is said too.
		return fmt.Errorf("%s is a directory on this machine, not a registry; did you mean oci:%s:%s? (registry:%s names the registry's image)", dir, dir, ref, spec)
	}
	if spec == "." || spec == ".." || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || strings.HasPrefix(spec, "~") {
		return fmt.Errorf("%s: no such file or directory (an image is named oci:DIR, docker:FILE or a registry reference)", spec)
	}
	return nil
}

// SplitLayout splits "DIR:REF" (an oci: output without its prefix) at
// the colon after which an existing directory ends, trying the longest
// first, since a directory's name and a full reference
// (localhost:5000/a:tag) may both hold colons. Without such a directory,
// all of s is the directory.
func SplitLayout(s string) (dir, ref string) {
	if isDir(s) {
		return s, ""
	}
	for i := strings.LastIndex(s, ":"); i > 0; i = strings.LastIndex(s[:i], ":") {
		if isDir(s[:i]) {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

// maxIndexJSON bounds a layout's index.json, as pallet's outputs bound
// the one they replace.
const maxIndexJSON = 16 << 20

// layout describes the entries of the layout at dir, one per digest with
// all its names; with ref, only the entries ref names.
func (r *Report) layout(dir, ref string) error {
	idx, err := LayoutIndex(dir)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading the index of the OCI layout %s: %w", dir, err)
	}
	// Untagged artifact entries are referrers (pallet's SBOMs and
	// provenance): shown as attachments of their subject, not as images.
	attached := map[v1.Hash][]string{}
	entries := slices.DeleteFunc(slices.Clone(im.Manifests), func(d v1.Descriptor) bool {
		if _, tagged := d.Annotations[refName]; tagged || d.ArtifactType == "" {
			return false
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return false
		}
		mf, err := img.Manifest()
		if err != nil || mf.Subject == nil {
			return false
		}
		attached[mf.Subject.Digest] = append(attached[mf.Subject.Digest], d.ArtifactType)
		return true
	})
	defer r.attach(func(d v1.Hash) []string { return attached[d] })
	if ref != "" {
		if entries, err = SelectRef(entries, ref); err != nil {
			return fmt.Errorf("oci:%s:%s: %w", dir, ref, err)
		}
	}
	for _, g := range byDigest(im.Manifests, entries) {
		d := g.desc
		if err := r.add(g.tags, d, func() (v1.ImageIndex, error) { return idx.ImageIndex(d.Digest) }, func() (v1.Image, error) { return idx.Image(d.Digest) }); err != nil {
			return fmt.Errorf("oci:%s: %s: %w", dir, d.Digest, err)
		}
	}
	return nil
}

// LayoutIndex is the index of the OCI layout dir, for inspect and sbom
// alike. go-containerregistry reads index.json whole, whatever it is: a
// named pipe would hold the reader until a writer came, a link to
// /dev/zero until memory ran out; so it is checked first, a regular file
// of at most maxIndexJSON bytes. The blobs go-containerregistry checks
// itself.
func LayoutIndex(dir string) (v1.ImageIndex, error) {
	if _, err := bounded.ReadRegular(filepath.Join(dir, "index.json"), maxIndexJSON); err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	return idx, nil
}

// SelectRef returns the entries of a layout's index whose ref.name is
// ref or, when the names are full references (a layout holding several
// repositories' images), whose tag is ref, as long as those are one
// digest.
func SelectRef(entries []v1.Descriptor, ref string) ([]v1.Descriptor, error) {
	var exact, byTag []v1.Descriptor
	var names []string
	for _, d := range entries {
		n := d.Annotations[refName]
		if n == "" {
			continue
		}
		names = append(names, n)
		switch {
		case n == ref:
			exact = append(exact, d)
		case tagOf(n) == ref:
			byTag = append(byTag, d)
		}
	}
	if len(exact) > 0 {
		return exact, nil
	}
	if len(byTag) == 0 {
		if len(names) == 0 {
			return nil, fmt.Errorf("no entry is named (%s): the layout names none", refName)
		}
		return nil, fmt.Errorf("no entry is named %s; the layout holds %s", ref, strings.Join(names, ", "))
	}
	for _, d := range byTag[1:] {
		if d.Digest != byTag[0].Digest {
			var full []string
			for _, d := range byTag {
				full = append(full, d.Annotations[refName])
			}
			return nil, fmt.Errorf("%s names different images: %s; give the full name", ref, strings.Join(full, ", "))
		}
	}
	return byTag, nil
}

// tagOf returns the tag of a full reference ("localhost:5000/a:v1" is
// v1), or "" when n has none.
func tagOf(n string) string {
	i := strings.LastIndex(n, ":")
	if i < 0 || strings.Contains(n[i:], "/") {
		return ""
	}
	return n[i+1:]
}

// group is one digest of a layout with every name given to it.
type group struct {
	desc v1.Descriptor
	tags []string
}

// byDigest groups the chosen entries by digest, in the order of the
// layout's index, and names each with every name the whole index gives
// that digest.
func byDigest(all, chosen []v1.Descriptor) []group {
	var out []group
	seen := map[v1.Hash]int{}
	for _, d := range chosen {
		if _, ok := seen[d.Digest]; !ok {
			seen[d.Digest] = len(out)
			out = append(out, group{desc: d})
		}
	}
	for _, d := range all {
		i, ok := seen[d.Digest]
		if n := d.Annotations[refName]; ok && n != "" && !slices.Contains(out[i].tags, n) {
			out[i].tags = append(out[i].tags, n)
		}
	}
	return out
}

// maxArchiveJSON bounds a docker archive's manifest.json and each image
// config in it: a docker save of many images writes some KiB of each.
const maxArchiveJSON = 4 << 20

// archiveBlobs opens the docker archive file, a regular file, and
// indexes it (tarFiles); the file is the caller's to close.
func archiveBlobs(file string) (*os.File, tarBlobs, error) {
	f, err := bounded.Open(file)
	if err != nil {
		return nil, tarBlobs{}, fmt.Errorf("reading the docker archive %s: %w", file, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = bounded.RegularInfo(file, fi)
	}
	var blobs tarBlobs
	if err == nil {
		blobs, err = tarFiles(f, fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, tarBlobs{}, fmt.Errorf("reading the docker archive %s: %w", file, err)
	}
	return f, blobs, nil
}

// docker describes the images of a docker archive, one per image with
// all its RepoTags.
func (r *Report) docker(file string) error {
	// Opened once, checked, and indexed in one pass: go-containerregistry
	// opens the archive again for each file it reads, each time waiting
	// for a writer if it is a named pipe, and walks it from the start.
	f, blobs, err := archiveBlobs(file)
	if err != nil {
		return err
	}
	defer f.Close()
	// What decides which images the archive holds, named once each.
	for _, n := range []string{"manifest.json", "index.json", "oci-layout"} {
		if err := blobs.single(n); err != nil {
			return fmt.Errorf("reading the docker archive %s: %w", file, err)
		}
	}
	// go-containerregistry reads manifest.json and each config whole.
	if err := blobs.archiveJSON("manifest.json"); err != nil {
		return fmt.Errorf("reading the docker archive %s: %w", file, err)
	}
	m, err := blobs.manifest()
	if err != nil {
		return fmt.Errorf("reading the docker archive %s: %w", file, err)
	}
	for _, d := range m {
		for _, n := range append([]string{d.Config}, d.Layers...) {
			if err := blobs.single(n); err != nil {
				return fmt.Errorf("reading the docker archive %s: %w", file, err)
			}
		}
		if err := blobs.archiveJSON(d.Config); err != nil {
			return fmt.Errorf("reading the docker archive %s: %w", file, err)
		}
	}
	if ok, err := r.dockerLayout(blobs, m); err != nil {
		return fmt.Errorf("reading the docker archive %s: %w", file, err)
	} else if ok {
		return nil
	}
	var done []string // config paths, which identify an image in the archive
	for _, d := range m {
		if slices.Contains(done, d.Config) {
			continue
		}
		done = append(done, d.Config)
		var tags []string
		for _, e := range m {
			if e.Config == d.Config {
				tags = append(tags, e.RepoTags...)
			}
		}
		var t *name.Tag
		if len(tags) > 0 {
			nt, err := name.NewTag(tags[0])
			if err != nil {
				return fmt.Errorf("docker archive %s: tag %s: %w", file, tags[0], err)
			}
			t = &nt
		}
		img, err := tarball.Image(blobs.opener, t)
		if err != nil {
			return fmt.Errorf("docker archive %s: %w", file, err)
		}
		desc, err := describe(tags, img, nil)
		if err != nil {
			return fmt.Errorf("docker archive %s: %w", file, err)
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
	if err := r.add([]string{ref}, desc.Descriptor, desc.ImageIndex, desc.Image); err != nil {
		// What failed is a read of one of its manifests or configs,
		// whose error names only the request.
		return fmt.Errorf("%s: %w", ref, regauth.Explain(err))
	}
	// Referrers, where the registry lists them (API or fallback tag).
	r.attach(func(d v1.Hash) []string {
		idx, err := remote.Referrers(nref.Context().Digest(d.String()), regauth.Options(ctx, opts...)...)
		if err != nil {
			return nil
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil
		}
		var types []string
		for _, x := range m.Manifests {
			types = append(types, x.ArtifactType)
		}
		return types
	})
	return nil
}

// attach sets the attachments of every image found, as of returns them.
func (r *Report) attach(of func(v1.Hash) []string) {
	set := func(im *Image) {
		h, err := v1.NewHash(im.Digest)
		if err != nil {
			return
		}
		if types := of(h); len(types) > 0 {
			im.Attachments = slices.Sorted(slices.Values(types))
		}
	}
	for i := range r.Images {
		set(&r.Images[i])
	}
	for i := range r.Indexes {
		for j := range r.Indexes[i].Images {
			set(&r.Indexes[i].Images[j])
		}
	}
}

func (r *Report) add(tags []string, d v1.Descriptor, index func() (v1.ImageIndex, error), img func() (v1.Image, error)) error {
	switch {
	case d.MediaType.IsIndex():
		idx, err := index()
		if err != nil {
			return err
		}
		out := Index{Name: first(tags), Tags: tags, Digest: d.Digest.String(), MediaType: string(d.MediaType)}
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
			desc, err := describe(nil, ci, cd.Platform)
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
		desc, err := describe(tags, i, nil)
		if err != nil {
			return err
		}
		r.Images = append(r.Images, desc)
	}
	return nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func describe(tags []string, img v1.Image, p *v1.Platform) (Image, error) {
	out := Image{Name: first(tags), Tags: tags}
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
	if err := pimage.CheckConfigSize(img); err != nil {
		return out, fmt.Errorf("%s: %w", out.Digest, err)
	}
	// The config's digest is its bytes' (go-containerregistry reads
	// them to tell it): a failure here is the config's read.
	id, err := img.ConfigName()
	if err != nil {
		return out, fmt.Errorf("%s: reading its config: %w", out.Digest, err)
	}
	out.ID = id.String()
	cf, err := img.ConfigFile()
	if err != nil {
		return out, fmt.Errorf("%s: reading its config %s: %w", out.Digest, id, err)
	}
	pl := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if p != nil {
		pl = *p
	}
	if pl.OS != "" || pl.Architecture != "" {
		out.Platform = pl.OS + "/" + pl.Architecture
	}
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

// Print writes r for people: one block per digest, headed by the digest
// and followed by every name it goes by.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%s\n", r.Source)
	for _, idx := range r.Indexes {
		fmt.Fprintf(w, "\nindex %s (%s)\n", idx.Digest, shortType(idx.MediaType))
		printTags(w, idx.Tags)
		for _, im := range idx.Images {
			fmt.Fprintf(w, "  %s  %s (%s)\n", platformShown(im), im.Digest, shortType(im.MediaType))
			printImage(w, im, "    ")
		}
	}
	for _, im := range r.Images {
		fmt.Fprintf(w, "\nimage %s (%s)\n", im.Digest, shortType(im.MediaType))
		printTags(w, im.Tags)
		field(w, "  ", "platform", []string{platformShown(im)})
		printImage(w, im, "  ")
	}
}

func printTags(w io.Writer, tags []string) {
	if len(tags) > 0 {
		field(w, "  ", "tags", []string{strings.Join(tags, ", ")})
	}
}

// platformShown is an image's platform as inspect prints it.
func platformShown(im Image) string {
	if im.OSVersion != "" {
		return im.Platform + " (os.version " + im.OSVersion + ")"
	}
	return im.Platform
}

// printImage writes an image's layers and config, indented by in.
func printImage(w io.Writer, im Image, in string) {
	field(w, in, "id", []string{im.ID})
	var total int64
	for _, l := range im.Layers {
		total += l.Size
		foreign := ""
		if len(l.URLs) > 0 {
			foreign = "  foreign: " + strings.Join(l.URLs, " ")
		}
		fmt.Fprintf(w, "%slayer %s %10s  %s%s\n", in, l.Digest, size(l.Size), shortType(l.MediaType), foreign)
	}
	fmt.Fprintf(w, "%s%d layers, %s\n", in, len(im.Layers), size(total))
	c := im.Config
	field(w, in, "entrypoint", execForm(c.Entrypoint))
	field(w, in, "cmd", execForm(c.Cmd))
	field(w, in, "env", c.Env)
	field(w, in, "workdir", []string{c.WorkingDir})
	field(w, in, "user", []string{c.User})
	field(w, in, "labels", keyValues(c.Labels))
	field(w, in, "ports", []string{strings.Join(slices.Sorted(maps.Keys(c.ExposedPorts)), " ")})
	field(w, in, "volumes", []string{strings.Join(slices.Sorted(maps.Keys(c.Volumes)), " ")})
	// The rest of what docker inspect shows of a config, when set: a
	// runtime reads them (the stop signal, the health check), and the
	// rest change a base's later builds (ONBUILD, SHELL) or how a
	// Windows command line is read (ArgsEscaped).
	field(w, in, "stopsignal", []string{c.StopSignal})
	field(w, in, "healthcheck", healthcheck(c.Healthcheck))
	field(w, in, "shell", execForm(c.Shell))
	field(w, in, "onbuild", c.OnBuild)
	if c.ArgsEscaped {
		field(w, in, "argsescaped", []string{"true"})
	}
	field(w, in, "attached", im.Attachments)
}

// healthcheck shows a health check as its test in exec form followed by
// the settings it gives; those it leaves at zero are inherited, and not
// shown.
func healthcheck(h *v1.HealthConfig) []string {
	if h == nil {
		return nil
	}
	var parts []string
	if t := execForm(h.Test); len(t) > 0 {
		parts = append(parts, t[0])
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"interval", h.Interval}, {"timeout", h.Timeout}, {"start-period", h.StartPeriod}} {
		if d.v != 0 {
			parts = append(parts, d.name+" "+d.v.String())
		}
	}
	if h.Retries != 0 {
		parts = append(parts, fmt.Sprintf("retries %d", h.Retries))
	}
	return []string{strings.Join(parts, " ")}
}

// field writes a config field, one value a line under its name, so that
// a label or variable holding spaces still reads as one; empty values
// are left out.
func field(w io.Writer, in, key string, values []string) {
	values = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
	for i, v := range values {
		if i > 0 {
			key = ""
		}
		fmt.Fprintf(w, "%s%-10s %s\n", in, key, v)
	}
}

// execForm shows a command as JSON, as a Dockerfile's exec form does, so
// that an argument holding a space is told from two arguments.
func execForm(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	b, _ := json.Marshal(args)
	return []string{string(b)}
}

// keyValues renders labels as k=v, sorted by key.
func keyValues(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
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
