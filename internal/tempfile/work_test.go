package tempfile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/pallet-dev/pallet/internal/fixture"
)

func TestNewWorkDir(t *testing.T) {
	parent := t.TempDir()
	w, err := NewWorkDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(w.Path) != parent || !workName().MatchString(filepath.Base(w.Path)) {
		t.Errorf("work dir %s is not a pallet-build-* directory of %s", w.Path, parent)
	}
	fi, err := os.Stat(w.Path)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("work dir mode %v, %v; want private 0700", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(w.Path, workLock)); err != nil {
		t.Errorf("no lock file: %v", err)
	}
	if err := w.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Path); err == nil {
		t.Error("Remove left the work dir")
	}
}

// age sets the times of everything under p back by d.
func age(t *testing.T, p string, d time.Duration) {
	t.Helper()
	old := time.Now().Add(-d)
	filepath.Walk(p, func(q string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Chtimes(q, old, old)
		}
		return nil
	})
}

// holdWorkDir is the child process of TestSweepSparesLiveBuilds: a build
// that creates its work dir, says where, and runs until killed.
func TestHoldWorkDir(t *testing.T) {
	parent := os.Getenv("PALLET_TEST_HOLD_WORKDIR")
	if parent == "" {
		t.Skip("run by TestSweepSparesLiveBuilds")
	}
	w, err := NewWorkDir(parent)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error", err)
		os.Exit(1)
	}
	fmt.Println("made", w.Path)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// A build running in another process keeps its work dir however old its
// files look; once that process is killed, the dir goes.
func TestSweepSparesLiveBuilds(t *testing.T) {
	parent := t.TempDir()
	cmd, dir := fixture.StartTest(t, "TestHoldWorkDir", "made", "PALLET_TEST_HOLD_WORKDIR="+parent)
	if !strings.HasPrefix(dir, parent) {
		t.Fatalf("child: made %s", dir)
	}
	age(t, dir, 48*time.Hour)
	removed, err := SweepWorkDirs(parent)
	if err != nil || len(removed) != 0 {
		t.Fatalf("sweep with the build running removed %v, %v", removed, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a live build's work dir was removed: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	removed, err = SweepWorkDirs(parent)
	if err != nil || !slices.Equal(removed, []string{dir}) {
		t.Fatalf("sweep after the build was killed removed %v, %v; want %s", removed, err, dir)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a killed build's work dir was kept")
	}
}

func TestSweepWorkDirs(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(p, "artifact-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "artifact-1", "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A killed build: its lock is free.
	killed, err := NewWorkDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(killed.Path, "gomodcache", "mod@v1")
	os.MkdirAll(ro, 0o755)
	os.WriteFile(filepath.Join(ro, "go.mod"), []byte("module m"), 0o444)
	os.Chmod(ro, 0o555)
	killed.lock.Close()
	age(t, killed.Path, 2*time.Minute)
	// Killed a moment ago: taken at once where the lock file is renamed
	// into place locked; on Windows it could be a build between creating
	// its lock file and locking it.
	young, err := NewWorkDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	young.lock.Close()
	// A running build in this process.
	live, err := NewWorkDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	age(t, live.Path, 48*time.Hour)
	// Killed while NewWorkDir made it: before its lock was staged, or
	// with it staged and not yet renamed into place. Taken once
	// unbornGrace has passed; younger, it could be a build making it.
	unborn := mk("pallet-build-unborn1")
	os.RemoveAll(filepath.Join(unborn, "artifact-1"))
	staged := mk("pallet-build-unborn2")
	os.RemoveAll(filepath.Join(staged, "artifact-1"))
	os.WriteFile(filepath.Join(staged, workLock+".new"), nil, 0o644)
	age(t, unborn, time.Minute)
	age(t, staged, time.Minute)
	born := mk("pallet-build-unborn3")
	os.RemoveAll(filepath.Join(born, "artifact-1"))
	// A build stalled with its staged lock held.
	stalled := mk("pallet-build-unborn4")
	os.RemoveAll(filepath.Join(stalled, "artifact-1"))
	held := flock.New(filepath.Join(stalled, workLock+".new"))
	if ok, err := held.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	defer held.Close()
	age(t, stalled, time.Minute)
	// Left by an older pallet, without a lock: taken only once stale.
	stale := mk("pallet-build-123456")
	age(t, stale, 48*time.Hour)
	recent := mk("pallet-build-654321")
	age(t, recent, time.Hour)
	// Not pallet's: names outside the exact pattern, a file, a link.
	var others []string
	for _, n := range []string{"pallet-build-", "pallet-build-1.bak", "pallet-build-ABC", "my-pallet-build-1", "pallet-build-1 2", "pallet-fetch-1"} {
		others = append(others, mk(n))
	}
	file := filepath.Join(parent, "pallet-build-9")
	os.WriteFile(file, nil, 0o644)
	target := mk("precious")
	link := filepath.Join(parent, "pallet-build-77")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	others = append(others, file, target, link)
	for _, p := range others {
		age(t, p, 48*time.Hour)
	}

	removed, err := SweepWorkDirs(parent)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{killed.Path, stale, unborn, staged}
	kept := []string{live.Path, recent, born, stalled}
	if runtime.GOOS == "windows" {
		kept = append(kept, young.Path)
	} else {
		want = append(want, young.Path)
	}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, p := range want {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was kept", p)
		}
	}
	for _, p := range append(append(others, kept...), filepath.Join(target, "artifact-1", "f")) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// Another user's work dir in a shared temporary directory is theirs.
func TestSweepSparesOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	parent := t.TempDir()
	w, err := NewWorkDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	w.lock.Close()
	age(t, w.Path, 48*time.Hour)
	if err := os.Chown(w.Path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if removed, err := SweepWorkDirs(parent); err != nil || len(removed) != 0 {
		t.Fatalf("removed %v, %v", removed, err)
	}
}

// A build killed while it removes its work dir, any entry of it, leaves
// the lock file in it: the next build sweeps the rest at once. Killed
// after its lock was gone and before the rest was, it left a dir that
// looked like an older pallet's, kept for a day.
func TestRemoveKilledHalfWayIsSwept(t *testing.T) {
	parent := t.TempDir()
	for _, stop := range []string{"a", "b", "c"} {
		w, err := NewWorkDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a", "b", "c"} {
			if err := os.MkdirAll(filepath.Join(w.Path, n, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(w.Path, n, "sub", "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A kill as stop is to be removed: what is left stays left.
		killed := fmt.Errorf("killed")
		removeEntry = func(p string) error {
			if filepath.Base(p) == stop {
				return killed
			}
			return removeTree(p)
		}
		err = w.Remove()
		removeEntry = removeTree
		if err != killed {
			t.Fatalf("Remove stopped at %s: %v", stop, err)
		}
		// (The kill would also have freed the lock, which Remove
		// closed here: it failed only as the kill interrupted it.)
		if _, err := os.Lstat(filepath.Join(w.Path, workLock)); err != nil {
			t.Errorf("stopped at %s: the lock file is gone before the rest: %v", stop, err)
		}
		if removed, err := SweepWorkDirs(parent); err != nil || len(removed) != 1 || removed[0] != w.Path {
			t.Errorf("stopped at %s: the next sweep removed %v, %v; want %s", stop, removed, err, w.Path)
		}
	}
}
