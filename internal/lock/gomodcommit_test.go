package lock

import (
	"errors"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/recipe"
)

// originCommit is the commit the test's module proxy says v1.0.0 was
// made from, as proxy.golang.org's .info Origin does.
const originCommit = "dc2b4130b39fa584ad5ef33384850522e08acf53"

// serveModuleWithOrigin serves the module as serveModuleProxy does, its
// .info naming the commit it was made from.
func serveModuleWithOrigin(t *testing.T) string {
	zip, sum := moduleZip(t, helloFiles)
	s := serveModuleProxy(t, zip)
	s.set("/"+modPath+"/@v/v1.0.0.info", []byte(`{"Version":"v1.0.0","Time":"2024-01-02T03:04:05Z","Origin":{"VCS":"git","URL":"https://example.com/hello","Hash":"`+originCommit+`","Ref":"refs/tags/v1.0.0"}}`))
	return sum
}

// withCommitFlags is gomodRecipe with ldflags that use {{commit}}, and
// the commit line given.
func withCommitFlags(sumLine, commitLine string) string {
	return strings.Replace(gomodRecipe(sumLine), "      packages: ./cmd/hello\n", commitLine+"      packages: ./cmd/hello\n      ldflags: [\"-X main.commit={{commit}}\"]\n", 1)
}

// A gomod section whose {{commit}} has no commit gets the one the module
// proxy names for the version, written after the sum: lock fills the pin
// rather than asking for it by hand.
func TestLockGomodCommitFromOrigin(t *testing.T) {
	sum := serveModuleWithOrigin(t)
	w := writeRecipe(t, withCommitFlags("", ""))

	rep, err := w.lock(t, Options{Check: true})
	var pe *PinsError
	if !errors.As(err, &pe) || len(pe.Unfillable) != 0 || len(rep.Findings) != 2 {
		t.Fatalf("check: %v, %+v", err, rep)
	}
	if !strings.Contains(err.Error(), "no commit of "+modPath+"@v1.0.0 (the module proxy gives "+originCommit+")") {
		t.Errorf("check: %v, want the commit as a missing pin", err)
	}

	if rep, err = w.lock(t, Options{}); err != nil || !rep.Written {
		t.Fatalf("lock: %v, %+v", err, rep)
	}
	if got, want := w.read(t), withCommitFlags("      sum: "+sum+"\n", "      commit: "+originCommit+"\n"); got != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", got, want)
	}
	if _, err := recipe.Parse(w.file, []byte(w.read(t))); err != nil {
		t.Errorf("the locked recipe does not parse for a build: %v", err)
	}
	if rep, err = w.lock(t, Options{Check: true}); err != nil || rep.Current != 2 {
		t.Errorf("check after lock: %v, %+v", err, rep)
	}
}

// A section that does not use {{commit}} gets no commit: the pin would
// be one nothing asked for.
func TestLockGomodCommitOnlyWhereUsed(t *testing.T) {
	sum := serveModuleWithOrigin(t)
	w := writeRecipe(t, gomodRecipe(""))
	if rep, err := w.lock(t, Options{}); err != nil || !rep.Written {
		t.Fatalf("lock: %v, %+v", err, rep)
	}
	if got, want := w.read(t), gomodRecipe("      sum: "+sum+"\n"); got != want {
		t.Errorf("locked recipe:\n%s\nwant:\n%s", got, want)
	}
}

// A section's commit the module proxy disagrees with is stale, reported
// at the commit: line: nothing is written unless --update re-pins it.
func TestLockGomodCommitStale(t *testing.T) {
	sum := serveModuleWithOrigin(t)
	wrong := strings.Repeat("0123456789", 4)
	src := withCommitFlags("      sum: "+sum+"\n", "      commit: "+wrong+"   # by hand\n")
	w := writeRecipe(t, src)
	for _, opt := range []Options{{}, {Check: true}} {
		rep, err := w.lock(t, opt)
		var pe *PinsError
		if !errors.As(err, &pe) || len(rep.Findings) != 1 || !rep.Findings[0].Stale() || rep.Written {
			t.Fatalf("lock %+v: %v, %+v", opt, err, rep)
		}
		if f := rep.Findings[0]; f.Pos.Line != 8 || f.New != originCommit {
			t.Errorf("lock %+v: finding %+v, want line 8 (commit:) giving %s", opt, f, originCommit)
		}
		if w.read(t) != src {
			t.Errorf("lock %+v wrote the recipe:\n%s", opt, w.read(t))
		}
	}
	if rep, err := w.lock(t, Options{Update: true}); err != nil || !rep.Written {
		t.Fatalf("lock --update: %v, %+v", err, rep)
	}
	if got, want := w.read(t), strings.Replace(src, wrong, originCommit, 1); got != want {
		t.Errorf("re-pinned recipe:\n%s\nwant:\n%s", got, want)
	}
}
