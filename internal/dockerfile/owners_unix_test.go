//go:build unix

package dockerfile

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe where a --chown name's /etc/passwd comes from is refused
// at once, by the COPY that takes it; were it read as a file, the plan
// would wait for a writer that never comes.
func TestChownNamesFromAPipe(t *testing.T) {
	df := write(t, map[string]string{"Dockerfile": "FROM scratch\nCOPY passwd /etc/passwd\nCOPY --chown=app bin/hello /a\n", "bin/hello": "x"})
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(df), "passwd"), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		d, err := Load(df)
		if err == nil {
			_, err = d.Plan(Options{})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "passwd") {
			t.Errorf("planned with a pipe for /etc/passwd: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plan waits on a named pipe")
	}
}
