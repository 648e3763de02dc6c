package cache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A fact about content is derived once, kept whatever the age of the
// files that hold the content, and found again by a later build.
func TestContentFact(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha([]byte("Apache License 2.0"))
	calls := 0
	derive := func() (string, error) { calls++; return `{"SPDX":"Apache-2.0"}`, nil }
	for range 2 {
		v, err := c.ContentFact("licence-v1", sum, nil, derive)
		if err != nil || v != `{"SPDX":"Apache-2.0"}` {
			t.Fatalf("ContentFact = %q, %v", v, err)
		}
	}
	c2, err := Open(dir) // the next build
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c2.ContentFact("licence-v1", sum, nil, derive); err != nil || v != `{"SPDX":"Apache-2.0"}` || calls != 1 {
		t.Errorf("ContentFact = %q, %v after %d derivations, want one", v, err, calls)
	}
	// Another fact about the same content is its own.
	if v, _ := c2.ContentFact("other-v1", sum, nil, func() (string, error) { return "x", nil }); v != "x" {
		t.Errorf("another fact's value: %q", v)
	}
	// A derivation that fails keeps nothing.
	boom := errors.New("boom")
	other := sha([]byte("other text"))
	if _, err := c.ContentFact("licence-v1", other, nil, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "facts", "licence-v1", other[:2], other)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed derivation left a fact: %v", err)
	}
	// Names that would leave the facts directory are refused.
	for _, bad := range [][2]string{{"../x", sum}, {"a/b", sum}, {"licence-v1", "../../" + sum[6:]}, {"licence-v1", strings.ToUpper(sum)}} {
		if _, err := c.ContentFact(bad[0], bad[1], nil, derive); err == nil {
			t.Errorf("ContentFact(%q, %q) accepted", bad[0], bad[1])
		}
	}
	// A fact that cannot be read is derived again, and said.
	var warned []string
	c.Log = func(f string, a ...any) { warned = append(warned, f) }
	third := sha([]byte("third"))
	p := filepath.Join(dir, "facts", "licence-v1", third[:2], third)
	if err := os.MkdirAll(p, 0o755); err != nil { // a directory where the fact goes
		t.Fatal(err)
	}
	if v, err := c.ContentFact("licence-v1", third, nil, func() (string, error) { return "again", nil }); err != nil || v != "again" || len(warned) == 0 {
		t.Errorf("unreadable fact: %q, %v, warnings %v", v, err, warned)
	}
}

// A kept fact the caller finds damaged is said, derived again and
// replaced, so the next build reads the good one.
func TestContentFactDamagedIsReplaced(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	c.Log = func(f string, a ...any) { warned = append(warned, f) }
	sum := sha([]byte("a base"))
	valid := func(s string) bool { return strings.HasPrefix(s, "good") }
	calls := 0
	derive := func() (string, error) { calls++; return "good view", nil }
	if _, err := c.ContentFact("view-v1", sum, valid, derive); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "facts", "view-v1", sum[:2], sum)
	if err := os.WriteFile(p, []byte("bad view"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if v, err := c.ContentFact("view-v1", sum, valid, derive); err != nil || v != "good view" {
			t.Fatalf("got %q, %v", v, err)
		}
	}
	if calls != 2 || len(warned) != 1 || !strings.Contains(warned[0], "damaged") {
		t.Errorf("derived %d times, warnings %q; want 2 and one about the damage", calls, warned)
	}
	if b, _ := os.ReadFile(p); string(b) != "good view" {
		t.Errorf("the damaged fact was not replaced: %q", b)
	}
}

// A fact within its caller's bound is kept whatever the bound for other
// facts; one over it is said, used, and derived again next time; and a
// kept file over the bound (put there by another program) is not read
// whole.
func TestContentFactUpTo(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	c.Log = func(f string, a ...any) { warned = append(warned, f) }
	big := strings.Repeat("v", maxFact+1)
	sum := sha([]byte("a large base"))
	calls := 0
	derive := func() (string, error) { calls++; return big, nil }
	for range 2 {
		if v, err := c.ContentFactUpTo("view-v1", sum, maxFact+1, nil, derive); err != nil || v != big {
			t.Fatalf("ContentFactUpTo = %d bytes, %v", len(v), err)
		}
	}
	if calls != 1 || len(warned) != 0 {
		t.Errorf("derived %d times, warnings %q; want once and none", calls, warned)
	}
	other := sha([]byte("a larger base"))
	for range 2 {
		if v, err := c.ContentFactUpTo("view-v1", other, maxFact, nil, derive); err != nil || v != big {
			t.Fatalf("ContentFactUpTo = %d bytes, %v", len(v), err)
		}
	}
	if calls != 3 || len(warned) != 2 || !strings.Contains(warned[0], "over the") {
		t.Errorf("derived %d times, warnings %q; want 3 and two about the size", calls, warned)
	}
	// The fact kept above, read under a smaller bound: derived again.
	if v, err := c.ContentFactUpTo("view-v1", sum, 16, nil, func() (string, error) { return "small", nil }); err != nil || v != "small" {
		t.Errorf("a kept fact over the bound: %d bytes, %v; want it derived again", len(v), err)
	}
}
