// Package suggest names what a mistyped word most likely meant, for the
// "did you mean" of an error: a recipe field, a base, a file in a
// checkout.
package suggest

import "strings"

// Distance is the optimal string alignment distance of a and b, by
// bytes: Levenshtein's, with two neighbours swapped as one edit (the
// commonest slip of a typist, "scarcth").
func Distance(a, b string) int {
	// Three rows: the swap looks two back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Nearest is the one of names that word is most likely a slip for: at
// most within edits from it (Distance, case aside), and nearer than any
// other name; "" when none is, or two are as near.
func Nearest(word string, names []string, within int) string {
	best, bestD, tie := "", within+1, false
	for _, n := range names {
		switch d := Distance(strings.ToLower(word), strings.ToLower(n)); {
		case d < bestD:
			best, bestD, tie = n, d, false
		case d == bestD && n != best:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}
