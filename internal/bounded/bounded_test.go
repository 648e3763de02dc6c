package bounded

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int64
		err   bool
	}{
		{"", 0, false},
		{"abc", 3, false},
		{"abc", 4, false},
		{"abcd", 3, true},
		{"a", 0, true},
	} {
		b, err := ReadAll(strings.NewReader(tc.in), tc.limit)
		var tl *TooLargeError
		switch {
		case tc.err && (!errors.As(err, &tl) || tl.Limit != tc.limit || b != nil):
			t.Errorf("ReadAll(%q, %d) = %q, %v; want a TooLargeError for %d", tc.in, tc.limit, b, err, tc.limit)
		case !tc.err && (err != nil || string(b) != tc.in):
			t.Errorf("ReadAll(%q, %d) = %q, %v; want it whole", tc.in, tc.limit, b, err)
		}
	}
}

// An endless reader is refused after limit+1 bytes, not read on.
func TestReadAllStopsAtLimit(t *testing.T) {
	var n countReader
	_, err := ReadAll(&n, 1000)
	if err == nil || err.Error() != "over 1000 bytes" {
		t.Fatalf("err = %v", err)
	}
	if n != 1001 {
		t.Errorf("read %d bytes of an endless reader with a 1000-byte limit, want 1001", n)
	}
}

func TestReadAllError(t *testing.T) {
	boom := errors.New("boom")
	if _, err := ReadAll(iotest.ErrReader(boom), 10); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the reader's", err)
	}
}

type countReader int

func (c *countReader) Read(p []byte) (int, error) {
	*c += countReader(len(p))
	return len(p), nil
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 5); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile(5) = %q, %v", b, err)
	}
	_, err := ReadFile(p, 4)
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "read "+p+": over 4 bytes" {
		t.Fatalf("ReadFile(4): %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 4); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	// A file that never ends (a pipe, a device) is refused at the limit.
	if _, err := ReadFile("/dev/zero", 1<<10); !errors.As(err, &tl) {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// A refusal names what stands where a regular file was wanted in words:
// fs.FileMode's Type() reads "d---------" for a directory.
func TestTypeName(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink("f", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{file: "a file", dir: "a directory", link: "a symbolic link"} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := TypeName(fi.Mode()); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	for m, want := range map[fs.FileMode]string{
		fs.ModeNamedPipe:                  "a named pipe",
		fs.ModeSocket:                     "a socket",
		fs.ModeDevice:                     "a block device",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeIrregular:                  "a file of type ?---------",
	} {
		if got := TypeName(m | 0o644); got != want {
			t.Errorf("%v: %q, want %q", m, got, want)
		}
	}
	if err := RegularInfo(dir, mustLstat(t, dir)); err == nil || !strings.Contains(err.Error(), "not a regular file (a directory)") {
		t.Errorf("RegularInfo of a directory: %v", err)
	}
}

func mustLstat(t *testing.T, p string) fs.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
