package output

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"golang.org/x/sys/unix"
)

// A layout directory that is a mount point (a container's volume) cannot
// take a layout renamed into it: the build says so before any work, and
// points at a directory inside it, instead of failing at its end with
// "device or resource busy" (a new layout) or "invalid cross-device link"
// (an update in place).
func TestLayoutOnMountPointRefusedUpFront(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := unix.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mounting needs root")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	l := &Layout{Dir: dir}
	err := CheckImages([]Target{l}, []Planned{{Repository: "app", Tags: []string{"v1"}, Manifests: 1}})
	if err == nil || !strings.Contains(err.Error(), "mount point") {
		t.Errorf("the plan check said %v, want a refusal naming the mount point", err)
	}
	img, ierr := random.Image(64, 1)
	if ierr != nil {
		t.Fatal(ierr)
	}
	err = l.Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}})
	if err == nil || !strings.Contains(err.Error(), "mount point") || !strings.Contains(err.Error(), filepath.Join(dir, "NAME")) {
		t.Errorf("writing said %v, want a refusal naming the mount point and a directory inside it", err)
	}
	// A directory inside it is written as usual.
	inside := &Layout{Dir: filepath.Join(dir, "app")}
	if err := inside.Write(context.Background(), []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Errorf("a layout inside the mount: %v", err)
	}
}
