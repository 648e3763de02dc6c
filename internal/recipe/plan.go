package recipe

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/quoted"
	"github.com/pallet-dev/pallet/internal/tree"
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

// planner expands one recipe into a plan.
type planner struct {
	r     *Recipe
	p     *plan.Plan
	modes map[string]Choice
}

// Choice is the mode chosen for one artifact, with the path of a local mode.
type Choice struct {
	Mode string
	Path string
	// From is where the choice was made, in a --modes file; zero for a
	// --mode flag.
	From plan.Pos
}

// at prefixes an error about the choice with where it was made.
func (c Choice) at() string {
	if c.From.File == "" {
		return ""
	}
	return c.From.String() + ": "
}

// ParseChoice reads "release", "source", "local" or "local:PATH".
func ParseChoice(s string) Choice {
	mode, path, _ := strings.Cut(s, ":")
	return Choice{Mode: mode, Path: path}
}

// Plan expands r for the given options into the build's plan. Only the
// chosen mode of each artifact is expanded: the others are never looked
// at, so they cost nothing and cannot fail the build.
func (r *Recipe) Plan(opt Options) (*plan.Plan, error) {
	r.grown = 0
	vars, names, want, err := selection(r, opt)
	if err != nil {
		return nil, err
	}
	epoch, err := epochOf(r, opt)
	if err != nil {
		return nil, err
	}
	limits, err := r.Limits.plan()
	if err != nil {
		return nil, r.Errorf("limits", "%v", err)
	}
	pl := &planner{r: r, modes: opt.Modes, p: &plan.Plan{Source: r.File, Dir: r.Dir, Epoch: epoch, Limits: limits, Artifacts: map[string]*plan.Artifact{}}}
	if err := checkModes(r, opt.Modes); err != nil {
		return nil, err
	}
	// Two images under one name would overwrite each other in a registry
	// and be ambiguous in a layout or archive.
	owner := map[string]string{}
	for _, name := range names {
		im, err := pl.image(name, r.Images[name], vars, want)
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
		pl.p.Images = append(pl.p.Images, im)
	}
	if err := r.checkWindowsEpoch(pl.p, opt); err != nil {
		return nil, err
	}
	if len(pl.p.Images) == 0 {
		var have []string
		for _, n := range names {
			have = append(have, n+": "+strings.Join(r.Images[n].Platforms, ", "))
		}
		return nil, fmt.Errorf("%s: no image is built for platform(s) %s (%s)", r.File, strings.Join(opt.Platforms, ", "), strings.Join(have, "; "))
	}
	return pl.p, nil
}

// checkModes refuses a choice for an artifact that does not exist, has no
// modes, or lacks the mode named.
func checkModes(r *Recipe, modes map[string]Choice) error {
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
			return fmt.Errorf("%smode choice %s: no artifact %s in %s (artifacts with modes: %s)", c.at(), name, name, r.File, strings.Join(all, ", "))
		}
		declared := a.ModeNames()
		if len(declared) == 0 {
			return fmt.Errorf("%smode choice %s: artifact %s has no modes (%s)", c.at(), name, name, r.Pos("artifacts."+name))
		}
		found := false
		for _, m := range declared {
			found = found || m == c.Mode
		}
		if !found {
			return fmt.Errorf("%smode choice %s=%s: artifact %s has modes %s (%s)", c.at(), name, c.Mode, name, strings.Join(declared, ", "), r.Pos("artifacts."+name))
		}
		if c.Path != "" && c.Mode != "local" {
			return fmt.Errorf("%smode choice %s=%s:%s: only the local mode takes a path", c.at(), name, c.Mode, c.Path)
		}
	}
	return nil
}

// checkWindowsEpoch refuses, before any work, an epoch that a Windows
// platform of p cannot carry, said where the epoch was given: the layer
// writer would refuse it too, but at the placement whose layer it wrote
// first, which has nothing to do with it.
func (r *Recipe) checkWindowsEpoch(p *plan.Plan, opt Options) error {
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			if !pi.Platform.IsWindows() {
				continue
			}
			err := layer.CheckWindowsEpoch(p.Epoch)
			switch {
			case err == nil:
				return nil
			case opt.Epoch != nil:
				return fmt.Errorf("image %s (%s): %w", im.Name, pi.Platform, err)
			case os.Getenv("SOURCE_DATE_EPOCH") != "":
				return fmt.Errorf("SOURCE_DATE_EPOCH=%s: image %s (%s): %w", os.Getenv("SOURCE_DATE_EPOCH"), im.Name, pi.Platform, err)
			}
			return r.Errorf("epoch", "image %s (%s): %v", im.Name, pi.Platform, err)
		}
	}
	return nil
}

