package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// maxFact bounds a remembered fact: a few identifiers and numbers, or a
// classification of some licence texts. A base's view, which grows with
// the base, is kept under ContentFactUpTo's own bound.
const maxFact = 4 << 20

// ContentFact returns derive(), a fact named fact about the content whose
// sha256 is sum, as kept in the cache, or derives and keeps it. A fact
// about content holds for any file with that content, at any age: the
// memo of facts about files (RememberAt) cannot keep a fact about a file
// written moments ago, which a licence text stored by this very build
// is, so the next build derived it again. The caller checks what it gets
// back as it would any stored value, and derives again if that is not
// one it wrote. With valid, a kept fact valid refuses is said, derived
// again and replaced.
func (c *Cache) ContentFact(fact, sum string, valid func(string) bool, derive func() (string, error)) (string, error) {
	return c.ContentFactUpTo(fact, sum, maxFact, valid, derive)
}

// ContentFactUpTo is ContentFact for a fact of up to max bytes, kept and
// read back within that bound: what derive returns is already in memory
// whole, so the bound is of the disk the fact takes and of what a
// damaged or foreign file can make a build read.
func (c *Cache) ContentFactUpTo(fact, sum string, max int64, valid func(string) bool, derive func() (string, error)) (string, error) {
	if !isSHA256Hex(sum) || !filepath.IsLocal(fact) || filepath.Base(fact) != fact {
		return "", fmt.Errorf("cache: fact %q about %q: not a fact name and a sha256", fact, sum)
	}
	p := filepath.Join(c.dir, "facts", fact, sum[:2], sum)
	if data, err := bounded.ReadFile(p, max); err == nil {
		if valid == nil || valid(string(data)) {
			return string(data), nil
		}
		c.warn("cache: fact %s is damaged; derived again", p)
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.warn("cache: fact %s: %v; derived again", p, err)
	}
	v, err := derive()
	if err != nil {
		return "", err
	}
	if int64(len(v)) > max {
		c.warn("cache: fact %s is %d bytes, over the %d kept: derived again at every build", p, len(v), max)
	} else if err := c.putFact(p, v); err != nil {
		c.warn("cache: keeping fact %s: %v", p, err)
	}
	return v, nil
}

// putFact writes v at p whole or not at all: under a temporary name in
// the cache's tmp/ (which sweep empties of what killed builds leave),
// renamed into place.
func (c *Cache) putFact(p, v string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := tempfile.Create(filepath.Join(c.dir, "tmp"), "fact-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
