package tempfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPermissionsFollowUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o077, 0o002} {
		old := syscall.Umask(mask)
		dir := t.TempDir()
		f, err := Create(dir, ".out.tar.new-*")
		if err != nil {
			syscall.Umask(old)
			t.Fatal(err)
		}
		f.Close()
		d, err := Dir(dir, ".layout.new-*")
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(f.Name())
		di, _ := os.Stat(d)
		if got, want := fi.Mode().Perm(), os.FileMode(0o666&^mask); got != want {
			t.Errorf("umask %03o: file mode %v, want %v", mask, got, want)
		}
		if got, want := di.Mode().Perm(), os.FileMode(0o777&^mask); got != want {
			t.Errorf("umask %03o: dir mode %v, want %v", mask, got, want)
		}
		if base := filepath.Base(f.Name()); !strings.HasPrefix(base, ".out.tar.new-") || base == ".out.tar.new-" {
			t.Errorf("file name %s does not follow the pattern", base)
		}
	}
}

func TestNamesAreUnique(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for range 200 {
		f, err := Create(dir, "x-*.tmp")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if seen[f.Name()] || !strings.HasSuffix(f.Name(), ".tmp") {
			t.Fatalf("name %s repeated or without its suffix", f.Name())
		}
		seen[f.Name()] = true
	}
	if _, err := Create(dir, "a/b-*"); err == nil {
		t.Error("a pattern with a separator was accepted")
	}
}

func TestSweep(t *testing.T) {
	dir := t.TempDir()
	old, err := Dir(dir, ".out.new-*")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Create(dir, ".out.new-*")
	if err != nil {
		t.Fatal(err)
	}
	fresh.Close()
	other, err := Create(dir, "keep-*")
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other.Name(), long, long); err != nil {
		t.Fatal(err)
	}
	// A directory whose own time is old but that is being filled is alive.
	live, err := Dir(dir, ".out.new-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, "blob"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(live, long, long); err != nil {
		t.Fatal(err)
	}
	// Glob characters in names are names, not patterns.
	bracket, err := Create(dir, ".out[1].new-*")
	if err != nil {
		t.Fatal(err)
	}
	bracket.Close()
	if err := os.Chtimes(bracket.Name(), long, long); err != nil {
		t.Fatal(err)
	}
	Sweep(dir, ".out.new-*", time.Hour)
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a temporary being filled was removed: %v", err)
	}
	if _, err := os.Stat(bracket.Name()); err != nil {
		t.Errorf("another output's temporary was removed: %v", err)
	}
	Sweep(dir, ".out[1].new-*", time.Hour)
	if _, err := os.Stat(bracket.Name()); err == nil {
		t.Error("an abandoned temporary with [ in its name was kept")
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("an abandoned temporary was kept")
	}
	for _, p := range []string{fresh.Name(), other.Name()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// A directory made by DirLocked is swept as soon as its owner is gone,
// however fresh; while the owner runs it is left alone; a lock left
// without its directory goes too.
func TestSweepLockedDirs(t *testing.T) {
	parent := t.TempDir()
	alive, release, err := DirLocked(parent, ".out.new-*")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.WriteFile(filepath.Join(alive, "blob"), []byte("x"), 0o644)
	// A killed owner: its lock file is there, nobody holds it.
	dead := filepath.Join(parent, ".out.new-dead")
	os.Mkdir(dead, 0o777)
	os.WriteFile(dead+ownerSuffix, nil, 0o644)
	// An owner killed after renaming its directory into place.
	os.WriteFile(filepath.Join(parent, ".out.new-gone"+ownerSuffix), nil, 0o644)
	// An unlocked temporary of an older pallet: the idle rule.
	old := filepath.Join(parent, ".out.new-old")
	os.Mkdir(old, 0o777)
	Sweep(parent, ".out.new-*", time.Hour)
	for p, kept := range map[string]bool{alive: true, alive + ownerSuffix: true, dead: false, dead + ownerSuffix: false,
		filepath.Join(parent, ".out.new-gone"+ownerSuffix): false, old: true} {
		if _, err := os.Stat(p); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(p), err == nil, kept)
		}
	}
	release()
	if _, err := os.Stat(alive + ownerSuffix); err == nil {
		t.Error("release left the lock file")
	}
}

// A "*" in the name a temporary is made beside is part of the name, as
// Create takes it: the temporaries of out*.json are swept once abandoned,
// and a file that only shares the name's two ends is not.
func TestSweepBesideAStar(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out*.json")
	tmp, err := Create(dir, Beside(path))
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	other := filepath.Join(dir, ".out-x-.json.new-*")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-2 * Abandoned)
	for _, p := range []string{tmp.Name(), other} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	SweepBeside(path)
	if _, err := os.Stat(tmp.Name()); err == nil {
		t.Errorf("%s, abandoned, was kept", tmp.Name())
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("%s, not a temporary of %s, was removed: %v", other, path, err)
	}
}
