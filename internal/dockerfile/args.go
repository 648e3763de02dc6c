package dockerfile

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
)

// vars is an ordered set of variables, the environment BuildKit's lexer
// expands words with. They are set by image.SetEnv, as the config's env
// is, so that in a Windows stage, where PATH and Path are one variable, a
// word expands with the very variable the image will hold.
type vars struct {
	env     []string // NAME=VALUE
	windows bool
}

func newVars(windows bool) *vars { return &vars{windows: windows} }

// Get implements shell.EnvGetter.
func (v *vars) Get(k string) (string, bool) {
	return image.LookupEnv(v.env, k, v.windows)
}

// Keys implements shell.EnvGetter.
func (v *vars) Keys() []string {
	keys := make([]string, len(v.env))
	for i, kv := range v.env {
		keys[i], _, _ = strings.Cut(kv, "=")
	}
	return keys
}

func (v *vars) set(k, val string) { v.env = image.SetEnv(v.env, k+"="+val, v.windows) }

func (v *vars) clone() *vars { return &vars{env: slices.Clone(v.env), windows: v.windows} }

// automaticArgs are the ARGs BuildKit defines for every build: usable in
// FROM lines, and in a stage once declared there with ARG NAME.
var automaticArgs = []string{
	"BUILDPLATFORM", "BUILDOS", "BUILDOSVERSION", "BUILDARCH", "BUILDVARIANT",
	"TARGETPLATFORM", "TARGETOS", "TARGETOSVERSION", "TARGETARCH", "TARGETVARIANT",
	"TARGETSTAGE",
}

// epochArg sets the build's timestamps, as with buildx; it needs no ARG.
const epochArg = "SOURCE_DATE_EPOCH"

