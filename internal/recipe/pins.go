package recipe

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
)

// The pins a recipe holds or lacks, expanded as a build would expand
// them, for pallet lock: which downloads serve which platforms at which
// URL, and which git sources name a tag. The recipe says where each pin
// is; fetching and writing are lock's.

// PinSelection narrows the pins listed.
type PinSelection struct {
	// Platforms, when set, are the only platforms whose pins are wanted.
	Platforms []string
	// Artifacts, when set, are the only artifacts whose pins are wanted.
	Artifacts []string
	// Commits stand, by artifact, for the commit of its git source in
	// {{commit}}: the commit lock resolved, which the recipe may lack
	// yet or pin to a tag's old place.
	Commits map[string]string
}

// GitPin is the git section of an artifact's source mode.
type GitPin struct {
	Artifact string
	// Keys are the mapping keys leading to the git section.
	Keys []string
	// Repo and Tag are expanded; Commit is as written ("" if missing).
	Repo, Tag, Commit string
}

// Download is a url section, or a release mode, with the platforms
// whose images place it.
type Download struct {
	Artifact string
	// Keys are the mapping keys leading to the section.
	Keys []string
	// SHA256 is the section's sha256 as written.
	SHA256 Digests
	// PerPlatform says the URL or checksum file differs by platform, so
	// one digest cannot pin them all.
	PerPlatform bool
	// Targets are the platforms the download serves, in order.
	Targets []*Target
}

// Target is one platform a download serves.
type Target struct {
	Platform platform.Platform
	// URL and Checksums are expanded for the platform.
	URL, Checksums string
	// Selected says the selection wants this platform's pin.
	Selected bool
	// Keyed says a key of SHA256 names the platform: Selector ("" for a
	// single digest), whose value is Pin. Pinned says Pin is not empty.
	Keyed         bool
	Selector, Pin string
	Pinned        bool
}

// Path is the dotted path of keys, as Pos and Errorf take it.
func Path(keys ...string) string { return strings.Join(keys, ".") }

// platformVarRE finds the per-platform variables in a template.
var platformVarRE = lazyre.New(`\{\{\s*(` + strings.Join(platformVarNames, "|") + `)\s*\}\}`)

// served lists, for every artifact an image places, the platforms it is
// placed on, in order, with vars expanded as the build would. Every image
// counts, whatever is selected: whether a URL depends on the platform is
// a property of the recipe, not of one command line.
func (r *Recipe) served(vars Vars) (map[string][]platform.Platform, error) {
	out := map[string][]platform.Platform{}
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(r.Images)) {
		im := r.Images[name]
		plats, err := r.ExpandList("images."+name+".platforms", im.Platforms, vars)
		if err != nil {
			return nil, err
		}
		for i, ps := range plats {
			pl, err := platform.Parse(ps)
			if err != nil {
				return nil, r.Errorf(fmt.Sprintf("images.%s.platforms.%d", name, i), "%v", err)
			}
			for _, f := range im.Files {
				if !f.AppliesTo(pl) || seen[plan.Key(f.Artifact, pl)] {
					continue
				}
				seen[plan.Key(f.Artifact, pl)] = true
				out[f.Artifact] = append(out[f.Artifact], pl)
			}
		}
	}
	for _, l := range out {
		slices.SortFunc(l, func(a, b platform.Platform) int { return strings.Compare(a.String(), b.String()) })
	}
	return out, nil
}

