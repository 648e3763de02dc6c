package lock

import (
	"fmt"
	"strings"
	"testing"
)

// A tag that names a tree or a blob, directly or through an annotated
// tag, is no commit: ls-remote does not say so, and lock pinned it as
// the commit, for the build to fail at its checkout. Lock refuses it at
// the tag's line, naming what it is, and writes nothing.
func TestTagOfNoCommitRefused(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		tag        func(w *world)
	}{
		{"tree", "tree", func(w *world) { w.repo.run("tag", "-f", "v2.0", w.commit+"^{tree}") }},
		{"annotated tree", "tree", func(w *world) { w.repo.run("tag", "-f", "-a", "-m", "a tree", "v2.0", w.commit+"^{tree}") }},
		{"blob", "blob", func(w *world) {
			blob := w.repo.run("hash-object", "-w", "--stdin")
			w.repo.run("tag", "-f", "v2.0", blob)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.tag(w)
			// Both artifacts tag the repository so: either is refused
			// first, at its own tag's line.
			lineOf := func(s string) int { return strings.Count(w.src[:strings.Index(w.src, s)], "\n") + 1 }
			var want []string
			for artifact, line := range map[string]int{"tool": lineOf("tag: v{{version}}"), "flowy": lineOf("tag: v2.0}")} {
				want = append(want, fmt.Sprintf("%s:%d: artifact %s: tag v2.0 of %s names a %s (", w.file, line, artifact, w.repo.url(), tc.kind))
			}
			for _, opt := range []Options{{}, {Check: true}, {Update: true}} {
				_, err := w.lock(t, opt)
				if err == nil || !strings.Contains(err.Error(), "not a commit") ||
					!strings.HasPrefix(err.Error(), want[0]) && !strings.HasPrefix(err.Error(), want[1]) {
					t.Errorf("lock %+v of a tag naming a %s: %v; want one of %q", opt, tc.kind, err, want)
				}
				if got := w.read(t); got != w.src {
					t.Errorf("lock %+v wrote the recipe:\n%s", opt, got)
				}
			}
		})
	}
}