// checkOverrides refuses an override of an ARG the Dockerfile never
// declares: it would change nothing, which is always a mistake (a typo,
// or a build script written for another Dockerfile).
func (d *Dockerfile) checkOverrides(args map[string]string) error {
	if err := checkArgSizes(args); err != nil {
		return err
	}
	var unknown []string
	for k := range args {
		if !d.declared[k] && !slices.Contains(automaticArgs, k) && k != epochArg {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	have := slices.Sorted(maps.Keys(d.declared))
	decl := "none"
	if len(have) > 0 {
		decl = strings.Join(have, ", ")
	}
	return fmt.Errorf("--arg %s: %s declares no ARG %s (declared: %s)", strings.Join(unknown, ", "), d.File, strings.Join(unknown, ", "), decl)
}

// globals are the variables FROM lines see: the automatic platform args,
// then the ARGs before the first FROM, each taking its override or its
// default expanded with the ones before it.
func (e *evaluator) globals() (*vars, error) {
	// FROM lines belong to no stage, and BuildKit keeps the global ARGs
	// apart by exact name: a stage's ARG v does not bring in a global V.
	g := newVars(false)
	t, b := e.target, e.build
	auto := map[string]string{
		"BUILDPLATFORM": b.String(), "BUILDOS": b.OS, "BUILDOSVERSION": "", "BUILDARCH": b.Arch, "BUILDVARIANT": b.Variant,
		"TARGETPLATFORM": t.String(), "TARGETOS": t.OS, "TARGETOSVERSION": "", "TARGETARCH": t.Arch, "TARGETVARIANT": t.Variant,
		"TARGETSTAGE": e.targetName,
	}
	for _, k := range automaticArgs {
		v := auto[k]
		if ov, ok := e.opt.Args[k]; ok {
			v = ov
		}
		g.set(k, v)
	}
	for _, a := range e.d.meta {
		if ov, ok := e.opt.Args[a.key]; ok {
			g.set(a.key, ov)
			continue
		}
		if a.value == nil {
			continue
		}
		v, err := e.processWord(*a.value, g, true)
		if err != nil {
			return nil, plan.Errorf(a.pos, "ARG %s: %v", a.key, err)
		}
		g.set(a.key, v)
	}
	return g, nil
}

// arg runs an ARG instruction inside a stage, with BuildKit's rules: an
// override, then the default given here, then the global value of the
// same name (which is how a global ARG is brought into a stage); without
// any, the name is declared and expands to the ENV of that name, or to
// nothing where the base's environment is known (else checkUnset has it
// read, or refuses it: the base may set it). A value replaces an ENV of
// the same name for the words that follow, as BuildKit's dispatchArg adds it to the state's environment
// (the image config keeps the ENV): its toEnvMap, where the ENV wins,
// makes only the environment of a RUN, which pallet has none of. In a
// Windows stage, where pallet keeps one variable whatever the case, an
// ARG spelt otherwise than an ENV leaves the ENV's value: BuildKit's state
// keeps the two names apart, and words spelt as the ENV find the ENV's.
func (e *evaluator) arg(s *stageState, c *instructions.ArgCommand) error {
	for _, a := range c.Args {
		s.declared[a.Key] = true
		if s.envOtherCase(a.Key) {
			continue
		}
		if ov, ok := e.opt.Args[a.Key]; ok {
			s.env.set(a.Key, ov)
			continue
		}
		if a.Key == epochArg {
			// buildx gives the environment's SOURCE_DATE_EPOCH as the
			// build arg, which the ARG then takes as a --arg; a caller's
			// Epoch is the image's, so the ARG's too.
			v, _ := epochSetting(e.opt)
			if e.opt.Epoch != nil {
				v = strconv.FormatInt(*e.opt.Epoch, 10)
			}
			if v != "" {
				s.env.set(a.Key, v)
				continue
			}
		}
		if a.Value != nil {
			v, err := e.expand(s, *a.Value)
			if err != nil {
				return err
			}
			s.env.set(a.Key, v)
			continue
		}
		if v, ok := e.global.Get(a.Key); ok {
			s.env.set(a.Key, v)
		}
	}
	return nil
}

// expand expands one word for an instruction of stage s. A variable that
// is not set is empty, as in Docker, except where that is surely a
// mistake: a global ARG used in a stage without being declared there
// (Docker silently expands it to nothing), or a name that may come from
// the base image's environment, an ARG declared without a value
// included, where the base was not read (then the plan stops for
// planReading to read it, where it can).
func (e *evaluator) expand(s *stageState, word string) (string, error) {
	m := e.metered(word, s.env, true)
	res, err := e.lex.ProcessWordWithMatches(word, m)
	if err != nil {
		return "", fmt.Errorf("%q: %w", word, err)
	}
	if err := e.spent(m, word, len(res.Result), true); err != nil {
		return "", err
	}
	if err := e.checkUnset(s, res.Unmatched); err != nil {
		return "", err
	}
	return res.Result, nil
}

// checkUnset refuses the names a word of stage s asked for and found
// unset, where empty is not surely what BuildKit would give (see expand).
func (e *evaluator) checkUnset(s *stageState, unset map[string]struct{}) error {
	for _, name := range slices.Sorted(maps.Keys(unset)) {
		switch {
		case s.isDeclared(name) && !s.envKnown:
			// BuildKit's ARG without a value adds nothing to the state's
			// environment, so the name is the base's ENV of that name
			// where the base sets one.
			return e.needBase(s, fmt.Sprintf("$%s (an ARG with no value)", name), fmt.Errorf("$%s is declared by an ARG with no value, so it is what the environment of the base image %s sets it to, which pallet does not read: give the ARG a value (ARG %s=VALUE, or ARG %s= for empty) or build with --arg %s=VALUE", name, s.base, name, name, name))
		case s.isDeclared(name):
		case e.declaredGlobally(name):
			return fmt.Errorf("$%s is an ARG of the global scope (before the first FROM), which only FROM lines see; declare it in this stage too: ARG %s", name, name)
		case slices.Contains(automaticArgs, name):
			return fmt.Errorf("$%s is set only in FROM lines; declare it in this stage to use it here: ARG %s", name, name)
		case !s.envKnown:
			return e.needBase(s, fmt.Sprintf("$%s (not set by this Dockerfile)", name), fmt.Errorf("$%s is not set by this Dockerfile; it may come from the environment of the base image %s, which pallet does not read: write its value out, or declare it with ARG", name, s.base))
		}
	}
	return nil
}

// isDeclared says a stage ARG stands for name: "ARG foo" with no value
// makes $FOO empty, not unknown, in a Windows stage on an empty base.
func (s *stageState) isDeclared(name string) bool {
	for k := range s.declared {
		if image.SameEnvName(k, name, s.platform.IsWindows()) {
			return true
		}
	}
	return false
}

func (e *evaluator) declaredGlobally(name string) bool {
	for _, a := range e.d.meta {
		if a.key == name {
			return true
		}
	}
	return false
}

// expandPlatform reads a FROM --platform value.
func (e *evaluator) expandPlatform(s *stageDef) (platform.Platform, error) {
	v, err := e.processWord(s.platformRaw, e.global, false)
	if err != nil {
		return platform.Platform{}, plan.Errorf(s.platPos, "FROM --platform=%s: %v", s.platformRaw, err)
	}
	if v == "" {
		return platform.Platform{}, plan.Errorf(s.platPos, "FROM --platform=%s: empty once expanded", s.platformRaw)
	}
	p, err := platform.Parse(v)
	if err != nil {
		return platform.Platform{}, plan.Errorf(s.platPos, "FROM --platform=%s: %v", s.platformRaw, err)
	}
	return p, nil
}

// envOtherCase says a Windows stage's config sets k under another
// spelling (Path for PATH).
func (s *stageState) envOtherCase(k string) bool {
	if !s.platform.IsWindows() {
		return false
	}
	for _, kv := range s.cfg.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name != k && image.SameEnvName(name, k, true) {
			return true
		}
	}
	return false
}