// pinArtifacts returns the artifacts sel names, or all that images place,
// in name order, with the platforms each serves and those selected.
func (r *Recipe) pinArtifacts(sel PinSelection) (Vars, []string, map[string][]platform.Platform, platforms, error) {
	vars, err := r.Vars(nil)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	served, err := r.served(vars)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	want, err := parsePlatforms(sel.Platforms)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	names := slices.Sorted(maps.Keys(served))
	if len(sel.Artifacts) > 0 {
		names = nil
		for _, n := range sel.Artifacts {
			if _, ok := r.Artifacts[n]; !ok {
				return nil, nil, nil, nil, fmt.Errorf("artifact %s: not in %s (artifacts: %s)", n, r.File, namesOf(r.Artifacts))
			}
			if len(served[n]) == 0 {
				return nil, nil, nil, nil, r.Errorf("artifacts."+n, "artifact %s: no image places it, so no build uses its pins", n)
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		slices.Sort(names)
	}
	return vars, names, served, want, nil
}

// onSelected calls each with artifact name's variables on every platform
// of served the selection wants, in order, until one fails.
func (r *Recipe) onSelected(name string, served []platform.Platform, want platforms, vars Vars, each func(platform.Platform, Vars) error) error {
	for _, pl := range served {
		if !want.has(pl) {
			continue
		}
		v, err := r.artifactVars(name, pl, vars, "")
		if err != nil {
			return err
		}
		if err := each(pl, v); err != nil {
			return err
		}
	}
	return nil
}

// GitPins lists the git sources of the selected artifacts that name a
// tag: the pins lock resolves with the repository. A source without a
// tag is pinned by its commit alone and has nothing to resolve.
func (r *Recipe) GitPins(sel PinSelection) ([]*GitPin, error) {
	vars, names, served, want, err := r.pinArtifacts(sel)
	if err != nil {
		return nil, err
	}
	var out []*GitPin
	for _, name := range names {
		g := r.Artifacts[name].gitSource()
		if g == nil || g.Tag == "" {
			continue
		}
		at := "artifacts." + name + ".modes.source.git"
		var pin *GitPin
		err := r.onSelected(name, served[name], want, vars, func(_ platform.Platform, v Vars) error {
			repo, err := r.Expand(at+".repo", g.Repo, v)
			if err != nil {
				return err
			}
			if err := r.checkRepo(name, at+".repo", repo); err != nil {
				return err
			}
			p := &GitPin{Artifact: name, Keys: []string{"artifacts", name, "modes", "source", "git"}, Repo: repo, Tag: v["tag"], Commit: g.Commit}
			if pin != nil && (pin.Repo != p.Repo || pin.Tag != p.Tag) {
				return r.Errorf(at, "artifact %s: the repository or tag differs by platform (%s %s, %s %s), but a source has one commit", name, pin.Repo, pin.Tag, p.Repo, p.Tag)
			}
			pin = p
			return nil
		})
		if err != nil {
			return nil, err
		}
		if pin != nil {
			out = append(out, pin)
		}
	}
	return out, nil
}

// Downloads lists the url sections and release modes of the selected
// artifacts, with every platform they serve and what pins it.
func (r *Recipe) Downloads(sel PinSelection) ([]*Download, error) {
	vars, names, served, want, err := r.pinArtifacts(sel)
	if err != nil {
		return nil, err
	}
	var out []*Download
	for _, name := range names {
		a := r.Artifacts[name]
		keys, u := []string{"artifacts", name, "url"}, a.URL
		if a.Modes != nil {
			keys, u = []string{"artifacts", name, "modes", "release"}, a.Modes.Release
		}
		if u == nil {
			continue
		}
		at := Path(keys...)
		d := &Download{Artifact: name, Keys: keys, SHA256: u.SHA256,
			PerPlatform: platformVarRE().MatchString(u.URL) || platformVarRE().MatchString(u.Checksums)}
		selectors := map[string]string{}
		for k := range u.SHA256 {
			selectors[k] = k
		}
		urls := map[string]bool{}
		for _, pl := range served[name] {
			v, err := r.artifactVars(name, pl, vars, sel.Commits[name])
			if err != nil {
				return nil, err
			}
			t := &Target{Platform: pl, Selected: want.has(pl)}
			if t.URL, err = r.Expand(at+".url", u.URL, v); err != nil {
				return nil, err
			}
			if err := CheckURL(t.URL); err != nil {
				return nil, r.Errorf(at+".url", "artifact %s: %v", name, err)
			}
			if t.Checksums, err = r.Expand(at+".checksums", u.Checksums, v); err != nil {
				return nil, err
			}
			if t.Checksums != "" {
				if err := CheckURL(t.Checksums); err != nil {
					return nil, r.Errorf(at+".checksums", "artifact %s: checksums: %v", name, err)
				}
			}
			urls[t.URL+" "+t.Checksums] = true
			if k, ok := platform.Pick(selectors, pl); ok {
				t.Keyed, t.Selector, t.Pin = true, k, u.SHA256[k]
				t.Pinned = t.Pin != ""
			}
			d.Targets = append(d.Targets, t)
		}
		d.PerPlatform = d.PerPlatform || len(urls) > 1
		out = append(out, d)
	}
	return out, nil
}

// GoModPin is a gomod section, as an artifact's kind or its source mode:
// a module version pinned by its go.sum hash.
type GoModPin struct {
	Artifact string
	// Keys are the mapping keys leading to the gomod section.
	Keys []string
	// Module and Version are expanded; Sum and Commit are as written
	// ("" if missing).
	Module, Version, Sum, Commit string
	// Env is the section's env, expanded for Platform, the first platform
	// selected: the go command fetches the module with it, as a build does.
	Env      []string
	Platform platform.Platform
}

// GoModPins lists the gomod sections of the selected artifacts on the
// selected platforms: the sums lock resolves with the module proxy. The
// module version must be the same on every platform, as one sum pins it.
func (r *Recipe) GoModPins(sel PinSelection) ([]*GoModPin, error) {
	vars, names, served, want, err := r.pinArtifacts(sel)
	if err != nil {
		return nil, err
	}
	var out []*GoModPin
	for _, name := range names {
		a := r.Artifacts[name]
		m := a.gomodSource()
		if m == nil {
			continue
		}
		keys := []string{"artifacts", name, "gomod"}
		if a.Gomod == nil {
			keys = []string{"artifacts", name, "modes", "source", "gomod"}
		}
		at := Path(keys...)
		var pin *GoModPin
		err := r.onSelected(name, served[name], want, vars, func(pl platform.Platform, v Vars) error {
			p := &GoModPin{Artifact: name, Keys: keys, Sum: m.Sum, Commit: m.Commit, Platform: pl}
			var err error
			if p.Module, err = r.Expand(at+".module", m.Module, v); err != nil {
				return err
			}
			if p.Version, err = r.Expand(at+".version", m.Version, v); err != nil {
				return err
			}
			if err := r.checkModuleVersion(name, at, p.Module, p.Version); err != nil {
				return err
			}
			if err := r.expandLists(v, listField{at + ".env", m.Env, &p.Env}); err != nil {
				return err
			}
			if pin != nil && (pin.Module != p.Module || pin.Version != p.Version) {
				return r.Errorf(at, "artifact %s: the module or its version differs by platform (%s@%s, %s@%s), but a gomod section has one sum", name, pin.Module, pin.Version, p.Module, p.Version)
			}
			if pin == nil {
				pin = p
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if pin != nil {
			out = append(out, pin)
		}
	}
	return out, nil
}

// CommitGaps lists the selected artifacts whose fields use {{commit}}
// with no commit to stand for, each at the use, as a build refuses them:
// those of a gomod section without commit (the module proxy gives none).
// lock cannot fill these; their author writes upstream's commit. A git
// source has a commit, or a tag whose commit lock resolves: one with
// neither is refused when the recipe is read.
func (r *Recipe) CommitGaps(sel PinSelection) ([]*Error, error) {
	vars, names, served, want, err := r.pinArtifacts(sel)
	if err != nil {
		return nil, err
	}
	var out []*Error
	for _, name := range names {
		a := r.Artifacts[name]
		if m := a.gomodSource(); m == nil || m.Commit != "" {
			continue
		}
		mode := ""
		if a.Modes != nil {
			mode = "source"
		}
		for _, pl := range served[name] {
			if !want.has(pl) {
				continue
			}
			_, _, err := r.request(name, mode, "", pl, vars)
			var e *Error
			if errors.As(err, &e) && e.Msg == noCommit {
				out = append(out, e)
				break
			}
		}
	}
	return out, nil
}
