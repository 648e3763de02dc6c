// Package plan expands a recipe into the concrete work of one build: which
// images, for which platforms, from which artifact requests, with every
// {{variable}} substituted. Making a plan does no I/O beyond reading the
// recipe, so everything a build would do can be checked (and shown) first.
package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/source"
)

// Options narrow and parameterize a build.
type Options struct {
	// Args override the recipe's args.
	Args map[string]string
	// Platforms, when set, restricts the build to these platforms.
	Platforms []string
	// Images, when set, restricts the build to these images.
	Images []string
	// Epoch overrides the recipe's epoch (SOURCE_DATE_EPOCH).
	Epoch *int64
}

// Plan is the expanded build.
type Plan struct {
	Recipe *recipe.Recipe
	Epoch  time.Time
	Images []*Image
	// Artifacts are the distinct artifact requests, each fetched once
	// however many images use it.
	Artifacts map[string]*source.Artifact
}

// Image is one image for all its selected platforms.
type Image struct {
	Name       string
	Repository string
	Tags       []string
	Platforms  []*PlatformImage
}

// PlatformImage is one image manifest to build.
type PlatformImage struct {
	Platform platform.Platform
	// Bases are the images the layers go on: one manifest per base.
	Bases  []string
	Layers []*Layer
	Config image.Config
}

// Layer is a group of placements written as one layer.
type Layer struct {
	Name       string
	Placements []Placement
}

// Placement puts one fetched artifact in the image.
type Placement struct {
	// Artifact is the key into Plan.Artifacts.
	Artifact string
	Dest     string
	Mode     os.FileMode
	UID, GID int
	// Check enables the executable platform check for this artifact.
	Check bool
}

// New expands r for the given options.
func New(r *recipe.Recipe, opt Options) (*Plan, error) {
	vars, err := r.Vars(opt.Args)
	if err != nil {
		return nil, err
	}
	epoch, err := epochOf(r, opt)
	if err != nil {
		return nil, err
	}
	p := &Plan{Recipe: r, Epoch: epoch, Artifacts: map[string]*source.Artifact{}}

	names, err := selectImages(r, opt.Images)
	if err != nil {
		return nil, err
	}
	want, err := parsePlatforms(opt.Platforms)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		im, err := p.image(name, r.Images[name], vars, want)
		if err != nil {
			return nil, err
		}
		if im != nil {
			p.Images = append(p.Images, im)
		}
	}
	if len(p.Images) == 0 {
		return nil, fmt.Errorf("%s: no image is built for platform(s) %s", r.File, strings.Join(opt.Platforms, ", "))
	}
	return p, nil
}

func epochOf(r *recipe.Recipe, opt Options) (time.Time, error) {
	var sec int64
	switch {
	case opt.Epoch != nil:
		sec = *opt.Epoch
	case os.Getenv("SOURCE_DATE_EPOCH") != "":
		v, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds", os.Getenv("SOURCE_DATE_EPOCH"))
		}
		sec = v
	case r.Epoch != nil:
		sec = *r.Epoch
	}
	return time.Unix(sec, 0).UTC(), nil
}

func selectImages(r *recipe.Recipe, only []string) ([]string, error) {
	var all []string
	for n := range r.Images {
		all = append(all, n)
	}
	sort.Strings(all)
	if len(only) == 0 {
		return all, nil
	}
	for _, n := range only {
		if _, ok := r.Images[n]; !ok {
			return nil, fmt.Errorf("--image %s: no such image in %s (images: %s)", n, r.File, strings.Join(all, ", "))
		}
	}
	return only, nil
}

func parsePlatforms(list []string) (map[string]bool, error) {
	if len(list) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, s := range list {
		for _, part := range strings.Split(s, ",") {
			p, err := platform.Parse(part)
			if err != nil {
				return nil, fmt.Errorf("--platform: %w", err)
			}
			want[p.String()] = true
		}
	}
	return want, nil
}

func (p *Plan) image(name string, ri *recipe.Image, vars recipe.Vars, want map[string]bool) (*Image, error) {
	r := p.Recipe
	at := "images." + name
	im := &Image{Name: name, Repository: name}
	if ri.Repository != "" {
		repo, err := r.Expand(at+".repository", ri.Repository, vars)
		if err != nil {
			return nil, err
		}
		im.Repository = repo
	}
	tags, err := r.ExpandList(at+".tags", ri.Tags, vars)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		tags = []string{"latest"}
	}
	im.Tags = tags

	plats, err := r.ExpandList(at+".platforms", ri.Platforms, vars)
	if err != nil {
		return nil, err
	}
	for i, ps := range plats {
		pl, err := platform.Parse(ps)
		if err != nil {
			return nil, r.Errorf(fmt.Sprintf("%s.platforms.%d", at, i), "%v", err)
		}
		if want != nil && !want[pl.String()] {
			continue
		}
		pi, err := p.platformImage(name, ri, vars, pl)
		if err != nil {
			return nil, err
		}
		im.Platforms = append(im.Platforms, pi)
	}
	if len(im.Platforms) == 0 {
		return nil, nil
	}
	return im, nil
}

// platformVars are the per-platform built-ins.
func platformVars(pl platform.Platform) map[string]string {
	return map[string]string{
		"os":       pl.OS,
		"arch":     pl.Arch,
		"variant":  pl.Variant,
		"platform": pl.String(),
	}
}

