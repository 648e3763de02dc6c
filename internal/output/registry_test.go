package output

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// fault is what the proxy does to one blob upload request.
type fault int

const (
	pass    fault = iota
	fail500       // answer 500 without involving the registry
	hangUp        // close the connection without answering
)

// proxy sits in front of the test registry. It injects faults into blob
// uploads and records what a push did: which blobs were uploaded, found
// (HEAD) or mounted, in which order blobs and manifests were committed,
// and how many blob uploads were in flight at once.
type proxy struct {
	next http.Handler
	// delay is added to every blob PATCH so that uploads running in
	// parallel overlap long enough to be seen doing so.
	delay time.Duration

	mu sync.Mutex
	// fault decides for each blob upload request, PATCH (carrying the
	// blob) or PUT (committing it), what happens to it; n counts the
	// earlier requests with the same method for the same blob, so that a
	// fault can hit only the first try and stay deterministic whatever
	// order parallel uploads arrive in.
	fault       func(method string, blob v1.Hash, n int) fault
	tries       map[string]int
	injected    int
	commits     map[v1.Hash]int      // blob PUTs the registry answered 201
	found       map[v1.Hash]int      // blob HEADs the registry answered 200
	mounted     map[v1.Hash][]string // blob -> repositories it was mounted from (POST ?mount=&from= answered 201)
	events      []string             // "blob DIGEST" and "manifest REPO:REF", in the order they were committed
	requests    map[string]int       // "METHOD REPO KIND" ("GET /v2/" for a ping) -> requests
	inflight    int
	maxInflight int
}

// newProxy starts a registry behind a proxy and returns the proxy and the
// registry's host.
func newProxy(t *testing.T) (*proxy, string) {
	p := &proxy{
		tries:    map[string]int{},
		commits:  map[v1.Hash]int{},
		found:    map[v1.Hash]int{},
		mounted:  map[v1.Hash][]string{},
		requests: map[string]int{},
	}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		p.next = h
		return p
	})
	return p, reg.Host
}

func (p *proxy) setFault(f func(method string, blob v1.Hash, n int) fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// reset forgets what earlier pushes did, so a test can look at one push.
func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commits = map[v1.Hash]int{}
	p.found = map[v1.Hash]int{}
	p.mounted = map[v1.Hash][]string{}
	p.events = nil
	p.requests = map[string]int{}
	p.maxInflight = 0
}

// record is a copy of what the proxy saw, safe to read while the registry
// keeps serving (pulls go through the proxy too).
type record struct {
	injected    int
	commits     map[v1.Hash]int
	found       map[v1.Hash]int
	mounted     map[v1.Hash][]string
	events      []string
	requests    map[string]int
	maxInflight int
}

func (p *proxy) record() record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return record{
		injected:    p.injected,
		commits:     maps.Clone(p.commits),
		found:       maps.Clone(p.found),
		mounted:     maps.Clone(p.mounted), // the slices are only ever appended to
		events:      slices.Clone(p.events),
		requests:    maps.Clone(p.requests),
		maxInflight: p.maxInflight,
	}
}

// statusWriter remembers the status the registry answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// splitPath splits "/v2/REPO/KIND/REST" where KIND is "blobs/uploads",
// "blobs" or "manifests" (REPO may hold slashes).
func splitPath(path string) (repo, kind, rest string) {
	path = strings.TrimPrefix(path, "/v2/")
	for _, k := range []string{"/blobs/uploads/", "/blobs/", "/manifests/"} {
		if i := strings.LastIndex(path, k); i >= 0 {
			return path[:i], strings.Trim(k, "/"), path[i+len(k):]
		}
	}
	return "", "", path
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	repo, kind, rest := splitPath(r.URL.Path)
	p.mu.Lock()
	if kind == "" {
		p.requests[r.Method+" "+r.URL.Path]++
	} else {
		p.requests[r.Method+" "+repo+" "+kind]++
	}
	p.mu.Unlock()
	if kind == "blobs/uploads" && (r.Method == http.MethodPatch || r.Method == http.MethodPut) {
		p.upload(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	p.next.ServeHTTP(sw, r)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case r.Method == http.MethodHead && kind == "blobs" && sw.status == http.StatusOK:
		if h, err := v1.NewHash(rest); err == nil {
			p.found[h]++
		}
	case r.Method == http.MethodPost && kind == "blobs/uploads" && sw.status == http.StatusCreated:
		q := r.URL.Query()
		if h, err := v1.NewHash(q.Get("mount")); err == nil {
			p.mounted[h] = append(p.mounted[h], q.Get("from"))
		}
	case r.Method == http.MethodPut && kind == "manifests" && sw.status == http.StatusCreated:
		p.events = append(p.events, "manifest "+repo+":"+rest)
	}
}

// upload handles a blob PATCH or PUT. go-containerregistry sends a blob in
// one PATCH, so the digest of a PATCH body is the blob's digest; the PUT
// names it in ?digest=.
func (p *proxy) upload(w http.ResponseWriter, r *http.Request) {
	var blob v1.Hash
	if r.Method == http.MethodPatch {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(body)
		blob = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
		r.Body = io.NopCloser(bytes.NewReader(body))
	} else {
		var err error
		if blob, err = v1.NewHash(r.URL.Query().Get("digest")); err != nil {
			http.Error(w, "PUT without ?digest=", http.StatusBadRequest)
			return
		}
	}

	p.mu.Lock()
	key := r.Method + " " + blob.String()
	n := p.tries[key]
	p.tries[key]++
	f := pass
	if p.fault != nil {
		f = p.fault(r.Method, blob, n)
	}
	if f != pass {
		p.injected++
	}
	p.inflight++
	p.maxInflight = max(p.maxInflight, p.inflight)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inflight--
		p.mu.Unlock()
	}()

	switch f {
	case fail500:
		http.Error(w, "injected fault", http.StatusInternalServerError)
		return
	case hangUp:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err) // the test server speaks HTTP/1.1, which can hijack
		}
		conn.Close()
		return
	}
	if r.Method == http.MethodPatch {
		time.Sleep(p.delay)
	}
	sw := &statusWriter{ResponseWriter: w}
	p.next.ServeHTTP(sw, r)
	if r.Method == http.MethodPut && sw.status == http.StatusCreated {
		p.mu.Lock()
		p.commits[blob]++
		p.events = append(p.events, "blob "+blob.String())
		p.mu.Unlock()
	}
}

