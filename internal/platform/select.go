package platform

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A selector names a set of platforms: "" (every platform), an OS
// ("windows"), or a platform ("linux/arm64", "linux/arm/v7"). Recipes key
// bases, digests and compilers by selectors and limit placements with
// them; these functions are the one place that says what matches.

// ParseSelector checks a selector: an OS pallet builds for, or a platform.
func ParseSelector(s string) error {
	if s == "" {
		return nil
	}
	if !strings.Contains(s, "/") {
		for _, k := range Known() {
			if strings.HasPrefix(k, s+"/") {
				return nil
			}
		}
		meant := Nearest(s, []string{"linux", "windows"})
		if strings.EqualFold(s, "win") {
			meant = "windows"
		}
		if meant != "" {
			meant = "did you mean " + meant + "? "
		}
		return fmt.Errorf("unknown OS %q (%swant linux, windows or a platform such as linux/arm64)", s, meant)
	}
	_, err := Parse(s)
	return err
}

// Selects reports whether selector sel names p, and how specifically:
// 0 for "", 1 for an OS, 2 for a platform, 3 for an x86-64 level.
// "linux/amd64" names linux/amd64/v2, v3 and v4 too: a download pinned,
// a base or a C compiler chosen for amd64 serves every level, and an
// image built for one places what an amd64 image does, unless the recipe
// keys that level itself.
func (p Platform) Selects(sel string) (specificity int, ok bool) {
	switch {
	case sel == "":
		return 0, true
	case !strings.Contains(sel, "/"):
		return 1, sel == p.OS
	}
	q, err := Parse(sel)
	switch {
	case err != nil:
		return 2, false
	case q.Arch == "amd64" && q.Variant != "":
		return 3, q == p
	}
	return 2, q == p || q.Arch == "amd64" && q.OS == p.OS && q.Arch == p.Arch
}

// SelectedBy reports whether any of sels names p; an empty list names
// every platform.
func (p Platform) SelectedBy(sels []string) bool {
	if len(sels) == 0 {
		return true
	}
	for _, s := range sels {
		if _, ok := p.Selects(s); ok {
			return true
		}
	}
	return false
}

// Pick returns the value of the most specific selector in m that names p.
func Pick[V any](m map[string]V, p Platform) (V, bool) {
	var (
		best  V
		found bool
		rank  = -1
	)
	for sel, v := range m {
		if r, ok := p.Selects(sel); ok && r > rank {
			best, found, rank = v, true, r
		}
	}
	return best, found
}

// Describes reports whether an index entry's platform d is one p's
// images may be built on (Rank).
func (p Platform) Describes(d v1.Platform) bool {
	_, ok := p.Rank(d)
	return ok
}

// Rank reports whether an index entry's platform d is one p's images may
// be built on, and how close it is: of the entries that are, a base takes
// the highest ranked. It is go-containerregistry's Satisfies with two
// allowances. An entry that names no variant is taken for p's (registries
// drop "v8" on arm64 and some drop "v7" on arm, the only variant pallet
// builds there). And x86-64 levels nest, as containerd's matcher has
// them: a linux/amd64/v3 image may be built on an amd64/v2, v1 or plain
// amd64 base (a v3 machine runs them all), closest level first, while a
// plain amd64 one may not be built on a v2 base (a v1 machine would not
// run it). The rank of an amd64 entry is its level.
func (p Platform) Rank(d v1.Platform) (rank int, ok bool) {
	if p.Arch == "amd64" && d.Architecture == "amd64" {
		have, known := amd64Level(d.Variant)
		want, _ := amd64Level(p.Variant)
		d.Variant = ""
		return have, known && have <= want && d.Satisfies(v1.Platform{OS: p.OS, Architecture: p.Arch})
	}
	want := p.V1()
	if d.Variant == "" {
		want.Variant = ""
	}
	return 0, d.Satisfies(want)
}

// Closest is, of index entries ds, those whose platform is one p's
// images may be built on and ranked highest (Rank), in their order: the
// image a machine of p takes of an index is the first of them (an
// amd64/v3 image over a plain amd64 one beside it). Entries that name
// no platform are left out.
func (p Platform) Closest(ds []v1.Descriptor) []v1.Descriptor {
	var out []v1.Descriptor
	best := 0
	for _, d := range ds {
		if d.Platform == nil {
			continue
		}
		r, ok := p.Rank(*d.Platform)
		switch {
		case !ok || len(out) > 0 && r < best:
		case len(out) > 0 && r == best:
			out = append(out, d)
		default:
			out, best = []v1.Descriptor{d}, r
		}
	}
	return out
}

// NeedsMore says, of a build environment env for p (K=V, the last
// setting winning, as for the go command), the x86-64 level it sets with
// GOAMD64 when that is above p's: a binary built so stops at start on a
// machine p names ("This program can only be run on ..."); "" otherwise,
// and for other architectures, where Go ignores GOAMD64.
func (p Platform) NeedsMore(env []string) string {
	if p.Arch != "amd64" {
		return ""
	}
	set := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOAMD64="); ok {
			set = v
		}
	}
	have, _ := amd64Level(p.Variant)
	if want, ok := amd64Level(set); ok && want > have {
		return set
	}
	return ""
}

// amd64Level is the x86-64 microarchitecture level an amd64 variant
// names: 1 for none.
func amd64Level(variant string) (int, bool) {
	switch variant {
	case "", "v1":
		return 1, true
	case "v2", "v3", "v4":
		return int(variant[1] - '0'), true
	}
	return 0, false
}