func (p *Plan) platformImage(name string, ri *recipe.Image, vars recipe.Vars, pl platform.Platform) (*PlatformImage, error) {
	r := p.Recipe
	at := "images." + name
	v := vars.With(platformVars(pl))
	bases, err := r.ExpandList(at+".base", ri.Base.For(pl.String()), v)
	if err != nil {
		return nil, err
	}
	if len(bases) == 0 {
		return nil, r.Errorf(at+".base", "image %s: no base for platform %s", name, pl)
	}
	pi := &PlatformImage{Platform: pl, Bases: bases}

	layers := map[string]*Layer{}
	for i, f := range ri.Files {
		if !f.AppliesTo(pl) {
			continue
		}
		fat := fmt.Sprintf("%s.files.%d", at, i)
		key, err := p.artifact(f.Artifact, pl, v)
		if err != nil {
			return nil, err
		}
		dest, err := r.Expand(fat+".dest", f.Dest, v)
		if err != nil {
			return nil, err
		}
		pm := Placement{Artifact: key, Dest: dest, Check: true}
		if a := r.Artifacts[f.Artifact]; a.Check != nil {
			pm.Check = *a.Check
		}
		if f.Mode != "" {
			pm.Mode, _ = recipe.ParseMode(f.Mode) // checked by recipe
		}
		if f.Owner != "" {
			pm.UID, pm.GID, _ = recipe.ParseOwner(f.Owner)
		}
		lname := f.Layer
		if lname == "" {
			lname = fmt.Sprintf("%d-%s", i, f.Artifact)
		}
		l, ok := layers[lname]
		if !ok {
			l = &Layer{Name: lname}
			layers[lname] = l
			pi.Layers = append(pi.Layers, l)
		}
		l.Placements = append(l.Placements, pm)
	}

	c := ri.Config
	cfg := image.Config{Workdir: c.Workdir, User: c.User, StopSignal: c.StopSignal}
	for _, item := range []struct {
		path string
		in   []string
		out  *[]string
	}{
		{at + ".config.entrypoint", c.Entrypoint, &cfg.Entrypoint},
		{at + ".config.cmd", c.Cmd, &cfg.Cmd},
		{at + ".config.env", c.Env, &cfg.Env},
		{at + ".config.ports", c.ExposedPorts, &cfg.ExposedPorts},
	} {
		if *item.out, err = r.ExpandList(item.path, item.in, v); err != nil {
			return nil, err
		}
	}
	// ExpandList keeps nil (inherit from the base) apart from an empty list
	// in the recipe ("cmd: []"), which clears the value.
	for _, s := range []*string{&cfg.Workdir, &cfg.User} {
		if *s, err = r.Expand(at+".config", *s, v); err != nil {
			return nil, err
		}
	}
	if len(c.Labels) > 0 {
		cfg.Labels = map[string]string{}
		for k, val := range c.Labels {
			if cfg.Labels[k], err = r.Expand(at+".config.labels."+k, val, v); err != nil {
				return nil, err
			}
		}
	}
	pi.Config = cfg
	return pi, nil
}

// artifact records the request for artifact name on pl and returns its key.
func (p *Plan) artifact(name string, pl platform.Platform, v recipe.Vars) (string, error) {
	key := name + "@" + pl.String()
	if _, ok := p.Artifacts[key]; ok {
		return key, nil
	}
	r := p.Recipe
	ra := r.Artifacts[name]
	at := "artifacts." + name
	a := &source.Artifact{Name: name, Platform: pl}
	switch {
	case ra.Local != nil:
		path, err := r.Expand(at+".local.path", ra.Local.Path, v)
		if err != nil {
			return "", err
		}
		ex, err := extract(r, at+".local.extract", ra.Local.Extract, v)
		if err != nil {
			return "", err
		}
		a.Local = &source.Local{Path: abs(r.Dir, path), Extract: ex}
	case ra.URL != nil:
		u, err := r.Expand(at+".url.url", ra.URL.URL, v)
		if err != nil {
			return "", err
		}
		if err := recipe.CheckURL(u); err != nil {
			return "", r.Errorf(at+".url.url", "artifact %s: %v", name, err)
		}
		sum, ok := ra.URL.SHA256.For(pl.String())
		if !ok {
			return "", r.Errorf(at+".url.sha256", "artifact %s: no sha256 pinned for %s; every platform a download serves needs its digest", name, pl)
		}
		fname, err := r.Expand(at+".url.filename", ra.URL.Filename, v)
		if err != nil {
			return "", err
		}
		ex, err := extract(r, at+".url.extract", ra.URL.Extract, v)
		if err != nil {
			return "", err
		}
		a.URL = &source.URL{URL: u, SHA256: sum, Filename: fname, Extract: ex}
	case ra.Go != nil:
		g := ra.Go
		mod, err := r.Expand(at+".go.module", g.Module, v)
		if err != nil {
			return "", err
		}
		sg := &source.Go{Module: abs(r.Dir, mod), CGO: g.CGO, Trimpath: g.Trimpath == nil || *g.Trimpath}
		for _, item := range []struct {
			path string
			in   []string
			out  *[]string
		}{
			{at + ".go.packages", g.Packages, &sg.Packages},
			{at + ".go.ldflags", g.Ldflags, &sg.Ldflags},
			{at + ".go.tags", g.Tags, &sg.Tags},
			{at + ".go.flags", g.Flags, &sg.Flags},
			{at + ".go.env", g.Env, &sg.Env},
		} {
			if *item.out, err = r.ExpandList(item.path, item.in, v); err != nil {
				return "", err
			}
		}
		a.Go = sg
	}
	p.Artifacts[key] = a
	return key, nil
}

func extract(r *recipe.Recipe, at string, e *recipe.Extract, v recipe.Vars) (*source.Extract, error) {
	if e == nil {
		return nil, nil
	}
	inc, err := r.ExpandList(at+".include", e.Include, v)
	if err != nil {
		return nil, err
	}
	return &source.Extract{Strip: e.Strip, Include: inc}, nil
}

func abs(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