// fastRetry keeps go-containerregistry's default number of tries (3) but
// waits milliseconds instead of seconds between them.
var fastRetry = remote.WithRetryBackoff(remote.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3})

func newLayer(t *testing.T) v1.Layer {
	t.Helper()
	l, err := random.Layer(512, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newImage(t *testing.T, arch string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{OS: "linux", Architecture: arch, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layers...); err != nil {
		t.Fatal(err)
	}
	return img
}

// newIndex puts one image per architecture in an index.
func newIndex(t *testing.T, imgs map[string]v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		if img, ok := imgs[arch]; ok {
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		}
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
}

func digest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// blobs lists the config and layer digests of an image.
func blobs(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := []v1.Hash{m.Config.Digest}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// checkPulled pulls ref back and checks that it is want (an image or an
// index) and that every blob under it can be read in full; reading a
// remote blob to the end verifies its digest.
func checkPulled(t *testing.T, ref string, want interface{ Digest() (v1.Hash, error) }) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if w := digest(t, want); desc.Digest != w {
		t.Fatalf("%s is %s, pushed %s", ref, desc.Digest, w)
	}
	var imgs []v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m.Manifests {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatalf("%s: child %s: %v", ref, d.Digest, err)
			}
			imgs = append(imgs, img)
		}
	} else {
		img, err := desc.Image()
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	for _, img := range imgs {
		if _, err := img.RawConfigFile(); err != nil {
			t.Errorf("%s: config: %v", ref, err)
		}
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			rc, err := l.Compressed()
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			if err != nil {
				t.Errorf("%s: read layer %s: %v", ref, digest(t, l), err)
			}
		}
	}
}

