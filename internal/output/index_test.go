package output

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/pallet-dev/pallet/internal/image"
)

// A push by digest sets no tag and says REPO@DIGEST.
func TestPushByDigest(t *testing.T) {
	p, host := newProxy(t)
	img := newImage(t, "amd64", newLayer(t))
	r := &Registry{Ref: host + "/fan/app", ByDigest: true}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	images := []Image{{Repository: "app", Tags: []string{"1.0", "latest"}, Image: img}}
	if err := r.Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	d := digest(t, img)
	for _, e := range p.record().events {
		if strings.HasPrefix(e, "manifest ") && e != "manifest fan/app:"+d.String() {
			t.Errorf("a push by digest wrote %s", e)
		}
	}
	for _, tag := range []string{"1.0", "latest"} {
		if code := status(t, host, "fan/app", "manifests", tag); code != 404 {
			t.Errorf("tag %s: %d, want 404", tag, code)
		}
	}
	checkPulled(t, host+"/fan/app@"+d.String(), img)
	lines, err := Written(r, images)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{host + "/fan/app@" + d.String()}; !slices.Equal(lines, want) {
		t.Errorf("Written %q, want %q", lines, want)
	}
	if err := (&Registry{Ref: host + "/fan/app:1.0", ByDigest: true}).Check(); err == nil || !strings.Contains(err.Error(), "no tag") {
		t.Errorf("a push by digest to a tag: %v", err)
	}
	if err := (&Registry{Ref: host + "/fan/", ByDigest: true}).Check(); err != nil {
		t.Errorf("a push by digest under a prefix: %v", err)
	}
}

func windowsImage(t *testing.T, osVersion string) v1.Image {
	t.Helper()
	img := newImage(t, "amd64", newLayer(t))
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.OSVersion = "windows", osVersion
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Images pushed by digest (here by two "runners", one of them an index)
// become the index one build of all of them makes, pushed by digest and
// then tagged.
func TestCreateIndex(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	linux := newImage(t, "amd64", newLayer(t))
	arm := newImage(t, "arm64", newLayer(t))
	win := windowsImage(t, "10.0.17763.1")
	win22 := windowsImage(t, "10.0.20348.1")
	// Runner one built two platforms into an index; runner two one, in
	// another repository of the registry.
	armIdx, err := image.Index([]v1.Image{linux, arm})
	if err != nil {
		t.Fatal(err)
	}
	one := &Registry{Ref: host + "/fan/app", ByDigest: true}
	if err := one.Write(ctx, []Image{{Repository: "app", Index: armIdx}}); err != nil {
		t.Fatal(err)
	}
	two := &Registry{Ref: host + "/runner2/app", ByDigest: true}
	for _, img := range []v1.Image{win, win22} {
		if err := two.Write(ctx, []Image{{Repository: "app", Image: img}}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := image.Index([]v1.Image{linux, arm, win, win22})
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(host + "/fan/app:1.0")
	src := func(repo string, d interface{ Digest() (v1.Hash, error) }) name.Digest {
		r, err := name.NewDigest(host + "/" + repo + "@" + digest(t, d).String())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	p.reset()
	got, err := CreateIndex(ctx, tag, []name.Digest{src("fan/app", armIdx), src("runner2/app", win), src("runner2/app", win22)})
	if err != nil {
		t.Fatal(err)
	}
	if got != digest(t, want) {
		t.Errorf("index %s, want %s (the one-machine index)", got, digest(t, want))
	}
	checkPulled(t, host+"/fan/app:1.0", want)
	events := p.record().events
	byDigest := slices.Index(events, "manifest fan/app:"+got.String())
	tagged := slices.Index(events, "manifest fan/app:1.0")
	if byDigest < 0 || tagged < byDigest {
		t.Errorf("the index was not pushed by digest before its tag: %q", events)
	}
}

func TestCreateIndexRefuses(t *testing.T) {
	_, host := newProxy(t)
	ctx := context.Background()
	linux := newImage(t, "amd64", newLayer(t))
	linux2 := newImage(t, "amd64", newLayer(t))
	win := windowsImage(t, "10.0.17763.1")
	winAgain := windowsImage(t, "10.0.17763.1")
	r := &Registry{Ref: host + "/fan/app", ByDigest: true}
	for _, img := range []v1.Image{linux, linux2, win, winAgain} {
		if err := r.Write(ctx, []Image{{Repository: "app", Image: img}}); err != nil {
			t.Fatal(err)
		}
	}
	src := func(d v1.Hash) name.Digest {
		r, _ := name.NewDigest(host + "/fan/app@" + d.String())
		return r
	}
	tag, _ := name.NewTag(host + "/fan/app:1.0")
	missing := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	for what, c := range map[string]struct {
		srcs []name.Digest
		want string
	}{
		"same platform":        {[]name.Digest{src(digest(t, linux)), src(digest(t, linux2))}, "linux/amd64"},
		"same windows version": {[]name.Digest{src(digest(t, win)), src(digest(t, winAgain))}, "os.version 10.0.17763.1"},
		"missing":              {[]name.Digest{src(digest(t, linux)), src(missing)}, "not found"},
		"nothing":              {nil, "no image"},
	} {
		_, err := CreateIndex(ctx, tag, c.srcs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", what, err, c.want)
		}
	}
	if code := status(t, host, "fan/app", "manifests", "1.0"); code != 404 {
		t.Errorf("a refused index create set the tag (%d)", code)
	}
}
