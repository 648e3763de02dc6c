// Package plan expands a recipe into the concrete work of one build: which
// images, for which platforms, from which artifact requests, with every
// {{variable}} substituted. Making a plan does no I/O beyond reading the
// recipe, so everything a build would do can be checked (and shown) first.
package plan

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	// Modes chooses the mode of artifacts that have several.
	Modes map[string]Choice
}

// Plan is the expanded build.
type Plan struct {
	Recipe *recipe.Recipe
	Epoch  time.Time
	Images []*Image
	// Artifacts are the distinct artifact requests, each fetched once
	// however many images use it.
	Artifacts map[string]*source.Artifact

	modes map[string]Choice
	// at is, per artifact key, the recipe path of what the artifact was
	// made from: its chosen mode, or its local, url or go section.
	at map[string]string
}

// ArtifactAt is the recipe path (for Recipe.Wrap) of the part of the
// recipe that produces artifact key.
func (p *Plan) ArtifactAt(key string) string { return p.at[key] }

// Choice is the mode chosen for one artifact, with the path of a local mode.
type Choice struct {
	Mode string
	Path string
}

// ParseChoice reads "release", "source", "local" or "local:PATH".
func ParseChoice(s string) Choice {
	mode, path, _ := strings.Cut(s, ":")
	return Choice{Mode: mode, Path: path}
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
	Bases []string
	// BaseAt is the recipe path of the bases, for errors.
	BaseAt string
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
	// At is the recipe path of the files entry, for errors.
	At string
	// Licenses places the artifact's licence files under
	// /LICENSES/<artifact>/ (on the first placement of it in an image).
	Licenses bool
}

// New expands r for the given options.
func New(r *recipe.Recipe, opt Options) (*Plan, error) {
	vars, names, want, err := selection(r, opt)
	if err != nil {
		return nil, err
	}
	epoch, err := epochOf(r, opt)
	if err != nil {
		return nil, err
	}
	p := &Plan{Recipe: r, Epoch: epoch, Artifacts: map[string]*source.Artifact{}, modes: opt.Modes, at: map[string]string{}}
	if err := checkModes(r, opt.Modes); err != nil {
		return nil, err
	}
	// Two images under one name would overwrite each other in a registry
	// and be ambiguous in a layout or archive.
	owner := map[string]string{}
	for _, name := range names {
		im, err := p.image(name, r.Images[name], vars, want)
		if err != nil {
			return nil, err
		}
		if im == nil {
			continue
		}
		for _, tag := range im.Tags {
			ref := im.Repository + ":" + tag
			if other, ok := owner[ref]; ok {
				return nil, r.Errorf("images."+name+".tags", "images %s and %s are both named %s; give them different repositories or tags", other, name, ref)
			}
			owner[ref] = name
		}
		p.Images = append(p.Images, im)
	}
	if len(p.Images) == 0 {
		var have []string
		for _, n := range names {
			have = append(have, n+": "+strings.Join(r.Images[n].Platforms, ", "))
		}
		return nil, fmt.Errorf("%s: no image is built for platform(s) %s (%s)", r.File, strings.Join(opt.Platforms, ", "), strings.Join(have, "; "))
	}
	return p, nil
}

// checkModes refuses a choice for an artifact that does not exist, has no
// modes, or lacks the mode named.
func checkModes(r *recipe.Recipe, modes map[string]Choice) error {
	names := make([]string, 0, len(modes))
	for n := range modes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		c := modes[name]
		a, ok := r.Artifacts[name]
		if !ok {
			var all []string
			for n, a := range r.Artifacts {
				if a.Modes != nil {
					all = append(all, n)
				}
			}
			sort.Strings(all)
			return fmt.Errorf("--mode %s: no artifact %s in %s (artifacts with modes: %s)", name, name, r.File, strings.Join(all, ", "))
		}
		declared := a.ModeNames()
		if len(declared) == 0 {
			return fmt.Errorf("--mode %s: artifact %s has no modes (%s:%d)", name, name, r.File, r.Line("artifacts."+name))
		}
		found := false
		for _, m := range declared {
			found = found || m == c.Mode
		}
		if !found {
			return fmt.Errorf("--mode %s=%s: artifact %s has modes %s (%s:%d)", name, c.Mode, name, strings.Join(declared, ", "), r.File, r.Line("artifacts."+name))
		}
		if c.Path != "" && c.Mode != "local" {
			return fmt.Errorf("--mode %s=%s:%s: only the local mode takes a path", name, c.Mode, c.Path)
		}
	}
	return nil
}

