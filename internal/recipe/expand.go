package recipe

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/lazyre"
)

// platformVarNames are the variables set per platform (platformVars),
// in the order messages list them.
var platformVarNames = []string{"os", "arch", "variant", "platform", "exe", "multiarch"}

// artifactVarNames are the variables set per artifact (artifactVars).
var artifactVarNames = []string{"version", "commit", "tag"}

// artifactVarMeaning is what each of artifactVarNames stands for, as
// messages say it: a gomod section's commit sets {{commit}} as a git
// source's does.
var artifactVarMeaning = map[string]string{
	"version": "the artifact's version field",
	"commit":  "the commit of the artifact's git source (modes.source.git.commit) or of its gomod section (gomod.commit)",
	"tag":     "the tag of the artifact's git source (modes.source.git.tag)",
}

// reservedArg says why name, a built-in variable, cannot be an arg:
// what pallet sets it to, which an arg of that name would hide.
func reservedArg(name string) string {
	if m, ok := artifactVarMeaning[name]; ok {
		return fmt.Sprintf("arg name %q is reserved: {{%s}} is set per artifact, to %s; give the arg another name", name, name, m)
	}
	return fmt.Sprintf("arg name %q is reserved: {{%s}} is one of the names set per platform ({{%s}}); give the arg another name", name, name, strings.Join(platformVarNames, "}}, {{"))
}

// builtinVars are set per platform or artifact and cannot be declared as
// args.
var builtinVars = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range append(slices.Clone(platformVarNames), artifactVarNames...) {
		m[n] = true
	}
	return m
}()

var varRE = lazyre.New(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// Vars is the set of values {{NAME}} expands to.
type Vars map[string]string

// Vars returns the recipe's args with overrides applied. An override of an
// undeclared arg is an error: a typo on the command line must not build
// silently with the default.
func (r *Recipe) Vars(overrides map[string]string) (Vars, error) {
	v := Vars{}
	for k, val := range r.Args {
		v[k] = val
	}
	var unknown []string
	for k, val := range overrides {
		if _, ok := r.Args[k]; !ok {
			unknown = append(unknown, k)
			continue
		}
		if len(val) > image.MaxConfigValue {
			return nil, fmt.Errorf("arg %s: %d bytes; a value is at most %d (1 MiB), as a value of the image config is", k, len(val), image.MaxConfigValue)
		}
		if strings.Contains(val, "{{") {
			return nil, fmt.Errorf("arg %s=%s: an arg's value is taken as written, and {{...}} in it would not be replaced; give the whole value", k, Quote(val))
		}
		v[k] = val
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		for i, k := range unknown {
			if len(k) > maxQuoted {
				unknown[i] = Quote(k)
			}
		}
		return nil, fmt.Errorf("arg %s: not declared in %s (declared: %s)", strings.Join(unknown, ", "), r.File, namesOf(r.Args))
	}
	return v, nil
}

// With returns a copy of v with extra values (the platform's).
func (v Vars) With(extra map[string]string) Vars {
	out := make(Vars, len(v)+len(extra))
	for k, val := range v {
		out[k] = val
	}
	for k, val := range extra {
		out[k] = val
	}
	return out
}

// Expand replaces {{NAME}} in the value found at path. An unknown name is a
// recipe error at that line.
func (r *Recipe) Expand(path, s string, v Vars) (string, error) {
	// The size is known before anything is written: a value naming a
	// large variable many times is refused without being made.
	size := len(s)
	for _, m := range varRE().FindAllStringSubmatchIndex(s, -1) {
		if val, ok := v[s[m[2]:m[3]]]; ok {
			size += len(val) - (m[1] - m[0])
		}
	}
	if size > image.MaxConfigValue {
		return "", r.Errorf(path, "expands to %d bytes; a value is at most %d (1 MiB) once expanded, as a value of the image config is", size, image.MaxConfigValue)
	}
	if grow := size - len(s); grow > 0 {
		if r.grown += grow; r.grown > MaxGrowth {
			return "", r.Errorf(path, "with this value, {{...}} adds over %d bytes (64 MiB, recipe.MaxGrowth) to the recipe's values in all; use long variables in fewer places", MaxGrowth)
		}
	}
	var missing []string
	out := varRE().ReplaceAllStringFunc(s, func(m string) string {
		name := varRE().FindStringSubmatch(m)[1]
		val, ok := v[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return val
	})
	if len(missing) > 0 {
		if missing[0] == "multiarch" {
			return "", r.Errorf(path, "{{multiarch}} is Debian's multiarch tuple of a Linux platform (aarch64-linux-gnu for linux/arm64), and this platform has none")
		}
		if m := missing[0]; m == "commit" || m == "tag" {
			// Known names, unset here: say what would set them.
			if m == "commit" {
				return "", r.Errorf(path, "%s", noCommit)
			}
			return "", r.Errorf(path, "{{%s}} is the %s of the artifact's git source (modes.source.git.%s), and this artifact has none", m, m, m)
		}
		return "", r.Errorf(path, "unknown variable {{%s}} (args: %s; per platform: %s; per artifact: version, of its version field; commit, of its git source or gomod section; tag, of its git source)", missing[0], namesOf(r.Args), strings.Join(platformVarNames, ", "))
	}
	if strings.Contains(out, "{{") {
		return "", r.Errorf(path, "malformed {{...}} in %q", s)
	}
	return out, nil
}

// noCommit is the error of a {{commit}} with no commit to stand for,
// which CommitGaps looks for.
const noCommit = "{{commit}} is the commit of the artifact's git source (modes.source.git.commit) or the one its gomod section names (gomod.commit), and this artifact has none"

// ExpandList expands each element of l, whose elements are at path.N. A
// nil list stays nil: for image config, nil means "keep the base's value".
func (r *Recipe) ExpandList(path string, l []string, v Vars) ([]string, error) {
	return expandEach(path, l, func(at, s string) (string, error) { return r.Expand(at, s, v) })
}

// expandEach is ExpandList with expand in place of Expand.
func expandEach(path string, l []string, expand func(at, s string) (string, error)) ([]string, error) {
	if l == nil {
		return nil, nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		e, err := expand(fmt.Sprintf("%s.%d", path, i), s)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// namesOf lists a recipe map's names for an error, sorted, or says there
// are none, where an empty list would read as a cut-off message.
func namesOf[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// maxQuoted is how much of a value from the command line an error
// repeats: a value is up to 1 MiB, and the message is read on a terminal.
const maxQuoted = 80

// Quote quotes s for an error message as %q does, cut to its first
// maxQuoted bytes, with its length, when longer.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
}