// status asks the registry directly for a manifest or blob ("manifests",
// "blobs") and returns the HTTP status.
func status(t *testing.T, host, repo, kind, ref string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodHead, fmt.Sprintf("http://%s/v2/%s/%s/%s", host, repo, kind, ref), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", strings.Join([]string{string(types.OCIManifestSchema1), string(types.OCIImageIndex), string(types.DockerManifestSchema2), string(types.DockerManifestList)}, ","))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A registry that fails the first try of every blob upload, with a 500 on
// the PATCH or by hanging up on the PUT: the push retries and completes,
// and what it tagged pulls back whole.
func TestPushRetriesFailedUploads(t *testing.T) {
	p, host := newProxy(t)
	commits := 0
	p.setFault(func(method string, _ v1.Hash, n int) fault {
		switch {
		case n > 0:
			return pass
		case method == http.MethodPatch:
			return fail500
		}
		// Hang up on every second blob's first commit.
		commits++
		if commits%2 == 0 {
			return hangUp
		}
		return pass
	})

	img := newImage(t, "amd64", newLayer(t), newLayer(t), newLayer(t))
	idx := newIndex(t, map[string]v1.Image{
		"amd64": newImage(t, "amd64", newLayer(t), newLayer(t)),
		"arm64": newImage(t, "arm64", newLayer(t), newLayer(t)),
	})
	ctx := context.Background()
	r := &Registry{Ref: host + "/flaky/", Options: []remote.Option{fastRetry}}
	err := r.Write(ctx, []Image{
		{Repository: "img", Tags: []string{"1"}, Image: img},
		{Repository: "idx", Tags: []string{"1"}, Index: idx},
	})
	if err != nil {
		t.Fatalf("push through a flaky registry: %v", err)
	}
	// 4 blobs for the image, 3 per child of the index: each had its
	// PATCH failed once, and half of them their commit.
	if n := p.record().injected; n != 15 {
		t.Errorf("%d faults were injected, want 15; the proxy missed uploads", n)
	}
	checkPulled(t, host+"/flaky/img:1", img)
	checkPulled(t, host+"/flaky/idx:1", idx)
}

// A registry that never accepts one layer: the push fails naming the
// reference, sets none of the tags, leaves no manifest that points at the
// missing layer, and a later push to a healthy registry completes.
func TestPushFailingLayerLeavesNoTag(t *testing.T) {
	p, host := newProxy(t)
	bad := newLayer(t)
	badDigest := digest(t, bad)
	p.setFault(func(method string, blob v1.Hash, _ int) fault {
		if method == http.MethodPatch && blob == badDigest {
			return fail500
		}
		return pass
	})
	ctx := context.Background()
	tags := []string{"1.0", "1", "latest"}

	t.Run("image", func(t *testing.T) {
		img := newImage(t, "amd64", newLayer(t), bad, newLayer(t))
		r := &Registry{Ref: host + "/broken/img", Options: []remote.Option{fastRetry}}
		err := r.Write(ctx, []Image{{Repository: "img", Tags: tags, Image: img}})
		if err == nil {
			t.Fatal("push succeeded though a layer could not be uploaded")
		}
		if want := host + "/broken/img:1.0"; !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
		for _, tag := range tags {
			if s := status(t, host, "broken/img", "manifests", tag); s != http.StatusNotFound {
				t.Errorf("tag %s after a failed push: HTTP %d, want 404", tag, s)
			}
		}
		if s := status(t, host, "broken/img", "manifests", digest(t, img).String()); s != http.StatusNotFound {
			t.Errorf("manifest of the failed image: HTTP %d, want 404", s)
		}
	})

	t.Run("index", func(t *testing.T) {
		good := newImage(t, "amd64", newLayer(t))
		broken := newImage(t, "arm64", newLayer(t), bad)
		idx := newIndex(t, map[string]v1.Image{"amd64": good, "arm64": broken})
		r := &Registry{Ref: host + "/broken/idx", Options: []remote.Option{fastRetry}}
		err := r.Write(ctx, []Image{{Repository: "idx", Tags: tags, Index: idx}})
		if err == nil {
			t.Fatal("push succeeded though a layer could not be uploaded")
		}
		if want := host + "/broken/idx:1.0"; !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
		for _, tag := range tags {
			if s := status(t, host, "broken/idx", "manifests", tag); s != http.StatusNotFound {
				t.Errorf("tag %s after a failed push: HTTP %d, want 404", tag, s)
			}
		}
		for _, ref := range []string{digest(t, idx).String(), digest(t, broken).String()} {
			if s := status(t, host, "broken/idx", "manifests", ref); s != http.StatusNotFound {
				t.Errorf("manifest %s after a failed push: HTTP %d, want 404", ref, s)
			}
		}
		// The healthy child may have gone in whole, by digest; if its
		// manifest is there, so is every blob it names.
		if s := status(t, host, "broken/idx", "manifests", digest(t, good).String()); s == http.StatusOK {
			for _, b := range blobs(t, good) {
				if s := status(t, host, "broken/idx", "blobs", b.String()); s != http.StatusOK {
					t.Errorf("manifest %s is in but its blob %s is not (HTTP %d)", digest(t, good), b, s)
				}
			}
		}

		// Once the registry accepts the layer, the same push completes.
		p.setFault(nil)
		if err := r.Write(ctx, []Image{{Repository: "idx", Tags: tags, Index: idx}}); err != nil {
			t.Fatalf("push once the registry is healthy: %v", err)
		}
		for _, tag := range tags {
			checkPulled(t, host+"/broken/idx:"+tag, idx)
		}
	})
}

// A push that fails says what it failed on: the blob's digest and what
// the build says it is, or the platform manifest, and where the image is
// declared; an upload's PATCH, which fails most, carries no digest, so
// the request alone would not say.
func TestPushErrorNamesTheBlob(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	bad := newLayer(t)
	badDigest := digest(t, bad)

	t.Run("layer", func(t *testing.T) {
		p.setFault(func(method string, blob v1.Hash, _ int) fault {
			if method == http.MethodPatch && blob == badDigest {
				return hangUp
			}
			return pass
		})
		defer p.setFault(nil)
		img := newImage(t, "amd64", newLayer(t), bad)
		idx := newIndex(t, map[string]v1.Image{"amd64": img, "arm64": newImage(t, "arm64", newLayer(t))})
		about := map[v1.Hash]string{badDigest: "layer placing app of linux/amd64, pallet.yaml:14"}
		for _, im := range []Image{
			{Repository: "img", Tags: []string{"1"}, Image: img, Pos: "pallet.yaml:9", About: about},
			{Repository: "idx", Tags: []string{"1"}, Index: idx, Pos: "pallet.yaml:9", About: about},
		} {
			r := &Registry{Ref: host + "/named/" + im.Repository, Options: []remote.Option{fastRetry}}
			err := r.Write(ctx, []Image{im})
			want := "upload " + badDigest.String() + " (layer placing app of linux/amd64, pallet.yaml:14)"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "image "+im.Repository+" at pallet.yaml:9") {
				t.Errorf("push of %s: %v\nwant it to say %q and where the image is declared", im.Repository, err, want)
			}
		}
	})

	t.Run("manifest", func(t *testing.T) {
		arm := newImage(t, "arm64", newLayer(t))
		armDigest := digest(t, arm)
		host := refuseWhere(t, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+armDigest.String())
		})
		idx := newIndex(t, map[string]v1.Image{"amd64": newImage(t, "amd64", newLayer(t)), "arm64": arm})
		about := map[v1.Hash]string{armDigest: "image manifest of linux/arm64"}
		err := (&Registry{Ref: host + "/named/idx"}).Write(ctx, []Image{{Repository: "idx", Tags: []string{"1"}, Index: idx, About: about}})
		if want := "manifest " + armDigest.String() + " (image manifest of linux/arm64)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
		if s := status(t, host, "named/idx", "manifests", "1"); s != http.StatusNotFound {
			t.Errorf("the tag after a failed child manifest: HTTP %d, want 404", s)
		}
	})
}