func epochOf(r *Recipe, opt Options) (time.Time, error) {
	var sec int64
	switch {
	case opt.Epoch != nil:
		sec = *opt.Epoch
	case os.Getenv("SOURCE_DATE_EPOCH") != "":
		v, err := plan.ParseEpoch(os.Getenv("SOURCE_DATE_EPOCH"))
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", os.Getenv("SOURCE_DATE_EPOCH"), err)
		}
		sec = v
	case r.Epoch != nil:
		sec = *r.Epoch
	}
	if err := plan.CheckEpoch(sec); err != nil {
		return time.Time{}, err
	}
	return time.Unix(sec, 0).UTC(), nil
}

// selection reads what the options select: the variables, the images (in
// order) and the platforms (nil for all).
func selection(r *Recipe, opt Options) (Vars, []string, platforms, error) {
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

func selectImages(r *Recipe, only []string) ([]string, error) {
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
			return nil, fmt.Errorf("image %s: not in %s (images: %s)", n, r.File, strings.Join(all, ", "))
		}
		want[n] = true
	}
	// Name order, as without --image, whatever the flags' order or
	// repetitions: outputs list the images in it.
	return slices.DeleteFunc(all, func(n string) bool { return !want[n] }), nil
}

// platforms is the platforms a build is limited to: selectors, an OS
// ("windows") or a platform; nil selects every platform.
type platforms []string

// A platform given names that platform alone: --platform linux/amd64
// does not build a recipe's linux/amd64/v3 images too, as a recipe's
// selector does (platform.Selects).
func (s platforms) has(p platform.Platform) bool {
	if s == nil {
		return true
	}
	for _, sel := range s {
		if !strings.Contains(sel, "/") && sel == p.OS || sel == p.String() {
			return true
		}
	}
	return false
}

func parsePlatforms(list []string) (platforms, error) {
	if len(list) == 0 {
		return nil, nil
	}
	var want platforms
	for _, s := range list {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if !strings.Contains(part, "/") {
				if err := platform.ParseSelector(part); err != nil || part == "" {
					if err == nil {
						err = fmt.Errorf("empty platform")
					}
					return nil, fmt.Errorf("platform selection: %w", err)
				}
				want = append(want, part)
				continue
			}
			p, err := platform.Parse(part)
			if err != nil {
				return nil, fmt.Errorf("platform selection: %w", err)
			}
			want = append(want, p.String())
		}
	}
	return want, nil
}

