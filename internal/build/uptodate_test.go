package build

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
)

// The up-to-date key holds the plan as JSON, which leaves out unexported
// fields: a field added to the plan, or to a kind the check accepts,
// that JSON does not write would let a changed recipe be taken as
// unchanged. Every field must be written.
func TestUpToDateKeySeesEveryField(t *testing.T) {
	// Fields that change nothing a build writes, only what it refuses.
	outsideKey := map[string]bool{
		"Plan.Ignored": true, // which outputs may lie in a Dockerfile's context
	}
	marshaler := reflect.TypeFor[json.Marshaler]()
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type, path string)
	walk = func(ty reflect.Type, path string) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		if ty.Implements(marshaler) || reflect.PointerTo(ty).Implements(marshaler) {
			return
		}
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(ty.Elem(), path+"[]")
		case reflect.Map:
			walk(ty.Key(), path+"{key}")
			walk(ty.Elem(), path+"{}")
		case reflect.Interface:
			if ty != reflect.TypeFor[artifact.Kind]() {
				t.Errorf("%s: an interface (%s) the key cannot see into", path, ty)
			}
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			t.Errorf("%s: %s cannot be written as JSON", path, ty)
		case reflect.Struct:
			for i := range ty.NumField() {
				f := ty.Field(i)
				if outsideKey[path+"."+f.Name] {
					continue
				}
				if !f.IsExported() {
					t.Errorf("%s.%s: unexported, so left out of the up-to-date key", path, f.Name)
					continue
				}
				if f.Tag.Get("json") == "-" {
					t.Errorf("%s.%s: tagged json:\"-\", so left out of the up-to-date key", path, f.Name)
				}
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeFor[plan.Plan](), "Plan")
	// The kinds checkUpToDate accepts.
	walk(reflect.TypeFor[artifact.Local](), "Local")
	walk(reflect.TypeFor[artifact.URL](), "URL")
}
