package output

import (
	"context"
	"maps"
	"slices"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// perBlob is what a blob new to the repository costs a push: the HEAD
// that finds it missing, the POST that starts its upload, the PATCH that
// carries it and the PUT that commits it.
const perBlob = 4

// total is how many requests rec saw.
func total(rec record) int {
	n := 0
	for _, c := range rec.requests {
		n += c
	}
	return n
}

// A push to a repository that lacked a blob of the image cannot find the
// image's manifest there already: the manifest goes up with its PUT
// alone, where go-containerregistry asked with a HEAD first, one more
// round trip after the last blob, on the push's critical path. For an
// image: the ping, perBlob for each blob (layers and config), the
// manifest's PUT.
func TestPushOfNewBlobsAsksNoManifestFirst(t *testing.T) {
	p, host := newProxy(t)
	img := newImage(t, "amd64", newLayer(t), newLayer(t))
	blobs := 3 // two layers, the config
	if err := (&Registry{Ref: host + "/fresh/app:1.0"}).Write(context.Background(), []Image{{Repository: "app", Image: img}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	if want := 1 + perBlob*blobs + 1; total(rec) > want {
		t.Errorf("a push of an image of %d new blobs made %d requests, want at most %d: %v", blobs, total(rec), want, rec.requests)
	}
	if n := rec.requests["HEAD fresh/app manifests"]; n != 0 {
		t.Errorf("the manifest was asked for %d times, though the repository lacked its blobs", n)
	}
	checkPulled(t, host+"/fresh/app:1.0", img)

	// An index of two images: each image's manifest by digest, then the
	// index's, each with its PUT alone.
	p.reset()
	idx := newIndex(t, map[string]v1.Image{"amd64": newImage(t, "amd64", newLayer(t)), "arm64": newImage(t, "arm64", newLayer(t))})
	blobs = 4 // a layer and a config each
	if err := (&Registry{Ref: host + "/fresh/multi:1.0"}).Write(context.Background(), []Image{{Repository: "multi", Index: idx}}); err != nil {
		t.Fatal(err)
	}
	rec = p.record()
	if want := 1 + perBlob*blobs + 2 + 1; total(rec) > want {
		t.Errorf("a push of an index of 2 images, %d new blobs, made %d requests, want at most %d: %v", blobs, total(rec), want, rec.requests)
	}
	if n := rec.requests["HEAD fresh/multi manifests"]; n != 0 {
		t.Errorf("manifests were asked for %d times, though the repository lacked their blobs", n)
	}
	checkPulled(t, host+"/fresh/multi:1.0", idx)
}

// A push that finds every blob in the repository still asks whether the
// tag names its manifest already, and then puts nothing: a registry
// whose tags are immutable refuses a PUT to an existing tag even of the
// same manifest, and pushing the same build again must not fail there.
// The same holds for each image of an index, found under its digest.
func TestRepeatPushPutsNoManifest(t *testing.T) {
	p, host := newProxy(t)
	img := newImage(t, "amd64", newLayer(t))
	idx := newIndex(t, map[string]v1.Image{"amd64": newImage(t, "amd64", newLayer(t)), "arm64": newImage(t, "arm64", newLayer(t))})
	for _, c := range []struct {
		ref string
		im  Image
	}{
		{host + "/again/app:1.0", Image{Repository: "app", Image: img}},
		{host + "/again/multi:1.0", Image{Repository: "multi", Index: idx}},
	} {
		for i := range 2 {
			p.reset()
			if err := (&Registry{Ref: c.ref}).Write(context.Background(), []Image{c.im}); err != nil {
				t.Fatalf("push %d of %s: %v", i+1, c.ref, err)
			}
		}
		rec := p.record()
		puts := slices.DeleteFunc(slices.Collect(maps.Keys(rec.requests)), func(k string) bool {
			return k != "PUT again/app manifests" && k != "PUT again/multi manifests" && k != "PUT again/app blobs/uploads" && k != "PUT again/multi blobs/uploads"
		})
		if len(puts) > 0 {
			t.Errorf("the second push of %s put %q: %v", c.ref, puts, rec.requests)
		}
		checkPulled(t, c.ref, c.im)
	}
}
