package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"scratch", "scratch", 0},
		{"scrach", "scratch", 1},  // one left out
		{"scarcth", "scratch", 2}, // two swaps
		{"scrtach", "scratch", 1}, // one swap of neighbours
		{"kitten", "sitting", 3},  // Levenshtein's own example
		{"ca", "abc", 3},          // OSA, not full Damerau (which says 2)
		{"platforms", "platfrom", 2},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}
