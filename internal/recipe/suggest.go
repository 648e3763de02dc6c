package recipe

import (
	"reflect"
	"strings"
	"sync"

	"github.com/pallet-dev/pallet/internal/suggest"
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
	if best := suggest.Nearest(field, recipeFields()[typ], limit); best != field {
		return best
	}
	return ""
}
