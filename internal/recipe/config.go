package recipe

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/platform"
)

// configSection is one config section of an image and where it is.
type configSection struct {
	at string
	c  *Config
}

// sections are the config sections that apply to pl, in the order they
// are laid over each other: the image's, then its OS's, then its
// platform's, so the most specific says last.
func (c *Config) sections(at string, pl platform.Platform) []configSection {
	out := []configSection{{at, c}}
	type match struct {
		sel  string
		rank int
	}
	var ms []match
	for sel, sc := range c.For {
		if rank, ok := pl.Selects(sel); ok && sc != nil {
			ms = append(ms, match{sel, rank})
		}
	}
	slices.SortFunc(ms, func(a, b match) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.sel, b.sel)) })
	for _, m := range ms {
		out = append(out, configSection{at + ".for." + m.sel, c.For[m.sel]})
	}
	return out
}

// imageConfig is the config of image at on pl, expanded: each section
// that applies sets what it gives. Entrypoint, cmd, workdir, user and
// stop signal are replaced; env and ports add to what was given before
// (a later variable of the same name wins when the config is applied);
// labels are merged by key. A list given empty ("cmd: []") clears the
// base's value, a list not given leaves it. name is the image's, for
// errors.
func (r *Recipe) imageConfig(name, at string, c *Config, pl platform.Platform, v Vars) (image.Config, error) {
	var cfg image.Config
	b := &configBudget{r: r}
	for _, s := range c.sections(at+".config", pl) {
		var one image.Config
		for _, f := range []listField{
			{s.at + ".entrypoint", s.c.Entrypoint, &one.Entrypoint},
			{s.at + ".cmd", s.c.Cmd, &one.Cmd},
			{s.at + ".env", s.c.Env, &one.Env},
			{s.at + ".ports", s.c.ExposedPorts, &one.ExposedPorts},
		} {
			var err error
			if *f.out, err = b.list(f.path, f.in, v); err != nil {
				return cfg, err
			}
		}
		for _, f := range []struct {
			field, in string
			out       *string
		}{{"workdir", s.c.Workdir, &cfg.Workdir}, {"user", s.c.User, &cfg.User}, {"stopSignal", s.c.StopSignal, &cfg.StopSignal}} {
			if f.in == "" {
				continue
			}
			var err error
			if *f.out, err = b.expand(s.at+"."+f.field, f.in, v); err != nil {
				return cfg, err
			}
		}
		if s.c.StopSignal != "" {
			if err := image.CheckStopSignal(cfg.StopSignal, pl.OS); err != nil {
				return cfg, r.Errorf(s.at+".stopSignal", "image %s on %s: %v", name, pl, err)
			}
		}
		if err := r.checkRunnable(name, s, one, cfg, pl); err != nil {
			return cfg, err
		}
		if one.Entrypoint != nil {
			cfg.Entrypoint = one.Entrypoint
		}
		if one.Cmd != nil {
			cfg.Cmd = one.Cmd
		}
		if one.Env != nil {
			cfg.Env = append(slices.Clip(cfg.Env), one.Env...)
		}
		if one.ExposedPorts != nil {
			cfg.ExposedPorts = append(slices.Clip(cfg.ExposedPorts), one.ExposedPorts...)
		}
		// In key order, so a recipe with two bad labels always reports
		// the same one.
		for _, k := range slices.Sorted(maps.Keys(s.c.Labels)) {
			if cfg.Labels == nil {
				cfg.Labels = map[string]string{}
			}
			b.used += len(k)
			var err error
			if cfg.Labels[k], err = b.expand(s.at+".labels."+k, s.c.Labels[k], v); err != nil {
				return cfg, err
			}
		}
	}
	return cfg, nil
}

// checkRunnable refuses, at their lines, config values of section s that
// a Linux runtime cannot start a container with, which would otherwise
// fail only where the image runs: runc takes only an absolute working
// directory, containerd and Docker read the user as user[:group], and
// runc refuses a variable with no name. Windows has its own rules for
// these, left to it. The value may come from a variable, so the error
// names the image and platform it was expanded for.
func (r *Recipe) checkRunnable(name string, s configSection, one, cfg image.Config, pl platform.Platform) error {
	if pl.OS != "linux" {
		return nil
	}
	on := fmt.Sprintf("image %s on %s", name, pl)
	if s.c.Workdir != "" && !strings.HasPrefix(cfg.Workdir, "/") {
		return r.Errorf(s.at+".workdir", "%s: workdir %q is not an absolute path, and the runtime starts a container only in one", on, cfg.Workdir)
	}
	if s.c.User != "" && strings.Count(cfg.User, ":") > 1 {
		return r.Errorf(s.at+".user", "%s: user %q is not user[:group]: the runtime reads at most one ':'", on, cfg.User)
	}
	for i, e := range one.Env {
		if strings.HasPrefix(e, "=") {
			return r.Errorf(fmt.Sprintf("%s.env.%d", s.at, i), "%s: env entry %q has no variable name", on, e)
		}
	}
	return nil
}

