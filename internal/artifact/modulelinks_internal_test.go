package artifact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A go module's cache key reads what its links lead to outside it within
// maxLinkedFiles and maxLinkedBytes, and says which link led past them:
// a link to /usr had every build hash all of it, one to /proc failed
// with an error naming neither the module nor the link (or, where the
// walk got that far, hashed /proc/kcore, the size of the address space).
func TestModuleKeyThroughLinksBounded(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	for i := range 5 {
		writeTestFile(t, filepath.Join(dir, "big", "d", string(rune('a'+i))+".go"), strings.Repeat("x", 100))
	}
	writeTestFile(t, filepath.Join(dir, "large.go"), strings.Repeat("x", 1000))
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(mod, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(dir, "big"), "big")
	link(filepath.Join(dir, "large.go"), "large.go")
	// A link within the module and links in the module's tree are not
	// counted: only what is outside it.
	writeTestFile(t, filepath.Join(mod, "pkg", "a.go"), strings.Repeat("y", 2000))
	link("pkg", "alias")
	f := &Fetcher{}
	if _, err := f.moduleDigest(mod); err != nil {
		t.Fatalf("within the limits: %v", err)
	}
	setLimits := func(files int, bytes int64) {
		oldFiles, oldBytes := maxLinkedFiles, maxLinkedBytes
		maxLinkedFiles, maxLinkedBytes = files, bytes
		t.Cleanup(func() { maxLinkedFiles, maxLinkedBytes = oldFiles, oldBytes })
	}
	setLimits(4, 1<<20)
	_, err := f.moduleDigest(mod)
	if want := "go module " + mod + ": big, a link to " + filepath.Join(dir, "big") + ": more than 4 files through its links"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("6 files through links, 4 allowed: %v, want an error saying %q", err, want)
	}
	setLimits(100, 1200)
	_, err = f.moduleDigest(mod)
	if want := "more than 1200 bytes through its links (at " + filepath.Join(dir, "large.go") + ", 1000 bytes)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("1500 bytes through links, 1200 allowed: %v, want an error saying %q", err, want)
	}

	// Where the walk gets to kcore, its size stops it; before, a process
	// gone, or a link root may not read, does: either names the link.
	if _, err := os.Stat("/proc/kcore"); err != nil {
		return
	}
	proc := t.TempDir()
	writeTestFile(t, filepath.Join(proc, "go.mod"), "module example.com/p\n")
	if err := os.Symlink("/proc", filepath.Join(proc, "p")); err != nil {
		t.Fatal(err)
	}
	setLimits(100_000, 4<<30)
	_, err = f.moduleDigest(proc)
	if want := "go module " + proc + ": p, a link to /proc: "; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a link to /proc: %v, want an error saying %q", err, want)
	}
}

// Links that lead back to where they were read from are walked once:
// the key is made, and covers what they lead to (held before).
func TestModuleKeyThroughLinkCycles(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	writeTestFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n")
	writeTestFile(t, filepath.Join(dir, "ext", "a", "a.go"), "package a\n")
	writeTestFile(t, filepath.Join(dir, "ext", "b", "b.go"), "package b\n")
	for name, target := range map[string]string{
		filepath.Join(mod, "a"):               filepath.Join(dir, "ext", "a"),
		filepath.Join(mod, "self"):            ".",
		filepath.Join(mod, "up"):              "..",
		filepath.Join(mod, "root"):            "/",
		filepath.Join(mod, "dangling"):        "nowhere",
		filepath.Join(dir, "ext", "a", "tob"): filepath.Join("..", "b"),
		filepath.Join(dir, "ext", "b", "toa"): filepath.Join("..", "a"),
		filepath.Join(dir, "ext", "a", "me"):  ".",
	} {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	f := &Fetcher{}
	before, err := f.moduleDigest(mod)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "ext", "b", "b.go"), "package b // edited\n")
	after, err := f.moduleDigest(mod)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Error("an edit in a directory reached through two links left the key as it was")
	}
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
