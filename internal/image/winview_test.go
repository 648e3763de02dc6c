package image

import (
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A Windows base's view is what its layers hold under Files/, without
// the prefix; Hives/ and the rest are left out, and foreign layers are
// counted, not read.
func TestWindowsBaseView(t *testing.T) {
	img := imageOf(t, tarLayer(t, "Files/", "Files/Windows/", "Files/Windows/System32/", "Files/Windows/System32/config/SAM",
		"Hives/", "Hives/DefaultUser_Delta", "UtilityVM/Files/x", "Files/License/NOTICE"))
	v, err := WindowsBaseView(img, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	dirs := slices.Sorted(func(yield func(string) bool) {
		for p := range v.Dirs {
			if !yield(p) {
				return
			}
		}
	})
	files := slices.Sorted(func(yield func(string) bool) {
		for p := range v.Files {
			if !yield(p) {
				return
			}
		}
	})
	if want := []string{"License", "Windows", "Windows/System32", "Windows/System32/config"}; !reflect.DeepEqual(dirs, want) {
		t.Errorf("dirs %q, want %q", dirs, want)
	}
	if want := []string{"License/NOTICE", "Windows/System32/config/SAM"}; !reflect.DeepEqual(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if n := ForeignLayers(img); n != 0 {
		t.Errorf("foreign layers %d", n)
	}

	foreign := static.NewLayer([]byte("foreign"), types.DockerForeignLayer)
	img, err = mutate.Append(img, mutate.Addendum{Layer: foreign, MediaType: types.DockerForeignLayer, URLs: []string{"https://example.invalid/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = WindowsBaseView(img, 1<<20, 0); err != nil || ForeignLayers(img) != 1 {
		t.Errorf("with a foreign layer: %d foreign layers, %v", ForeignLayers(img), err)
	}
}
