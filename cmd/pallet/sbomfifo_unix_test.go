//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pallet sbom reads a layout's index.json as inspect does: a named pipe
// there is refused at once, where sbom opened it and waited for a writer
// for ever.
func TestSBOMLayoutIndexNotRegular(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	writeFile(t, filepath.Join(dir, "oci-layout"), `{"imageLayoutVersion":"1.0.0"}`)
	if err := syscall.Mkfifo(filepath.Join(dir, "index.json"), 0o644); err != nil {
		t.Skip("no mkfifo:", err)
	}
	for _, ref := range []string{"oci:" + dir, "oci:" + dir + ":latest"} {
		done := make(chan error, 1)
		go func() {
			_, err := pallet(t, "sbom", ref)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "index.json: not a regular file (a named pipe)") {
				t.Errorf("sbom %s: got %v, want index.json refused as not a regular file", ref, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("sbom %s: still waiting after 30 s", ref)
		}
	}
}