func (pl *planner) image(name string, ri *Image, vars Vars, want platforms) (*plan.Image, error) {
	r := pl.r
	at := "images." + name
	im := &plan.Image{Name: name, Repository: name, Pos: r.Pos(at)}
	if ri.Repository != "" {
		repo, err := r.Expand(at+".repository", ri.Repository, vars)
		if err != nil {
			return nil, err
		}
		im.Repository = repo
	}
	// Names are checked here, once expanded: an oci: layout would hold a
	// name no tool resolves, and docker: and registry: outputs refuse it
	// only when they write it, without the line.
	if err := plan.CheckRepository(im.Repository); err != nil {
		if ri.Repository == "" {
			return nil, r.Errorf(at, "image %s: %v; name it with repository:", name, err)
		}
		return nil, r.Errorf(at+".repository", "image %s: %v", name, err)
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
	for i, t := range tags {
		if err := plan.CheckTag(t); err != nil {
			return nil, r.Errorf(fmt.Sprintf("%s.tags.%d", at, i), "image %s: %v", name, err)
		}
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
		pf, err := platform.Parse(ps)
		if err != nil {
			return nil, r.Errorf(fmt.Sprintf("%s.platforms.%d", at, i), "%v", err)
		}
		if !want.has(pf) {
			continue
		}
		pi, err := pl.platformImage(name, ri, vars, pf)
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
	v := map[string]string{
		"os":       pl.OS,
		"arch":     pl.Arch,
		"variant":  pl.Variant,
		"platform": pl.String(),
		"exe":      pl.ExeSuffix(),
	}
	// Unset where there is none, so that a use is an error at its line
	// rather than an empty directory name.
	if m := pl.Multiarch(); m != "" {
		v["multiarch"] = m
	}
	return v
}

func (pln *planner) platformImage(name string, ri *Image, vars Vars, pl platform.Platform) (*plan.PlatformImage, error) {
	r := pln.r
	at := "images." + name
	v := vars.With(platformVars(pl))
	bases, err := r.ExpandList(at+".base", ri.Base.For(pl), v)
	if err != nil {
		return nil, err
	}
	if len(bases) == 0 {
		return nil, r.Errorf(at+".base", "image %s: no base for platform %s", name, pl)
	}
	for _, b := range bases {
		if err := image.CheckBaseRef(b); err != nil {
			return nil, r.Errorf(at+".base", "image %s: %v", name, err)
		}
	}
	pi := &plan.PlatformImage{Platform: pl, Bases: bases, BasePos: r.Pos(at + ".base")}

	layers := map[string]*plan.Layer{}
	licensed := map[string]bool{}
	for i, f := range ri.Files {
		if !f.AppliesTo(pl) {
			continue
		}
		fat := fmt.Sprintf("%s.files.%d", at, i)
		key, err := pln.artifact(f.Artifact, pl, vars)
		if err != nil {
			return nil, err
		}
		dest, err := r.Expand(fat+".dest", f.Dest, v)
		if err != nil {
			return nil, err
		}
		// A dest is a path the user writes, whose backslashes separate
		// (tree.CleanPath), as on Windows: the plan's is slash-separated,
		// as a Dockerfile's is, so that a trailing \ places into the
		// directory and the build's own path handling reads it alike.
		dest = strings.ReplaceAll(dest, `\`, "/")
		pm := plan.Placement{Artifact: key, Dest: dest, Licenses: !licensed[key], Pos: r.Pos(fat)}
		licensed[key] = true
		if f.Mode != "" {
			pm.Mode, _ = ParseMode(f.Mode) // checked by check()
		}
		if f.Owner != "" {
			pm.UID, pm.GID, _ = ParseOwner(f.Owner)
		}
		pm.PathPos = r.Pos(fat + ".path")
		if pm.Path, err = r.Expand(fat+".path", f.Path, v); err != nil {
			return nil, err
		}
		pm.LinkAs, _ = tree.ParseLinkKind(f.Link) // checked by check()
		lname := f.Layer
		if lname == "" {
			lname = fmt.Sprintf("%d-%s", i, f.Artifact)
		}
		l, ok := layers[lname]
		if !ok {
			l = &plan.Layer{Name: lname}
			layers[lname] = l
			pi.Layers = append(pi.Layers, l)
		}
		l.Placements = append(l.Placements, pm)
	}

	if pi.Config, err = r.imageConfig(name, at, &ri.Config, pl, v); err != nil {
		return nil, err
	}
	return pi, nil
}

// artifact records the request for artifact name on pf, in the mode the
// build chose, and returns its key.
func (pln *planner) artifact(name string, pf platform.Platform, v Vars) (string, error) {
	key := plan.Key(name, pf)
	if _, ok := pln.p.Artifacts[key]; ok {
		return key, nil
	}
	c := pln.modes[name]
	a, err := pln.r.planArtifact(name, c.Mode, c.Path, pf, v)
	if err != nil {
		return "", err
	}
	// A path chosen when building is blamed where it was given (a
	// --modes file's line, the --mode flag), not on the recipe's own
	// path, which names another file.
	if c.Path != "" {
		from := c.From
		if from.File == "" {
			from = plan.Pos{File: fmt.Sprintf("--mode %s=%s:%s", name, c.Mode, c.Path)}
		}
		a.Fields["path"] = from
	}
	pln.p.Artifacts[key] = a
	return key, nil
}

// planArtifact is the request for artifact name on pf in mode, with where
// its settings were written.
func (r *Recipe) planArtifact(name, mode, localPath string, pf platform.Platform, v Vars) (*plan.Artifact, error) {
	req, at, err := r.request(name, mode, localPath, pf, v)
	if err != nil {
		return nil, err
	}
	a := &plan.Artifact{Request: *req, Check: true, Pos: r.Pos(at), Fields: r.fieldsAt(at, pf)}
	// licenses is the artifact's, beside its kind sections, in every mode.
	if lat := "artifacts." + name + ".licenses"; r.lines[lat] != 0 {
		a.Fields["licenses"] = r.Pos(lat)
	}
	if ra := r.Artifacts[name]; ra.Check != nil {
		a.Check = *ra.Check
	}
	return a, nil
}

// request expands artifact name in the given mode ("" for artifacts
// without modes, or for the recipe's default) for platform pf, and says
// where in the recipe its kind is. localPath, for the local mode,
// overrides the recipe's path.
func (r *Recipe) request(name, mode, localPath string, pf platform.Platform, vars Vars) (*artifact.Request, string, error) {
	ra := r.Artifacts[name]
	at := "artifacts." + name
	req := &artifact.Request{Name: name, Platform: pf, NoLicense: ra.NoLicense()}
	v, err := r.artifactVars(name, pf, vars, "")
	if err != nil {
		return nil, "", err
	}
	req.Version = v["version"]
	if !req.NoLicense && ra.Licenses != nil {
		lic, err := r.ExpandList(at+".licenses", ra.Licenses, v)
		if err != nil {
			return nil, "", err
		}
		for i, l := range lic {
			// Named here, at its own line: found missing only after the
			// artifact is built, it would be blamed on the artifact's kind.
			c, err := tree.CleanPath(l)
			if err == nil && c == "." {
				err = errors.New("names no file")
			}
			if err != nil {
				return nil, "", r.Errorf(fmt.Sprintf("%s.licenses.%d", at, i), "artifact %s: licence %q: %v", name, l, err)
			}
		}
		req.Licenses = lic
	}
	extra := artifact.ExtraPatterns(req.Licenses, req.NoLicense)
	if ra.Modes == nil {
		// One kind, no modes: the section names the kind.
		switch {
		case ra.Local != nil:
			at += ".local"
			req.Kind, err = r.local(name, at, ra.Local, "", v, extra)
		case ra.URL != nil:
			at += ".url"
			req.Kind, err = r.url(name, pf, at, ra.URL, v, extra)
		case ra.Gomod != nil:
			at += ".gomod"
			req.Kind, err = r.goModule(name, at, ra.Gomod, pf, v)
		default:
			at += ".go"
			var g *artifact.Go
			if g, err = r.goBuild(at, ra.Go, pf, v); err == nil {
				g.Module = abs(r.Dir, g.Module)
				req.Kind = g
			}
		}
		return req, at, err
	}
	if mode == "" {
		mode = ra.Default
	}
	req.Mode = mode
	at += ".modes." + mode
	switch mode {
	case "local":
		l := ra.Modes.Local
		if l == nil {
			l = &Local{}
		}
		if l.Path == "" && localPath == "" {
			return nil, "", r.Errorf(at, "artifact %s: the local mode needs a path, given when building (a mode choice local:PATH): --mode %s=local:PATH, or %s: local:PATH in a --modes file", name, name, name)
		}
		req.Kind, err = r.local(name, at, l, localPath, v, extra)
	case "release":
		req.Kind, err = r.url(name, pf, at, ra.Modes.Release, v, extra)
	case "source":
		if m := ra.Modes.Source.Gomod; m != nil {
			at += ".gomod"
			req.Kind, err = r.goModule(name, at, m, pf, v)
		} else {
			req.Kind, err = r.gitSource(name, at, ra.Modes.Source, pf, v)
		}
	default:
		return nil, "", r.Errorf("artifacts."+name, "artifact %s: unknown mode %q", name, mode)
	}
	return req, at, err
}

// artifactVars are the variables of artifact name's fields on pf: vars,
// the platform's, {{version}}, and the pins of its git source as
// {{commit}} and {{tag}}, so that ldflags (-X main.commit={{commit}}) or a
// release URL cannot drift from what the source pins. commit, when not
// empty, stands for the recipe's (pallet lock, re-pinning a moved tag).
func (r *Recipe) artifactVars(name string, pf platform.Platform, vars Vars, commit string) (Vars, error) {
	ra := r.Artifacts[name]
	at := "artifacts." + name
	v := vars.With(platformVars(pf))
	if ra.Version != "" {
		ver, err := r.Expand(at+".version", ra.Version, v)
		if err != nil {
			return nil, err
		}
		v["version"] = ver
	}
	if g := ra.gitSource(); g != nil {
		if commit == "" {
			commit = g.Commit
		}
		if commit != "" {
			v["commit"] = commit
		}
		if g.Tag != "" {
			tag, err := r.Expand(at+".modes.source.git.tag", g.Tag, v)
			if err != nil {
				return nil, err
			}
			v["tag"] = tag
		}
	}
	if m := ra.gomodSource(); m != nil && m.Commit != "" {
		v["commit"] = m.Commit
	}
	return v, nil
}

// local is the kind of a local section, extra the patterns its licences
// add to an include (extract). A path given at build time is
// relative to where pallet runs, and unpacked when it is an archive.
func (r *Recipe) local(name, at string, l *Local, override string, v Vars, extra []string) (artifact.Kind, error) {
	if l.Links != "" && l.Links != "keep" && l.Links != "refuse" {
		return nil, r.Errorf(at+".links", "artifact %s: links %q: want keep or refuse", name, l.Links)
	}
	ex, err := r.extract(at+".extract", l.Extract, v, extra)
	if err != nil {
		return nil, err
	}
	fname, err := r.Expand(at+".filename", l.Filename, v)
	if err != nil {
		return nil, err
	}
	if fname != "" && (fname == "." || fname == ".." || strings.ContainsAny(fname, "/\\\x00")) {
		return nil, r.Errorf(at+".filename", "artifact %s: filename %q: want a file name, without a directory", name, fname)
	}
	if fname != "" && ex != nil {
		return nil, r.Errorf(at+".filename", "artifact %s: filename names a file placed as it is, and extract unpacks it: give one of them", name)
	}
	if override != "" {
		// A path given when building may differ per platform as a
		// recipe's does (local:./patched/{{arch}}/runc): one choice then
		// serves a multi-platform build.
		var err error
		if override, err = r.Expand(at, override, v); err != nil {
			return nil, fmt.Errorf("the mode choice %s=local:PATH: %w", name, err)
		}
		if !filepath.IsAbs(override) {
			wd, err := os.Getwd()
			if err != nil {
				return nil, err
			}
			override = filepath.Join(wd, override)
		}
		a := artifact.LocalArchive(override, ex)
		a.KeepLinks, a.Filename = l.Links == "keep", fname
		return a, nil
	}
	path, err := r.Expand(at+".path", l.Path, v)
	if err != nil {
		return nil, err
	}
	return &artifact.Local{Path: abs(r.Dir, path), Extract: ex, KeepLinks: l.Links == "keep", Filename: fname}, nil
}

// url is the kind of a url or release section, extra the patterns its
// licences add to an include (extract).
func (r *Recipe) url(name string, pf platform.Platform, at string, d *URL, v Vars, extra []string) (artifact.Kind, error) {
	u, err := r.Expand(at+".url", d.URL, v)
	if err != nil {
		return nil, err
	}
	if err := CheckURL(u); err != nil {
		return nil, r.Errorf(at+".url", "artifact %s: %v", name, err)
	}
	sum, ok := d.SHA256.For(pf)
	if !ok {
		return nil, r.Errorf(at+".sha256", "artifact %s: no sha256 pinned for %s; every platform a download serves needs its digest", name, pf)
	}
	fname, err := r.Expand(at+".filename", d.Filename, v)
	if err != nil {
		return nil, err
	}
	ex, err := r.extract(at+".extract", d.Extract, v, extra)
	if err != nil {
		return nil, err
	}
	return &artifact.URL{URL: u, SHA256: sum, Filename: fname, Extract: ex}, nil
}

// gitSource is the kind of a source mode: a Go build of a pinned commit,
// or files of it.
func (r *Recipe) gitSource(name, at string, src *Source, pf platform.Platform, v Vars) (artifact.Kind, error) {
	repo, err := r.Expand(at+".git.repo", src.Git.Repo, v)
	if err != nil {
		return nil, err
	}
	if err := r.checkRepo(name, at+".git.repo", repo); err != nil {
		return nil, err
	}
	tag, err := r.Expand(at+".git.tag", src.Git.Tag, v)
	if err != nil {
		return nil, err
	}
	if src.Git.Path != "" {
		p, err := r.Expand(at+".git.path", src.Git.Path, v)
		if err != nil {
			return nil, err
		}
		if p, err = artifact.CleanRepoPath(p); err != nil {
			return nil, r.Errorf(at+".git.path", "artifact %s: %v", name, err)
		}
		return &artifact.GitFiles{Repo: repo, Commit: src.Git.Commit, Tag: tag, Path: p}, nil
	}
	g, err := r.goBuild(at+".go", &src.Go, pf, v)
	if err != nil {
		return nil, err
	}
	if g.Module == "" {
		g.Module = "."
	}
	return &artifact.Git{Repo: repo, Commit: src.Git.Commit, Tag: tag, Go: *g}, nil
}

// checkRepo refuses a repository git would read as a path relative to
// its working directory: that is a directory the build makes (and, for
// pallet lock, the shell's), so the same recipe would find the repository
// from one and not the other, and never from the recipe's directory.
func (r *Recipe) checkRepo(name, at, repo string) error {
	if !relativeRepo(repo) {
		return nil
	}
	return r.Errorf(at, "artifact %s: repo %q is a relative path, which git takes from the build's own work directory, not the recipe's; give a URL or an absolute path (file://%s)", name, repo, filepath.Join(r.Dir, repo))
}

// relativeRepo reports whether git takes repo as a relative local path:
// not a URL, not scp-like (host:path, a colon before any slash), not
// absolute.
func relativeRepo(repo string) bool {
	if repo == "" || strings.HasPrefix(repo, "/") || strings.Contains(repo, "://") {
		return false
	}
	if i := strings.IndexByte(repo, ':'); i >= 0 && !strings.Contains(repo[:i], "/") {
		return false
	}
	return true
}

func (r *Recipe) goBuild(at string, g *GoBuild, pf platform.Platform, v Vars) (*artifact.Go, error) {
	mod, err := r.Expand(at+".module", g.Module, v)
	if err != nil {
		return nil, err
	}
	ver, err := r.Expand(at+".version", g.Version, v)
	if err != nil {
		return nil, err
	}
	if ver != "" {
		if err := CheckGoVersion(ver); err != nil {
			return nil, r.Errorf(at+".version", "%v", err)
		}
	}
	cc, _ := platform.Pick(g.CC, pf)
	sg := &artifact.Go{CC: cc, Module: mod, CGO: g.CGO, Trimpath: g.Trimpath == nil || *g.Trimpath, Version: ver}
	if err := r.expandLists(v,
		listField{at + ".packages", g.Packages, &sg.Packages},
		listField{at + ".ldflags", g.Ldflags, &sg.Ldflags},
		listField{at + ".tags", g.Tags, &sg.Tags},
		listField{at + ".flags", g.Flags, &sg.Flags},
		listField{at + ".env", g.Env, &sg.Env},
	); err != nil {
		return nil, err
	}
	for i, f := range g.Ldflags {
		if err := checkLinkerWords(f, sg.Ldflags[i], v); err != nil {
			return nil, r.Errorf(fmt.Sprintf("%s.ldflags.%d", at, i), "ldflags: %v", err)
		}
	}
	for i, f := range g.Tags {
		if err := checkTagWords(f, v); err != nil {
			return nil, r.Errorf(fmt.Sprintf("%s.tags.%d", at, i), "tags: %v", err)
		}
	}
	for i, pkg := range sg.Packages {
		if strings.HasPrefix(pkg, "-") {
			// The go command reads it as a flag, past every check of
			// flags (-o elsewhere, -toolexec, a second -ldflags).
			return nil, r.Errorf(fmt.Sprintf("%s.packages.%d", at, i), "package %q begins with '-', which go build reads as a flag; give flags in flags", pkg)
		}
		// A path out of the module builds files that no pin and no
		// cache key cover (go builds a file anywhere given by path).
		if outsideModule(pkg) {
			return nil, r.Errorf(fmt.Sprintf("%s.packages.%d", at, i), "package %q is outside the module; name packages relative to it (./cmd/x) or by import path", pkg)
		}
	}
	for i, f := range sg.Flags {
		if !strings.HasPrefix(f, "-") {
			continue
		}
		next := ""
		if i+1 < len(sg.Flags) {
			next = sg.Flags[i+1]
		}
		if why := refusedFlag(f, next); why != "" {
			return nil, r.Errorf(fmt.Sprintf("%s.flags.%d", at, i), "flag %s: %s", f, why)
		}
	}
	for i, kv := range sg.Env {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "GOFLAGS":
			// The go command reads these as flags given on its command
			// line (each -name or -name=value): the same are refused.
			// It splits them as it splits -ldflags, quotes stripped
			// ('-modfile=/tmp/x' is -modfile), and refuses a quote
			// left open.
			flags, err := quoted.Split(val)
			if err != nil {
				return nil, r.Errorf(fmt.Sprintf("%s.env.%d", at, i), "GOFLAGS: %v", err)
			}
			for _, f := range flags {
				if why := refusedFlag(f, ""); why != "" {
					return nil, r.Errorf(fmt.Sprintf("%s.env.%d", at, i), "GOFLAGS flag %s: %s", f, why)
				}
			}
		case "GOWORK", "GOENV":
			// pallet sets both off: a go.work or go env file names other
			// modules, directories and flags, out of the module and of
			// the cache key, which holds only this setting's path.
			if val != "off" {
				return nil, r.Errorf(fmt.Sprintf("%s.env.%d", at, i), "%s: the build reads no %s file, which no pin covers; give what it would set in this section (flags, env)", kv, strings.ToLower(strings.TrimPrefix(k, "GO")))
			}
		}
	}
	return sg, nil
}

// refusedFlag says why the go build flag f (followed by next, for a flag
// whose value is the next argument) may not be given in a recipe, or ""
// if it may.
func refusedFlag(f, next string) string {
	name, val, hasVal := strings.Cut(strings.TrimLeft(f, "-"), "=")
	if !hasVal {
		val = next
	}
	if why, own := ownFlags[name]; own {
		return why
	}
	// -buildvcs is a boolean flag to the go command: alone it is true.
	// false is pallet's own default, and may be said again.
	if name == "buildvcs" && (!hasVal || val != "false") {
		return "it stamps the state of the repository around the module (vcs.revision, vcs.modified) into the binary, which the cache key does not cover, so a cached binary could carry another commit's; pass the commit or version with ldflags instead (-X main.commit={{commit}}, -X main.version={{version}}; see docs/recipe.md, Variables)"
	}
	if fileFlags[name] && outsideModule(val) {
		return "it reads a file outside the module, which no pin covers"
	}
	if name == "compiler" && val != "gc" {
		return "pallet builds with the pinned Go toolchain's own compiler (gc); another is a program on the build machine that no pin or cache key covers"
	}
	if toolFlags[name] {
		if w := toolFileWord(val); w != "" {
			return fmt.Sprintf("%s hands the compiler or assembler a path (%s), which reads or writes files that no pin or cache key covers", w, strings.TrimLeft(w, "-"))
		}
	}
	return ""
}

// toolFlags are the go build flags whose value is passed on to the
// compiler or assembler as arguments, after an optional package
// pattern and '=' (-gcflags=all=-N -l).
var toolFlags = map[string]bool{"gcflags": true, "asmflags": true, "gccgoflags": true}

// toolPathArgs are the compiler's and assembler's arguments that name a
// file or directory to read or write: an include directory, an import or
// embed configuration, a profile to use, a header or object to write. A
// cached binary would not follow a change to what they name.
var toolPathArgs = map[string]bool{
	"I": true, "importcfg": true, "embedcfg": true, "symabis": true,
	"pgoprofile": true, "asmhdr": true, "linkobj": true, "o": true,
	"cpuprofile": true, "memprofile": true, "blockprofile": true,
	"mutexprofile": true, "traceprofile": true, "bench": true, "json": true,
}

// toolFileWord is the first argument of a -gcflags or -asmflags value
// that names a path (toolPathArgs), or "" if none does. An argument the
// value cannot be split into is left to the go command, which refuses it.
func toolFileWord(val string) string {
	// The go command takes text before the first '=' as a package
	// pattern unless it starts with '-' (cmd/go's PerPackageFlag).
	if !strings.HasPrefix(val, "-") {
		if _, args, ok := strings.Cut(val, "="); ok {
			val = args
		}
	}
	words, err := quoted.Split(val)
	if err != nil {
		return ""
	}
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if toolPathArgs[name] {
			return w
		}
	}
	return ""
}

// ownFlags are the go build flags a recipe may not pass in flags: pallet
// sets them itself, or they move the build out of the module.
var ownFlags = map[string]string{
	"o":        "pallet chooses where go build writes",
	"C":        "it moves the build out of the module; use module",
	"ldflags":  "use the ldflags field",
	"tags":     "use the tags field",
	"trimpath": "use the trimpath field",
	// The three below bring in files or programs by path, which no pin
	// or cache key covers, so that a cached binary could be of other
	// sources than the build would use now.
	"overlay":    "it replaces the module's files with those its JSON names, which no pin or cache key covers; change the module's own files (a local module, or a patched commit)",
	"toolexec":   "it runs a program around every compile and link, which no pin or cache key covers",
	"pkgdir":     "it reads installed packages from a directory that no pin or cache key covers",
	"linkshared": "it links against shared libraries on the build machine that no pin or cache key covers",
}

// outsideModule says whether a path given to go build (a package, a
// flag's file) leads out of the module: absolute, or climbing above it.
func outsideModule(p string) bool {
	return filepath.IsAbs(p) || p == ".." || strings.HasPrefix(path.Clean(filepath.ToSlash(p)), "../")
}

// fileFlags are the go build flags that read a file named by path: one
// out of the module is neither pinned nor in the cache key.
var fileFlags = map[string]bool{"modfile": true, "pgo": true}

// listField is a recipe list at path to expand into out.
type listField struct {
	path string
	in   []string
	out  *[]string
}

func (r *Recipe) expandLists(v Vars, fields ...listField) error {
	for _, f := range fields {
		var err error
		if *f.out, err = r.ExpandList(f.path, f.in, v); err != nil {
			return err
		}
	}
	return nil
}

// extract is the Extract of section at; extra are the patterns the
// artifact's licences add to its include (artifact.ExtraPatterns).
func (r *Recipe) extract(at string, e *Extract, v Vars, extra []string) (*artifact.Extract, error) {
	if e == nil {
		return nil, nil
	}
	if e.Links != "" && e.Links != "keep" && e.Links != "refuse" {
		return nil, r.Errorf(at+".links", "extract.links %q: want keep or refuse", e.Links)
	}
	inc, err := r.ExpandList(at+".include", e.Include, v)
	if err != nil {
		return nil, err
	}
	// Refused here, at the pattern's line, rather than once the archive
	// is fetched, at the artifact's. Extraction matches names against
	// include and the extra patterns together (artifact.ExtraPatterns),
	// theirs first, so both are checked in that order; only when that
	// fails is include checked alone, to tell whose fault it is.
	if len(inc) > 0 {
		if i, err := archive.CheckInclude(append(slices.Clip(extra), inc...)); err != nil {
			if i, err := archive.CheckInclude(inc); err != nil {
				return nil, r.Errorf(fmt.Sprintf("%s.include.%d", at, i), "%v", err)
			}
			// Licence names are escaped, never at fault alone.
			i = max(i-len(extra), 0)
			return nil, r.Errorf(fmt.Sprintf("%s.include.%d", at, i), "%v; counted with the %d extra patterns extraction adds: %s", err, len(extra), artifact.ExtraGlobsHint)
		}
	}
	return &artifact.Extract{Strip: e.Strip, Include: inc, RootedLinks: e.Links == "keep"}, nil
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
func (r *Recipe) Fetchable(opt Options) ([]*plan.Artifact, error) {
	vars, names, want, err := selection(r, opt)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*plan.Artifact
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
			if !want.has(pl) {
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
				case a.URL != nil, a.Go != nil, a.Gomod != nil:
					// A local module has no source to mirror, but its
					// dependencies and toolchain do.
					modes = []string{""}
				}
				for _, m := range modes {
					key := plan.Key(f.Artifact, pl) + "@" + m
					if seen[key] {
						continue
					}
					seen[key] = true
					a, err := r.planArtifact(f.Artifact, m, "", pl, vars)
					if err != nil {
						return nil, err
					}
					out = append(out, a)
				}
			}
		}
	}
	return out, nil
}

// fieldsAt finds, under an artifact's kind section at, where each setting
// an artifact.FieldError may blame was written: a git source's (its path
// when it takes files) and a gomod module's fields (its path too), a go
// section's, a download's (its sha256 per platform when given so), an
// archive's extract settings.
func (r *Recipe) fieldsAt(at string, pf platform.Platform) map[string]plan.Pos {
	out := map[string]plan.Pos{}
	for field, paths := range map[string][]string{
		"commit":   {".git.commit", ".commit"},
		"tag":      {".git.tag"},
		"repo":     {".git.repo"},
		"path":     {".git.path", ".path"},
		"module":   {".go.module", ".module"},
		"packages": {".go.packages", ".packages"},
		"cgo":      {".go.cgo", ".cgo"},
		"sha256":   {".sha256." + pf.String(), ".sha256", ".sum"},
		"strip":    {".extract.strip"},
		"include":  {".extract.include"},
	} {
		for _, p := range paths {
			if _, ok := r.lines[at+p]; ok {
				out[field] = r.Pos(at + p)
				break
			}
		}
	}
	return out
}
