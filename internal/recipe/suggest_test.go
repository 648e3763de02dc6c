package recipe

import "testing"

// A field a recipe misspells is named with the one it most likely meant:
// within two edits, or another case; none when nothing is near or two
// are as near.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct{ typ, field, want string }{
		{"recipe.GoBuild", "ldflag", "ldflags"},
		{"recipe.GoBuild", "LDFlags", "ldflags"},
		{"recipe.GoBuild", "packges", "packages"},
		{"recipe.Image", "platfroms", "platforms"},
		{"recipe.Image", "plat", ""},
		{"recipe.Image", "colour", ""},
		{"recipe.Recipe", "artifact", "artifacts"},
		{"recipe.Artifact", "mdoe", ""}, // no mode field here
		{"recipe.Artifact", "modse", "modes"},
		{"recipe.Artifact", "git", ""},
		{"recipe.Nope", "ldflag", ""},
	} {
		if got := didYouMean(tc.typ, tc.field); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.typ, tc.field, got, tc.want)
		}
	}
}