// configBudget counts the bytes of an image's config on one platform as
// its values are expanded, every section's, and refuses at its line the
// value that takes them past image.DefaultMaxManifestSize: the config
// pallet would write is larger than any it reads from a base. A {{NAME}}
// used in many values multiplies the recipe's size (100 labels of ten
// {{X}} and a 100 KB --arg make 100 MB), so the count is kept value by
// value, each at most image.MaxConfigValue (Expand), and the work stops
// there.
type configBudget struct {
	r    *Recipe
	used int
}

func (b *configBudget) expand(path, s string, v Vars) (string, error) {
	out, err := b.r.Expand(path, s, v)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(out, 0) >= 0 {
		// No argument, variable or path handed to a process can hold
		// one: the container would fail to start.
		return "", b.r.Errorf(path, "%q holds a NUL byte, which no command, variable or path of a container can", out)
	}
	b.used += len(out)
	if b.used > image.DefaultMaxManifestSize {
		return "", b.r.Errorf(path, "with this value the image config comes to over %d bytes (4 MiB) once expanded; pallet writes no config larger than it reads from a base", image.DefaultMaxManifestSize)
	}
	return out, nil
}

// list is ExpandList within the budget.
func (b *configBudget) list(path string, l []string, v Vars) ([]string, error) {
	return expandEach(path, l, func(at, s string) (string, error) { return b.expand(at, s, v) })
}

// checkConfig checks image name's config sections where they are
// written: a section for some platforms must name one of the image's, as
// a misspelt or stale one would silently configure nothing.
func (r *Recipe) checkConfig(name, at string, im *Image) error {
	sections := []configSection{{at + ".config", &im.Config}}
	for _, sel := range slices.Sorted(maps.Keys(im.Config.For)) {
		sat := at + ".config.for." + sel
		c := im.Config.For[sel]
		if err := platform.ParseSelector(sel); err != nil || sel == "" {
			if err == nil {
				err = fmt.Errorf("an empty OS or platform")
			}
			return r.Errorf(sat, "image %s: config.for: %v", name, err)
		}
		if !r.namesPlatformOf(sel, im) {
			return r.Errorf(sat, "image %s: config.for.%s names none of the image's platforms (%s)%s", name, sel, strings.Join(im.Platforms, ", "), meantPlatformOf(sel, im))
		}
		if c == nil {
			return r.Errorf(sat, "image %s: config.for.%s is empty; give its settings or remove it", name, sel)
		}
		if len(c.For) > 0 {
			return r.Errorf(sat+".for", "image %s: config.for.%s: a section for some platforms has no sections of its own", name, sel)
		}
		sections = append(sections, configSection{sat, c})
	}
	for _, s := range sections {
		for i, e := range s.c.Env {
			if !strings.Contains(e, "=") {
				return r.Errorf(fmt.Sprintf("%s.env.%d", s.at, i), "image %s: env entry %q is not K=V", name, e)
			}
		}
		for i, p := range s.c.ExposedPorts {
			if err := checkPort(p); err != nil {
				return r.Errorf(fmt.Sprintf("%s.ports.%d", s.at, i), "image %s: %v", name, err)
			}
		}
	}
	return nil
}

// namesPlatformOf reports whether selector sel names one of the image's
// platforms as written (an expanded one may name any).
func (r *Recipe) namesPlatformOf(sel string, im *Image) bool {
	for _, ps := range im.Platforms {
		if strings.Contains(ps, "{{") {
			return true
		}
		p, err := platform.Parse(ps)
		if err != nil {
			return true // reported where the platform is checked
		}
		if _, ok := p.Selects(sel); ok {
			return true
		}
	}
	return false
}

// meantPlatformOf is the "did you mean" for a selector that names none of
// the image's platforms, when it is a slip for one of them or their OS
// (linux/arm for linux/arm64).
func meantPlatformOf(sel string, im *Image) string {
	var names []string
	for _, ps := range im.Platforms {
		if p, err := platform.Parse(ps); err == nil {
			names = append(names, p.String(), p.OS)
		}
	}
	if m := platform.Nearest(sel, names); m != "" {
		return " (did you mean " + m + "?)"
	}
	return ""
}
