package regfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	want := []byte("content\n")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != p {
		t.Errorf("name %q, want %q", f.Name(), p)
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != string(want) {
		t.Errorf("read %q, %v; want %q", got, err, want)
	}
	// ReadAt and Stat work as on a file from os.Open.
	b := make([]byte, 3)
	if _, err := f.ReadAt(b, 2); err != nil || string(b) != "nte" {
		t.Errorf("ReadAt: %q, %v", b, err)
	}
	if info, err := f.Stat(); err != nil || info.Size() != int64(len(want)) {
		t.Errorf("Stat: %v, %v", info, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(b); !errors.Is(err, os.ErrClosed) {
		t.Errorf("read after close: %v, want os.ErrClosed", err)
	}

	_, err = Open(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("missing file: %v, want an open PathError for a file that does not exist", err)
	}
}