// An image's attachments (SBOMs, provenance) are part of its push: one
// that cannot be written leaves the tag where it was, also for an image
// with a single tag, which would otherwise be pushed to the tag first.
func TestPushFailedAttachmentMovesNoTag(t *testing.T) {
	img := newImage(t, "amd64", newLayer(t))
	m, err := partial.Descriptor(img)
	if err != nil {
		t.Fatal(err)
	}
	sbom := mutate.Subject(newImage(t, "amd64", newLayer(t)), *m).(v1.Image)
	sbomDigest := digest(t, sbom)
	host := refuseWhere(t, func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+sbomDigest.String())
	})
	err = (&Registry{Ref: host + "/att/app:1"}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1"}, Image: img, Referrers: []v1.Image{sbom}}})
	if err == nil || !strings.Contains(err.Error(), "push an attachment of "+host+"/att/app:1") {
		t.Fatalf("got %v", err)
	}
	if s := status(t, host, "att/app", "manifests", "1"); s != http.StatusNotFound {
		t.Errorf("the tag after a failed attachment: HTTP %d, want 404", s)
	}
}

// Blobs, child manifests and the index itself (by digest) are all in
// before the first tag, and the other tags come only after it.
func TestPushTagsLast(t *testing.T) {
	p, host := newProxy(t)
	idx := newIndex(t, map[string]v1.Image{
		"amd64": newImage(t, "amd64", newLayer(t), newLayer(t)),
		"arm64": newImage(t, "arm64", newLayer(t)),
	})
	r := &Registry{Ref: host + "/tags/app"}
	if err := r.Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1.0", "1", "latest"}, Index: idx}}); err != nil {
		t.Fatal(err)
	}
	events := p.record().events
	first := slices.Index(events, "manifest tags/app:1.0")
	if first < 0 {
		t.Fatalf("no manifest PUT for the first tag in %q", events)
	}
	var blobCount, children int
	for i, e := range events {
		switch {
		case strings.HasPrefix(e, "blob "):
			blobCount++
			if i > first {
				t.Errorf("%s committed after the first tag", e)
			}
		case strings.HasPrefix(e, "manifest tags/app:sha256:"):
			children++
			if i > first {
				t.Errorf("child %s committed after the first tag", e)
			}
		case e == "manifest tags/app:1" || e == "manifest tags/app:latest":
			if i < first {
				t.Errorf("%s set before the first tag", e)
			}
		}
	}
	idxDigest, _ := idx.Digest()
	if !slices.Contains(events[:first], "manifest tags/app:"+idxDigest.String()) {
		t.Errorf("the index did not go in by digest before the tags: %q", events)
	}
	if blobCount != 5 || children != 3 {
		t.Errorf("saw %d blobs and %d manifests by digest go in, want 5 and 3 (two images, the index): %q", blobCount, children, events)
	}
	for _, tag := range []string{"1.0", "1", "latest"} {
		checkPulled(t, host+"/tags/app:"+tag, idx)
	}
}

