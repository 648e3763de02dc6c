package globindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// brute is what an Index answers, found by trying every prefix.
type brute map[string][]int

func (b brute) each(name string) [][]int {
	var out [][]int
	for l := 0; l <= len(name); l++ {
		if ids, ok := b[name[:l]]; ok {
			out = append(out, ids)
		}
	}
	return out
}

// crowded is Crowded, trying every count of patterns and every prefix.
func (b brute) crowded(limit, end int) (int, string, bool) {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for k := 1; k <= end; k++ {
		for _, p := range keys {
			count := 0
			for q, ids := range b {
				if strings.HasPrefix(p, q) {
					for _, i := range ids {
						if i < k {
							count++
						}
					}
				}
			}
			if count > limit {
				return k - 1, p, true
			}
		}
	}
	return 0, "", false
}

// Random sets of prefixes over a small alphabet, so that they begin one
// another, are answered as trying every prefix answers: runes, and the
// bytes that begin them alone, 0xff and NUL among the pieces, as names
// and patterns hold them, so that a prefix may end inside a rune.
func TestIndexAsEveryPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "b", "/", "é", "\xc3", "\xff", "\x00", "日", "\xe6\x97"}
	word := func(max int) string {
		var b strings.Builder
		for range r.IntN(max + 1) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for round := range 1000 {
		var bld Builder
		want := brute{}
		n := r.IntN(30)
		for i := range n {
			p := word(5)
			bld.Add(p, i)
			want[p] = append(want[p], i)
		}
		x := bld.Index()
		if x.Len() != n {
			t.Fatalf("round %d: Len %d, want %d", round, x.Len(), n)
		}
		for range 50 {
			name := word(8)
			var got [][]int
			x.Each(name, func(ids []int) bool { got = append(got, ids); return true })
			if w := want.each(name); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Fatalf("round %d: %q begins %v, want %v (prefixes %v)", round, name, got, w, want)
			}
		}
		limit := r.IntN(6)
		i, p, ok := x.Crowded(limit)
		wi, wp, wok := want.crowded(limit, n)
		if i != wi || p != wp || ok != wok {
			t.Fatalf("round %d: Crowded(%d) = %d %q %v, want %d %q %v (prefixes %v)", round, limit, i, p, ok, wi, wp, wok, want)
		}
	}
}

// Yield returning false stops the walk.
func TestIndexEachStops(t *testing.T) {
	var b Builder
	b.Add("", 0)
	b.Add("a", 1)
	calls := 0
	b.Index().Each("ab", func([]int) bool { calls++; return false })
	if calls != 1 {
		t.Errorf("%d calls after false", calls)
	}
}

// A name is walked once, a node at most for each of its bytes, however
// many lengths the prefixes have: looked up at each length, 1,000
// lengths cost every name 1,000 lookups, 2.4 s over 100,000 names.
func TestIndexWalksTheNameOnly(t *testing.T) {
	var b Builder
	for i := range 1000 {
		b.Add(strings.Repeat("a", i)+"b", i)
		b.Add(fmt.Sprintf("bin/f%d", i), 1000+i)
	}
	x := b.Index()
	for _, name := range []string{"usr/bin/tool", "bin/f999/x", "aaab", strings.Repeat("a", 40) + "/x", "zzz"} {
		hits := 0
		steps := x.walk(name, func([]int) bool { hits++; return true })
		if steps > len(name)+1 {
			t.Errorf("%q: %d nodes visited (%d hits), more than its %d bytes and the root", name, steps, hits, len(name))
		}
	}
	hits := 0
	x.Each("aaab", func(ids []int) bool { hits += len(ids); return true })
	if hits != 1 {
		t.Errorf("aaab begins %d prefixes, want 1", hits)
	}
}
