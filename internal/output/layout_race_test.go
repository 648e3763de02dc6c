package output

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Two builds write one layout: the first found no layout and writes a new
// one to swap in; meanwhile another build wrote a layout there, and a
// third is updating it in place. The swap must wait for the update, and
// must not throw away the layout the update was writing into: whatever
// the order, the layout at the end names only blobs it holds.
func TestLayoutSwapWaitsForUpdateInPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	newImage := func() Image {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf.OS, cf.Architecture = "linux", "amd64"
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		return Image{Repository: "app", Tags: []string{"v1"}, Image: img}
	}
	first, second := newImage(), newImage()
	third := second
	third.Tags = []string{"v2"} // the same blobs, another tag: kept, not written

	var (
		mu       sync.Mutex
		swaps    int
		atSwap   = make(chan struct{})
		goSwap   = make(chan struct{})
		atUpdate = make(chan struct{})
		updating sync.Once
	)
	layoutStep = func(step string) {
		mu.Lock()
		if step == "swap" {
			swaps++
		}
		n := swaps
		mu.Unlock()
		switch {
		case step == "swap" && n == 1: // the first build
			close(atSwap)
			<-goSwap
		case step == "update":
			updating.Do(func() {
				close(atUpdate)
				// Let the first build swap now, if it does not wait.
				time.Sleep(300 * time.Millisecond)
			})
		}
	}
	defer func() { layoutStep = nil }()

	ctx := context.Background()
	errs := make(chan error, 2)
	go func() { errs <- (&Layout{Dir: dir}).Write(ctx, []Image{first}) }()
	<-atSwap
	if err := (&Layout{Dir: dir}).Write(ctx, []Image{second}); err != nil {
		t.Fatal(err)
	}
	go func() { errs <- (&Layout{Dir: dir}).Write(ctx, []Image{third}) }()
	<-atUpdate
	close(goSwap)
	for range 2 {
		if err := <-errs; err != nil {
			t.Logf("a build failed: %v", err)
		}
	}

	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(ii); err != nil {
		t.Errorf("the layout is broken: %v", err)
	}
}