// A blob the repository already has is found with HEAD and not uploaded
// again, and a blob two children of an index share is uploaded once.
func TestPushSkipsExistingBlobs(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	shared1, shared2 := newLayer(t), newLayer(t)
	a := newImage(t, "amd64", shared1, shared2, newLayer(t))
	b := newImage(t, "amd64", shared1, shared2, newLayer(t))
	if err := (&Registry{Ref: host + "/same/repo:a"}).Write(ctx, []Image{{Repository: "repo", Image: a}}); err != nil {
		t.Fatal(err)
	}
	p.reset()
	if err := (&Registry{Ref: host + "/same/repo:b"}).Write(ctx, []Image{{Repository: "repo", Image: b}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	for _, l := range []v1.Layer{shared1, shared2} {
		d := digest(t, l)
		if rec.commits[d] != 0 || rec.found[d] == 0 {
			t.Errorf("shared layer %s: uploaded %d times, found by HEAD %d times; want 0 and at least 1", d, rec.commits[d], rec.found[d])
		}
	}
	// blobs lists the config, then the layers: b's own are the first and last.
	for _, d := range []v1.Hash{blobs(t, b)[0], blobs(t, b)[3]} {
		if rec.commits[d] != 1 {
			t.Errorf("new blob %s uploaded %d times, want 1", d, rec.commits[d])
		}
	}
	checkPulled(t, host+"/same/repo:a", a)
	checkPulled(t, host+"/same/repo:b", b)

	p.reset()
	common := newLayer(t)
	idx := newIndex(t, map[string]v1.Image{
		"amd64": newImage(t, "amd64", common, newLayer(t)),
		"arm64": newImage(t, "arm64", common, newLayer(t)),
	})
	if err := (&Registry{Ref: host + "/same/idx:1"}).Write(ctx, []Image{{Repository: "idx", Index: idx}}); err != nil {
		t.Fatal(err)
	}
	if n := p.record().commits[digest(t, common)]; n != 1 {
		t.Errorf("layer shared by both platforms uploaded %d times, want 1", n)
	}
}

// With PREFIX/, a blob an earlier image of the same Write pushed to another
// repository is mounted from there, for images and for the children of an
// index, and what is pushed pulls back whole.
func TestPushMountsAcrossRepositories(t *testing.T) {
	p, host := newProxy(t)
	l1, l3 := newLayer(t), newLayer(t)
	one := newImage(t, "amd64", l1, newLayer(t))
	two := newIndex(t, map[string]v1.Image{
		"amd64": newImage(t, "amd64", l1, newLayer(t)),
		"arm64": newImage(t, "arm64", l3),
	})
	three := newImage(t, "arm64", l3, l1, newLayer(t))
	images := []Image{
		{Repository: "one", Tags: []string{"1"}, Image: one},
		{Repository: "two", Tags: []string{"1"}, Index: two},
		{Repository: "three", Tags: []string{"1"}, Image: three},
	}
	if err := (&Registry{Ref: host + "/p/"}).Write(context.Background(), images); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	// l1 goes to one, then is mounted into two and three from one; l3
	// goes to two, then is mounted into three.
	for _, c := range []struct {
		l    v1.Layer
		from []string
	}{{l1, []string{"p/one", "p/one"}}, {l3, []string{"p/two"}}} {
		d := digest(t, c.l)
		if got := rec.mounted[d]; !slices.Equal(got, c.from) {
			t.Errorf("layer %s: mounted from %q, want %q", d, got, c.from)
		}
		if rec.commits[d] != 1 {
			t.Errorf("layer %s uploaded %d times, want once (then mounted)", d, rec.commits[d])
		}
	}
	for _, im := range images {
		ref := host + "/p/" + im.Repository + ":1"
		if im.Index != nil {
			checkPulled(t, ref, im.Index)
		} else {
			checkPulled(t, ref, im.Image)
		}
	}
}

// An image built on a base pulled from another repository of the same
// registry gets the base's layers mounted: go-containerregistry does this
// for layers it read from a registry, in separate pushes too.
func TestPushMountsRemoteBaseLayers(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	b1, b2 := newLayer(t), newLayer(t)
	if err := (&Registry{Ref: host + "/base/os:1"}).Write(ctx, []Image{{Repository: "os", Image: newImage(t, "amd64", b1, b2)}}); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/base/os:1")
	if err != nil {
		t.Fatal(err)
	}
	base, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	app, err := mutate.AppendLayers(base, newLayer(t))
	if err != nil {
		t.Fatal(err)
	}
	p.reset()
	if err := (&Registry{Ref: host + "/apps/svc:1"}).Write(ctx, []Image{{Repository: "svc", Image: app}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	for _, l := range []v1.Layer{b1, b2} {
		d := digest(t, l)
		if got := rec.mounted[d]; !slices.Equal(got, []string{"base/os"}) || rec.commits[d] != 0 {
			t.Errorf("base layer %s: mounted from %q, uploaded %d times; want mounted from base/os, not uploaded", d, got, rec.commits[d])
		}
	}
	checkPulled(t, host+"/apps/svc:1", app)
}

// The blobs of an image are uploaded in parallel unless Jobs says
// otherwise.
func TestPushUploadsInParallel(t *testing.T) {
	for _, c := range []struct {
		name string
		jobs int
		want func(int) bool
	}{
		{"default", 0, func(n int) bool { return n > 1 }},
		{"jobs=1", 1, func(n int) bool { return n == 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, host := newProxy(t)
			p.delay = 50 * time.Millisecond
			img := newImage(t, "amd64", newLayer(t), newLayer(t), newLayer(t), newLayer(t))
			r := &Registry{Ref: host + "/par/img:1", Jobs: c.jobs}
			if err := r.Write(context.Background(), []Image{{Repository: "img", Image: img}}); err != nil {
				t.Fatal(err)
			}
			if n := p.record().maxInflight; !c.want(n) {
				t.Errorf("at most %d blob uploads were in flight at once", n)
			}
			checkPulled(t, host+"/par/img:1", img)
		})
	}
}

// refuseWhere answers 403 to the requests refuse picks, and passes the
// others to the registry.
func refuseWhere(t *testing.T, refuse func(r *http.Request) bool) string {
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if refuse(r) {
				http.Error(w, `{"errors":[{"code":"DENIED","message":"refused by the test"}]}`, http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	return reg.Host
}

// Several images under PREFIX/: one that cannot be pushed leaves every tag
// where it was, including those of the images pushed before it.
func TestPushFailureMovesNoTag(t *testing.T) {
	host := refuseWhere(t, func(r *http.Request) bool {
		repo, kind, _ := splitPath(r.URL.Path)
		return repo == "team/b" && kind == "blobs/uploads"
	})
	a := newImage(t, "amd64", newLayer(t))
	b := newImage(t, "amd64", newLayer(t))
	err := (&Registry{Ref: host + "/team/"}).Write(context.Background(), []Image{
		{Repository: "a", Tags: []string{"1"}, Image: a},
		{Repository: "b", Tags: []string{"1"}, Image: b},
	})
	if err == nil || !strings.Contains(err.Error(), "push "+host+"/team/b:1") {
		t.Fatalf("got %v", err)
	}
	ref, _ := name.ParseReference(host + "/team/a:1")
	if _, err := remote.Head(ref); err == nil {
		t.Error("team/a:1 was tagged although the push of team/b failed")
	}
}

// A tag that cannot be set after others were is reported with the tags
// that already moved.
func TestPushTagFailureSaysWhatMoved(t *testing.T) {
	host := refuseWhere(t, func(r *http.Request) bool {
		_, kind, rest := splitPath(r.URL.Path)
		return r.Method == http.MethodPut && kind == "manifests" && rest == "latest"
	})
	img := newImage(t, "amd64", newLayer(t))
	err := (&Registry{Ref: host + "/team/app"}).Write(context.Background(), []Image{{Repository: "app", Tags: []string{"1.0", "latest"}, Image: img}})
	if err == nil || !strings.Contains(err.Error(), "tag "+host+"/team/app:latest") ||
		!strings.Contains(err.Error(), "these tags already point at this build: "+host+"/team/app:1.0") {
		t.Fatalf("got %v", err)
	}
	checkPulled(t, host+"/team/app:1.0", img)
}

// One Write to one repository pings the registry (and would exchange a
// token) once, whatever number of manifests and tags it puts there: each
// tag after the first costs its PUT alone, and no blob is asked for twice.
func TestPushAsksOncePerRepository(t *testing.T) {
	p, host := newProxy(t)
	img := newImage(t, "amd64", newLayer(t), newLayer(t))
	m, err := partial.Descriptor(img)
	if err != nil {
		t.Fatal(err)
	}
	sbom := mutate.Subject(newImage(t, "amd64", newLayer(t)), *m).(v1.Image)
	tags := []string{"1.0", "1", "latest"}
	r := &Registry{Ref: host + "/once/app"}
	if err := r.Write(context.Background(), []Image{{Repository: "app", Tags: tags, Image: img, Referrers: []v1.Image{sbom}}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	if n := rec.requests["GET /v2/"]; n != 1 {
		t.Errorf("the registry was pinged %d times, want once", n)
	}
	// The image's config and two layers, the SBOM's config and layer.
	if n := rec.requests["HEAD once/app blobs"]; n != 5 {
		t.Errorf("%d HEADs of blobs for 5 blobs", n)
	}
	for _, tag := range tags {
		if n := slices.Index(rec.events, "manifest once/app:"+tag); n < 0 {
			t.Errorf("tag %s was not PUT: %q", tag, rec.events)
		}
		checkPulled(t, host+"/once/app:"+tag, img)
	}
	if n := rec.requests["PUT once/app manifests"]; n != len(rec.events)-5 {
		t.Errorf("%d manifest PUTs for %d manifests committed: %q", n, len(rec.events)-5, rec.events)
	}
}

// fileLayer writes a new layer's blob to disk and opens it as the cache
// does: a layer.File, verified or not.
func fileLayer(t *testing.T, verified bool) (*layer.File, string) {
	t.Helper()
	l := newLayer(t)
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	diffID, err := l.DiffID()
	if err != nil {
		t.Fatal(err)
	}
	f := layer.Open(path, digest(t, l), diffID, int64(len(b)), layer.Gzip)
	f.Verified = verified
	return f, path
}

// Layer blobs on disk, as the cache serves them, land whole: the one the
// cache verified (sent by the kernel over plain HTTP) and the one it did
// not (hashed as it is sent). A damaged blob the cache did not verify
// fails the push, and no tag points at it.
func TestPushLayerFiles(t *testing.T) {
	_, host := newProxy(t)
	ctx := context.Background()
	checked, _ := fileLayer(t, true)
	unchecked, _ := fileLayer(t, false)
	img := newImage(t, "amd64", checked, unchecked)
	if err := (&Registry{Ref: host + "/files/app:1"}).Write(ctx, []Image{{Repository: "app", Image: img}}); err != nil {
		t.Fatal(err)
	}
	checkPulled(t, host+"/files/app:1", img)

	damaged, path := fileLayer(t, false)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := newImage(t, "amd64", damaged)
	err = (&Registry{Ref: host + "/files/bad:1", Options: []remote.Option{fastRetry}}).Write(ctx, []Image{{Repository: "bad", Image: bad}})
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("push of a damaged blob: %v", err)
	}
	if s := status(t, host, "files/bad", "manifests", "1"); s != http.StatusNotFound {
		t.Errorf("tag of the damaged image: HTTP %d, want 404", s)
	}
	if s := status(t, host, "files/bad", "blobs", digest(t, damaged).String()); s != http.StatusNotFound {
		t.Errorf("damaged blob: HTTP %d, want 404", s)
	}
}

// memSources is a Sources kept in memory (the cache's, on disk, is
// tested in internal/cache).
type memSources map[string]map[string]string

func (m memSources) Lookup(registry string) map[string]string { return maps.Clone(m[registry]) }

func (m memSources) Remember(registry string, blobs map[string]string) error {
	if m[registry] == nil {
		m[registry] = map[string]string{}
	}
	maps.Copy(m[registry], blobs)
	return nil
}

// A later Write, with Sources, mounts the blobs an earlier Write pushed to
// another repository of the registry instead of uploading them, as docker
// push does; what it pushes pulls back whole, and Sources then knows the
// new repository.
func TestPushMountsFromEarlierWrites(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	src := memSources{}
	s1, s2 := newLayer(t), newLayer(t)
	a := newImage(t, "amd64", s1, s2, newLayer(t))
	b := newImage(t, "amd64", s1, s2, newLayer(t))
	if err := (&Registry{Ref: host + "/first/a:1", Sources: src}).Write(ctx, []Image{{Repository: "a", Image: a}}); err != nil {
		t.Fatal(err)
	}
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range blobs(t, a) {
		if got := src[reg.Name()][d.String()]; got != "first/a" {
			t.Fatalf("after the first push, Sources places %s in %q, want first/a", d, got)
		}
	}
	p.reset()
	if err := (&Registry{Ref: host + "/second/b:1", Sources: src}).Write(ctx, []Image{{Repository: "b", Image: b}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	for _, l := range []v1.Layer{s1, s2} {
		d := digest(t, l)
		if got := rec.mounted[d]; !slices.Equal(got, []string{"first/a"}) || rec.commits[d] != 0 {
			t.Errorf("shared layer %s: mounted from %q, uploaded %d times; want mounted from first/a, not uploaded", d, got, rec.commits[d])
		}
	}
	own := blobs(t, b)[3]
	if rec.commits[own] != 1 || len(rec.mounted[own]) != 0 {
		t.Errorf("b's own layer: uploaded %d times, mounted from %q; want uploaded once", rec.commits[own], rec.mounted[own])
	}
	checkPulled(t, host+"/second/b:1", b)
	for _, d := range blobs(t, b) {
		if got := src[reg.Name()][d.String()]; got != "second/b" {
			t.Errorf("after the second push, Sources places %s in %q, want second/b", d, got)
		}
	}

	// Without Sources, nothing is carried over: the same image to a third
	// repository uploads every blob.
	p.reset()
	if err := (&Registry{Ref: host + "/third/c:1"}).Write(ctx, []Image{{Repository: "c", Image: b}}); err != nil {
		t.Fatal(err)
	}
	rec = p.record()
	for _, d := range blobs(t, b) {
		if rec.commits[d] != 1 || len(rec.mounted[d]) != 0 {
			t.Errorf("without Sources, blob %s: uploaded %d times, mounted from %q; want uploaded once", d, rec.commits[d], rec.mounted[d])
		}
	}
}

// A remembered source that no longer holds the blob (or never did) costs
// nothing but the mount attempt: the registry answers with an upload, the
// push completes, and Sources is corrected.
func TestPushStaleSourceUploads(t *testing.T) {
	p, host := newProxy(t)
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	l := newLayer(t)
	img := newImage(t, "amd64", l)
	d := digest(t, l)
	src := memSources{reg.Name(): {d.String(): "gone/away"}}
	if err := (&Registry{Ref: host + "/here/x:1", Sources: src}).Write(context.Background(), []Image{{Repository: "x", Image: img}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	if rec.commits[d] != 1 || len(rec.mounted[d]) != 0 {
		t.Errorf("layer with a stale source: uploaded %d times, mounted from %q; want uploaded once", rec.commits[d], rec.mounted[d])
	}
	if p.record().requests["POST here/x blobs/uploads"] == 0 {
		t.Error("no upload was started")
	}
	checkPulled(t, host+"/here/x:1", img)
	if got := src[reg.Name()][d.String()]; got != "here/x" {
		t.Errorf("Sources places the layer in %q, want here/x", got)
	}
}

// tokenGate puts a bearer-token server in front of a registry, as Docker
// Hub and most hosted registries have. Its token endpoint refuses, with
// status denied, any request naming a scope on a repository under
// "denied/", as some token servers do rather than leave the scope out of
// the token; it counts the token requests.
type tokenGate struct {
	next   http.Handler
	denied int
	mu     sync.Mutex
	tokens int
}

func (g *tokenGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		g.mu.Lock()
		g.tokens++
		g.mu.Unlock()
		for _, sc := range r.URL.Query()["scope"] {
			if strings.Contains(sc, ":denied/") {
				http.Error(w, `{"errors":[{"code":"DENIED","message":"no access to `+sc+`"}]}`, g.denied)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"token":"granted"}`)
		return
	}
	if r.Header.Get("Authorization") != "Bearer granted" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="test"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"token needed"}]}`, http.StatusUnauthorized)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *tokenGate) tokenRequests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tokens
}

// A token server that refuses the pull scope on a remembered source, with
// whatever status, does not fail the push: the image is pushed again
// without remembered sources.
func TestPushRefusedSourceScope(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusBadRequest, http.StatusNotFound, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			gate := &tokenGate{denied: status}
			reg := testregistry.Start(t, func(h http.Handler) http.Handler { gate.next = h; return gate })
			r, err := name.NewRegistry(reg.Host)
			if err != nil {
				t.Fatal(err)
			}
			l, other := newLayer(t), newLayer(t)
			img := newImage(t, "amd64", l)
			second := newImage(t, "amd64", l, other)
			src := memSources{r.Name(): {digest(t, l).String(): "denied/secret"}}
			out := &Registry{Ref: reg.Host + "/p/", Sources: src}
			images := []Image{{Repository: "one", Tags: []string{"1"}, Image: img}, {Repository: "two", Tags: []string{"1"}, Image: second}}
			if err := out.Write(context.Background(), images); err != nil {
				t.Fatal(err)
			}
			// The check pulls through the gate, with a token.
			for _, im := range images {
				ref, err := name.ParseReference(reg.Host + "/p/" + im.Repository + ":1")
				if err != nil {
					t.Fatal(err)
				}
				got, err := remote.Image(ref)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := digest(t, got), digest(t, im.Image); g != w {
					t.Errorf("%s pulls as %s, want %s", ref, g, w)
				}
			}
			if got := src[r.Name()][digest(t, l).String()]; got != "p/one" {
				t.Errorf("Sources places the layer in %q, want p/one", got)
			}
		})
	}
}

// A push that fails without having used a remembered source (here: the
// target itself is refused) is not tried twice: wrong credentials cost
// one attempt, as without Sources.
func TestPushFailureWithoutRememberedSourceIsNotRetried(t *testing.T) {
	attempts := func(sources Sources) int {
		gate := &tokenGate{denied: http.StatusForbidden}
		reg := testregistry.Start(t, func(h http.Handler) http.Handler { gate.next = h; return gate })
		out := &Registry{Ref: reg.Host + "/denied/target:1", Sources: sources}
		if err := out.Write(context.Background(), []Image{{Repository: "target", Image: newImage(t, "amd64", newLayer(t))}}); err == nil {
			t.Fatal("a push to a refused repository succeeded")
		}
		return gate.tokenRequests()
	}
	without := attempts(nil)
	// A remembered source for a blob this image does not have.
	withUnrelated := attempts(rememberAny{})
	if without == 0 || withUnrelated != without {
		t.Errorf("token requests: %d without Sources, %d with an unrelated remembered source; want the same, not zero", without, withUnrelated)
	}
}

// rememberAny places one blob no test image has in another repository of
// whatever registry it is asked about.
type rememberAny struct{}

func (rememberAny) Lookup(string) map[string]string {
	return map[string]string{"sha256:" + strings.Repeat("ab", 32): "elsewhere/repo"}
}

func (rememberAny) Remember(string, map[string]string) error { return nil }
