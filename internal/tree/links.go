package tree

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// maxLinkHops bounds the links followed in one path, as Linux does
// (ELOOP after 40).
const maxLinkHops = 40

// Links are the symlinks to directories an image already holds below the
// layers being written (a base's: /bin → usr/bin on a merged-/usr
// distribution), by clean path without the leading slash, each to its
// target as written.
//
// A layer entry under such a link must be written at the link's target:
// an importer creates a directory entry where a link is by replacing the
// link with an empty directory, so a layer holding "bin/app" on a base
// whose /bin is a link would leave the container a /bin with app alone,
// and no shell. Docker's COPY follows the base's links in the same way.
type Links map[string]string

// Resolve returns p (clean, relative to the root) with every link along it
// followed, the last element too, without leaving the root: an absolute
// target starts again at the root, and ".." stops there, as it does in a
// chroot.
func (l Links) Resolve(p string) (string, error) {
	var done []string
	todo := strings.Split(p, "/")
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		next := strings.Join(append(done, c), "/")
		target, ok := l[next]
		if !ok {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("/%s: more than %d links to follow (a loop?)", p, maxLinkHops)
		}
		if strings.HasPrefix(target, "/") {
			done = done[:0]
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return strings.Join(done, "/"), nil
}

// Touched lists the links of l that t places something at or under, in
// order.
func (l Links) Touched(t *Tree) []string {
	t.orderMu.Lock()
	defer t.orderMu.Unlock()
	t.index()
	var out []string
	for p := range l {
		if _, ok := t.entries[p]; ok || t.parents[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Through returns t with every entry under one of links moved to where
// the link leads. A directory at the link itself goes to the target too; a
// file or link there replaces the link, as written. t itself is returned
// when it places nothing through links, which is the usual case and costs
// a lookup per link.
func (t *Tree) Through(links Links) (*Tree, error) {
	touched := links.Touched(t)
	if len(touched) == 0 {
		return t, nil
	}
	t.orderMu.Lock()
	if t.order == nil {
		t.sort()
	}
	order := t.order
	explicit := t.entries
	t.orderMu.Unlock()
	out := New()
	dirs := map[string]string{}
	// moved names where each entry of out was in t, for errors.
	moved := map[string]string{}
	resolve := func(p string) (string, error) {
		if r, ok := dirs[p]; ok {
			return r, nil
		}
		r, err := links.Resolve(p)
		if err == nil {
			dirs[p] = r
		}
		return r, err
	}
	for _, e := range order {
		if _, ok := explicit[e.Path]; !ok {
			continue // a parent Entries synthesizes; out makes its own
		}
		ne := *e
		var err error
		if e.Kind == Dir {
			ne.Path, err = resolve(e.Path)
		} else if dir, name := path.Split(e.Path); dir != "" {
			dir, err = resolve(strings.TrimSuffix(dir, "/"))
			ne.Path = path.Join(dir, name)
		}
		if err != nil {
			return nil, err
		}
		if ne.Path == "." {
			continue // a directory that is the root, through a link
		}
		if err := out.Add(ne); err != nil {
			if old, ok := moved[ne.Path]; ok && old != e.Path {
				return nil, fmt.Errorf("/%s and /%s are one path in the image, /%s, through its links: %w", old, e.Path, ne.Path, err)
			}
			if ne.Path != e.Path {
				return nil, fmt.Errorf("/%s, which the image's links make /%s: %w", e.Path, ne.Path, err)
			}
			return nil, err
		}
		moved[ne.Path] = e.Path
	}
	return out, nil
}
