// Package globindex files patterns by their literal prefix, the text a
// name they match must begin with (what a pattern holds before its first
// wildcard), so that a name is tried only against the patterns whose
// prefix it begins with. Both include filters of archives
// (internal/archive) and ignore files and --exclude patterns
// (internal/dockerfile) file their patterns here; each says what a
// pattern's literal prefix is, as their wildcards differ.
//
// The prefixes are held in a trie whose edges are runs of text, so that
// finding those a name begins with walks the name once, at most one node
// a byte: looking each length of prefix up in a map cost a name one
// lookup per distinct length, and 1,000 distinct lengths over 100,000
// names took 2.4 s.
package globindex

import (
	"slices"
	"sort"
)

// Builder collects patterns, by index, under their prefixes.
type Builder struct {
	filed map[string][]int
}

// Add files pattern i under prefix. Indexes are added in ascending order.
func (b *Builder) Add(prefix string, i int) {
	if b.filed == nil {
		b.filed = map[string][]int{}
	}
	b.filed[prefix] = append(b.filed[prefix], i)
}

// Index makes the index of what was added.
func (b *Builder) Index() *Index {
	keys := make([]string, 0, len(b.filed))
	for k := range b.filed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	x := &Index{nodes: []node{{}}}
	for _, ids := range b.filed {
		x.len += len(ids)
		if last := ids[len(ids)-1]; last >= x.end {
			x.end = last + 1
		}
	}
	x.build(0, keys, b.filed)
	return x
}

// Index is patterns filed by their literal prefix.
type Index struct {
	// nodes[0] is the root, the empty prefix; a node's children come
	// after it.
	nodes []node
	len   int // how many patterns are filed
	end   int // one past the largest index filed
}

type node struct {
	prefix string // the whole prefix, from the root
	ids    []int  // the patterns filed under prefix, ascending
	// kids are the children, by the byte after prefix their prefixes
	// hold (first), ascending.
	kids  []int
	first []byte
}

// build files keys, sorted, each beginning with nodes[n].prefix, under
// node n. A child's prefix is the longest that all of the keys with the
// same next byte begin with, so every node but the root holds patterns
// or has two children at least: the trie has fewer nodes than keys
// twice over.
func (x *Index) build(n int, keys []string, filed map[string][]int) {
	d := len(x.nodes[n].prefix)
	if len(keys) > 0 && len(keys[0]) == d {
		x.nodes[n].ids = filed[keys[0]]
		keys = keys[1:]
	}
	for len(keys) > 0 {
		c := keys[0][d]
		j := sort.Search(len(keys), func(j int) bool { return keys[j][d] > c })
		group := keys[:j]
		keys = keys[j:]
		first, last := group[0], group[len(group)-1]
		l := d + 1
		for l < len(first) && l < len(last) && first[l] == last[l] {
			l++
		}
		kid := len(x.nodes)
		x.nodes = append(x.nodes, node{prefix: first[:l]})
		x.nodes[n].kids = append(x.nodes[n].kids, kid)
		x.nodes[n].first = append(x.nodes[n].first, c)
		x.build(kid, group, filed)
	}
}

// Len is how many patterns are filed.
func (x *Index) Len() int { return x.len }

// Each calls yield with the indexes of the patterns filed under each
// prefix name begins with, shortest prefix first, until yield returns
// false.
func (x *Index) Each(name string, yield func(ids []int) bool) {
	x.walk(name, yield)
}

// walk is Each, returning the nodes it visited, which tests count.
func (x *Index) walk(name string, yield func(ids []int) bool) int {
	steps := 0
	for n := 0; ; {
		steps++
		nd := &x.nodes[n]
		if len(nd.ids) > 0 && !yield(nd.ids) {
			return steps
		}
		d := len(nd.prefix)
		if d == len(name) {
			return steps
		}
		k, ok := slices.BinarySearch(nd.first, name[d])
		if !ok {
			return steps
		}
		n = nd.kids[k]
		if p := x.nodes[n].prefix; len(name) < len(p) || name[d:len(p)] != p[d:] {
			return steps
		}
	}
}

// Crowded says whether more than limit patterns could be tried on one
// name: those filed under the prefixes one name begins with. If so, it
// returns the index of the pattern that makes one too many, the first
// in their order at fault, and the prefix of the names it crowds; with
// several, the least in sorted order.
func (x *Index) Crowded(limit int) (i int, prefix string, crowded bool) {
	if x.len <= limit {
		return 0, "", false
	}
	// Past the bound among the patterns before k or not, as k grows,
	// once past it stays: the least k past it ends with the pattern to
	// name.
	k := sort.Search(x.end+1, func(k int) bool {
		_, past := x.pastBound(limit, k)
		return past
	})
	if k > x.end {
		return 0, "", false
	}
	prefix, _ = x.pastBound(limit, k)
	return k - 1, prefix, true
}

// pastBound returns the prefix of the names that more than limit of the
// patterns before k would be tried on, if there is one: the first in
// sorted order.
func (x *Index) pastBound(limit, k int) (string, bool) {
	type visit struct{ n, above int }
	stack := []visit{{0, 0}}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := &x.nodes[v.n]
		count, _ := slices.BinarySearch(nd.ids, k)
		count += v.above
		if count > limit {
			return nd.prefix, true
		}
		// Pushed last to first, so taken first to last: sorted order.
		for j := len(nd.kids) - 1; j >= 0; j-- {
			stack = append(stack, visit{nd.kids[j], count})
		}
	}
	return "", false
}
