package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	palletfixture "github.com/pallet-dev/pallet/internal/fixture"
)

// TestTempDirProcess is a build that is killed while it writes an entry:
// it opens the cache, makes a temporary directory, writes into it, says
// so, and waits. It runs only when TestKilledBuildsTempDirIsSwept starts it.
func TestTempDirProcess(t *testing.T) {
	dir := os.Getenv("PALLET_TEST_CACHE_TEMPDIR")
	if dir == "" {
		t.Skip("started by TestKilledBuildsTempDirIsSwept")
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp, _, err := c.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "layer.tmp"), []byte("half a layer"), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Println("made", tmp)
	time.Sleep(time.Minute)
}

// TestKilledBuildsTempDirIsSwept: what a killed build was writing into
// the cache is removed by the next build that opens it, at once rather
// than a day later, while a running build's is left alone.
func TestKilledBuildsTempDirIsSwept(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("kills a process with SIGKILL")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	killed, gone := palletfixture.StartTest(t, "TestTempDirProcess", "made", "PALLET_TEST_CACHE_TEMPDIR="+dir)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	_, running := palletfixture.StartTest(t, "TestTempDirProcess", "made", "PALLET_TEST_CACHE_TEMPDIR="+dir)
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(gone); err == nil {
		t.Errorf("%s, of a killed build, is still there", gone)
	}
	if _, err := os.Lstat(gone + ".lock"); err == nil {
		t.Errorf("%s.lock, of a killed build, is still there", gone)
	}
	if _, err := os.Stat(filepath.Join(running, "layer.tmp")); err != nil {
		t.Errorf("a running build's temporary was removed: %v", err)
	}
}

// A cache directory found as a symlink (a cache restored from a source
// that could write one) is not followed: the sweep would remove what
// another directory holds under build-* names, and writes would land
// there. The cache is refused, naming the link, which is not pallet's
// to remove; its target is untouched.
func TestCacheDirsThatAreLinksAreNotFollowed(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cache")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "project")
	victim := filepath.Join(outside, "build-release")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "app"), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-72 * time.Hour)
	for _, p := range []string{filepath.Join(victim, "app"), victim} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"tmp", "memo"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "memo is a symlink, which pallet neither follows nor removes") {
		t.Errorf("a cache with links for directories: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(victim, "app")); err != nil || string(b) != "precious" {
		t.Errorf("the file under the link's target: %q, %v", b, err)
	}
	for _, sub := range []string{"tmp", "memo"} {
		if target, err := os.Readlink(filepath.Join(dir, sub)); err != nil || target != outside {
			t.Errorf("the link %s: %q, %v; want it left as it was", sub, target, err)
		}
		if err := os.Remove(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}

	// What is neither a directory nor a link is not pallet's to remove.
	if err := os.WriteFile(filepath.Join(dir, "layers2"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "layers")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "layers2"), filepath.Join(dir, "layers")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "layers: not a directory") {
		t.Errorf("a file at layers: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "layers")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the file at layers was not left as it was: %v", err)
	}
}

// What a save of the memo killed while it wrote a shard left beside the
// shard (.NN.new-*), or a build killed as it claimed a new cache left
// beside its tag, is removed by a later build that opens the cache, once
// it is no running build's; it was left for good, for the memo one for
// each shard each time a build was killed as it saved.
func TestKilledMemoSaveIsSwept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	memo := filepath.Join(dir, "memo")
	if err := os.MkdirAll(memo, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, age time.Duration) string {
		p := filepath.Join(memo, name)
		if err := os.WriteFile(p, []byte("half a shard"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	killed := write(".b6.new-2r03sgo8izix4", 2*oneWriteIdle)
	running := write(".c1.new-1x2y3z", 0)
	shard := write("b6", 2*oneWriteIdle)
	// The tag, written as a build claimed the cache.
	memo = dir
	tagKilled := write("."+tagName+".new-30dk3bd4pdt3b", 2*oneWriteIdle)
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{killed, tagKilled} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, of a killed build, is still there", filepath.Base(p))
		}
	}
	for _, p := range []string{running, shard} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