func epochOf(r *recipe.Recipe, opt Options) (time.Time, error) {
	var sec int64
	switch {
	case opt.Epoch != nil:
		sec = *opt.Epoch
	case os.Getenv("SOURCE_DATE_EPOCH") != "":
		v, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
		if err != nil || v < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds", os.Getenv("SOURCE_DATE_EPOCH"))
		}
		sec = v
	case r.Epoch != nil:
		sec = *r.Epoch
	}
	return time.Unix(sec, 0).UTC(), nil
}

// selection reads what the options select: the variables, the images (in
// order) and the platforms (nil for all).
func selection(r *recipe.Recipe, opt Options) (recipe.Vars, []string, map[string]bool, error) {
	vars, err := r.Vars(opt.Args)
	if err != nil {
		return nil, nil, nil, err
	}
	names, err := selectImages(r, opt.Images)
	if err != nil {
		return nil, nil, nil, err
	}
	want, err := parsePlatforms(opt.Platforms)
	if err != nil {
		return nil, nil, nil, err
	}
	return vars, names, want, nil
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
	want := map[string]bool{}
	for _, n := range only {
		if _, ok := r.Images[n]; !ok {
			return nil, fmt.Errorf("--image %s: no such image in %s (images: %s)", n, r.File, strings.Join(all, ", "))
		}
		want[n] = true
	}
	// Name order, as without --image, whatever the flags' order or
	// repetitions: outputs list the images in it.
	return slices.DeleteFunc(all, func(n string) bool { return !want[n] }), nil
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
	// A tag repeated once variables are expanded ({{VERSION}} and latest
	// with VERSION=latest) names the image once.
	seen := map[string]bool{}
	for _, t := range tags {
		if !seen[t] {
			seen[t] = true
			im.Tags = append(im.Tags, t)
		}
	}

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
	pi := &PlatformImage{Platform: pl, Bases: bases, BaseAt: at + ".base"}

	layers := map[string]*Layer{}
	licensed := map[string]bool{}
	for i, f := range ri.Files {
		if !f.AppliesTo(pl) {
			continue
		}
		fat := fmt.Sprintf("%s.files.%d", at, i)
		key, err := p.artifact(f.Artifact, pl, vars)
		if err != nil {
			return nil, err
		}
		dest, err := r.Expand(fat+".dest", f.Dest, v)
		if err != nil {
			return nil, err
		}
		pm := Placement{Artifact: key, Dest: dest, Check: true, Licenses: !licensed[key], At: fat}
		licensed[key] = true
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
	if err := expandLists(r, v,
		listField{at + ".config.entrypoint", c.Entrypoint, &cfg.Entrypoint},
		listField{at + ".config.cmd", c.Cmd, &cfg.Cmd},
		listField{at + ".config.env", c.Env, &cfg.Env},
		listField{at + ".config.ports", c.ExposedPorts, &cfg.ExposedPorts},
	); err != nil {
		return nil, err
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
		// In key order, so a recipe with two bad labels always reports
		// the same one.
		for _, k := range slices.Sorted(maps.Keys(c.Labels)) {
			if cfg.Labels[k], err = r.Expand(at+".config.labels."+k, c.Labels[k], v); err != nil {
				return nil, err
			}
		}
	}
	pi.Config = cfg
	return pi, nil
}

// artifact records the request for artifact name on pl, in the mode the
// build chose, and returns its key. Only that mode is expanded: the others
// are never looked at, so they cost nothing and cannot fail the build.
func (p *Plan) artifact(name string, pl platform.Platform, v recipe.Vars) (string, error) {
	key := name + "@" + pl.String()
	if _, ok := p.Artifacts[key]; ok {
		return key, nil
	}
	mode, localPath := p.modes[name].Mode, p.modes[name].Path
	a, err := Request(p.Recipe, name, mode, localPath, pl, v)
	if err != nil {
		return "", err
	}
	p.Artifacts[key] = a
	at := "artifacts." + name
	if p.Recipe.Artifacts[name].Modes != nil {
		at += ".modes"
	}
	p.at[key] = at + "." + a.Mode
	return key, nil
}

// Request expands artifact name of r in the given mode ("" for artifacts
// without modes, or for the recipe's default) for platform pl. localPath,
// for the local mode, overrides the recipe's path.
func Request(r *recipe.Recipe, name, mode, localPath string, pl platform.Platform, vars recipe.Vars) (*source.Artifact, error) {
	ra := r.Artifacts[name]
	at := "artifacts." + name
	a := &source.Artifact{Name: name, Platform: pl, NoLicense: ra.NoLicense()}
	v := vars.With(platformVars(pl))
	if ra.Version != "" {
		ver, err := r.Expand(at+".version", ra.Version, v)
		if err != nil {
			return nil, err
		}
		a.Version = ver
		v = v.With(map[string]string{"version": ver})
	}
	if !a.NoLicense && ra.Licenses != nil {
		lic, err := r.ExpandList(at+".licenses", ra.Licenses, v)
		if err != nil {
			return nil, err
		}
		a.Licenses = lic
	}
	local, download, gobuild := ra.Local, ra.URL, ra.Go
	var src *recipe.Source
	switch {
	case ra.Modes == nil:
		lat, uat, gat := at+".local", at+".url", at+".go"
		switch {
		case local != nil:
			a.Mode = "local"
			return a, expandLocal(r, a, lat, local, "", v)
		case download != nil:
			a.Mode = "url"
			return a, expandURL(r, a, uat, download, v)
		default:
			a.Mode = "go"
			g, err := expandGo(r, gat, gobuild, v)
			if err != nil {
				return nil, err
			}
			g.Module = abs(r.Dir, g.Module)
			a.Go = g
			return a, nil
		}
	case mode == "":
		mode = ra.Default
	}
	a.Mode = mode
	mat := at + ".modes." + mode
	switch mode {
	case "local":
		local = ra.Modes.Local
		if local == nil {
			local = &recipe.Local{}
		}
		if local.Path == "" && localPath == "" {
			return nil, r.Errorf(mat, "artifact %s: the local mode needs a path: --mode %s=local:PATH", name, name)
		}
		return a, expandLocal(r, a, mat, local, localPath, v)
	case "release":
		return a, expandURL(r, a, mat, ra.Modes.Release, v)
	case "source":
		src = ra.Modes.Source
		repo, err := r.Expand(mat+".git.repo", src.Git.Repo, v)
		if err != nil {
			return nil, err
		}
		tag, err := r.Expand(mat+".git.tag", src.Git.Tag, v)
		if err != nil {
			return nil, err
		}
		a.Git = &source.Git{Repo: repo, Commit: src.Git.Commit, Tag: tag}
		g, err := expandGo(r, mat+".go", &src.Go, v)
		if err != nil {
			return nil, err
		}
		if g.Module == "" {
			g.Module = "."
		}
		a.Go = g
		return a, nil
	}
	return nil, r.Errorf(at, "artifact %s: unknown mode %q", name, mode)
}

func expandLocal(r *recipe.Recipe, a *source.Artifact, at string, l *recipe.Local, override string, v recipe.Vars) error {
	path := override
	if path == "" {
		var err error
		if path, err = r.Expand(at+".path", l.Path, v); err != nil {
			return err
		}
		path = abs(r.Dir, path)
	} else if !filepath.IsAbs(path) {
		// A path given on the command line is relative to where pallet runs.
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		path = filepath.Join(wd, path)
	}
	ex, err := extract(r, at+".extract", l.Extract, v)
	if err != nil {
		return err
	}
	a.Local = &source.Local{Path: path, Extract: ex}
	return nil
}

func expandURL(r *recipe.Recipe, a *source.Artifact, at string, d *recipe.URL, v recipe.Vars) error {
	u, err := r.Expand(at+".url", d.URL, v)
	if err != nil {
		return err
	}
	if err := recipe.CheckURL(u); err != nil {
		return r.Errorf(at+".url", "artifact %s: %v", a.Name, err)
	}
	sum, ok := d.SHA256.For(a.Platform.String())
	if !ok {
		return r.Errorf(at+".sha256", "artifact %s: no sha256 pinned for %s; every platform a download serves needs its digest", a.Name, a.Platform)
	}
	fname, err := r.Expand(at+".filename", d.Filename, v)
	if err != nil {
		return err
	}
	ex, err := extract(r, at+".extract", d.Extract, v)
	if err != nil {
		return err
	}
	a.URL = &source.URL{URL: u, SHA256: sum, Filename: fname, Extract: ex}
	return nil
}

func expandGo(r *recipe.Recipe, at string, g *recipe.GoBuild, v recipe.Vars) (*source.Go, error) {
	mod, err := r.Expand(at+".module", g.Module, v)
	if err != nil {
		return nil, err
	}
	ver, err := r.Expand(at+".version", g.Version, v)
	if err != nil {
		return nil, err
	}
	if ver != "" {
		if err := recipe.CheckGoVersion(ver); err != nil {
			return nil, r.Errorf(at+".version", "%v", err)
		}
	}
	sg := &source.Go{Module: mod, CGO: g.CGO, Trimpath: g.Trimpath == nil || *g.Trimpath, Version: ver, CC: g.CC[v["platform"]]}
	if err := expandLists(r, v,
		listField{at + ".packages", g.Packages, &sg.Packages},
		listField{at + ".ldflags", g.Ldflags, &sg.Ldflags},
		listField{at + ".tags", g.Tags, &sg.Tags},
		listField{at + ".flags", g.Flags, &sg.Flags},
		listField{at + ".env", g.Env, &sg.Env},
	); err != nil {
		return nil, err
	}
	return sg, nil
}

// listField is a recipe list at path to expand into out.
type listField struct {
	path string
	in   []string
	out  *[]string
}

func expandLists(r *recipe.Recipe, v recipe.Vars, fields ...listField) error {
	for _, f := range fields {
		var err error
		if *f.out, err = r.ExpandList(f.path, f.in, v); err != nil {
			return err
		}
	}
	return nil
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

// Fetchable lists every download, repository and Go build the recipe could
// use for the selected images and platforms, in every mode but local: what
// an air-gapped site must mirror before building offline.
func Fetchable(r *recipe.Recipe, opt Options) ([]*source.Artifact, error) {
	vars, names, want, err := selection(r, opt)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*source.Artifact
	for _, name := range names {
		ri := r.Images[name]
		plats, err := r.ExpandList("images."+name+".platforms", ri.Platforms, vars)
		if err != nil {
			return nil, err
		}
		for _, ps := range plats {
			pl, err := platform.Parse(ps)
			if err != nil {
				return nil, r.Errorf("images."+name+".platforms", "%v", err)
			}
			if want != nil && !want[pl.String()] {
				continue
			}
			for _, f := range ri.Files {
				if !f.AppliesTo(pl) {
					continue
				}
				a := r.Artifacts[f.Artifact]
				var modes []string
				switch {
				case a.Modes != nil:
					for _, m := range a.ModeNames() {
						if m != "local" {
							modes = append(modes, m)
						}
					}
				case a.URL != nil, a.Go != nil:
					// A local module has no source to mirror, but its
					// dependencies and toolchain do.
					modes = []string{""}
				}
				for _, m := range modes {
					key := f.Artifact + "@" + pl.String() + "@" + m
					if seen[key] {
						continue
					}
					seen[key] = true
					req, err := Request(r, f.Artifact, m, "", pl, vars)
					if err != nil {
						return nil, err
					}
					out = append(out, req)
				}
			}
		}
	}
	return out, nil
}
