package recipe

import (
	"reflect"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/image"
)

// recipeFields are the YAML field names of every struct a recipe decodes
// into, by the Go type name yaml.v3 puts in its "field X not found in
// type T" message: what a misspelt field is compared with.
var recipeFields = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		if _, seen := out[t.String()]; seen {
			return
		}
		var names []string
		out[t.String()] = nil // before the fields: a type may hold itself
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			names = append(names, name)
			walk(f.Type)
		}
		out[t.String()] = names
	}
	walk(reflect.TypeFor[Recipe]())
	return out
})

// didYouMean is the field of type typ (yaml.v3's name for it) that field
// is most likely a misspelling of: one edit away (a letter added, lost,
// changed, or two swapped: ldflag, mdoe), two for a name of more than four
// letters (platfroms), or differing only in case; "" when none, or two
// are as near.
func didYouMean(typ, field string) string {
	limit := 1
	if len(field) > 4 {
		limit = 2
	}
	best, bestD, tie := "", limit+1, false
	for _, name := range recipeFields()[typ] {
		d := editDistance(strings.ToLower(field), strings.ToLower(name))
		switch {
		case d < bestD:
			best, bestD, tie = name, d, false
		case d == bestD:
			tie = true
		}
	}
	if tie || best == field {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b, by
// bytes: Levenshtein's, with two neighbours swapped as one edit.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// nearBuiltinBase is the built-in base that a bare base name (no
// registry, path, tag or digest) is most likely a slip for, or "". Such
// a name is an official image on Docker Hub, so the slip would otherwise
// surface as a failed pull, or offline as a failed DNS lookup, neither
// of which names the built-in meant. No official image holds
// "hostprocess" or is two edits from "scratch".
func nearBuiltinBase(ref string) string {
	if image.IsBuiltin(ref) || strings.ContainsAny(ref, "/:@") {
		return ""
	}
	if strings.Contains(ref, "hostprocess") {
		if strings.HasSuffix(ref, "-v1") {
			return image.HostProcessScratchV1
		}
		return image.HostProcessScratch
	}
	if editDistance(ref, image.Scratch) <= 2 {
		return image.Scratch
	}
	return ""
}
