package output

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// orderGate is a tokenGate that also notes, in order, the pings, token
// requests and blob requests it sees.
type orderGate struct {
	tokenGate
	mu     sync.Mutex
	events []string
}

func (g *orderGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev string
	switch {
	case r.URL.Path == "/v2/":
		ev = "ping"
	case r.URL.Path == "/token":
		ev = "token"
	case strings.Contains(r.URL.Path, "/blobs/"):
		ev = "blob"
	case strings.Contains(r.URL.Path, "/manifests/"):
		ev = "manifest"
	}
	g.mu.Lock()
	g.events = append(g.events, ev)
	g.mu.Unlock()
	g.tokenGate.ServeHTTP(w, r)
}

func (g *orderGate) seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.events...)
}

func count(events []string, ev string) int {
	n := 0
	for _, e := range events {
		if e == ev {
			n++
		}
	}
	return n
}

// Open pings the registry and takes a token for the push before any
// blob is handed over, and the push that follows (early uploads, Write)
// uses them: one ping and one token in all, the first two requests.
func TestOpenAuthenticatesBeforeTheFirstBlob(t *testing.T) {
	gate := &orderGate{}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler { gate.next = h; return gate })
	ctx := context.Background()
	r := &Registry{Ref: reg.Host + "/early/app:v1"}
	defer r.Finish()
	r.Open(ctx, "app", []string{"v1"})
	r.Open(ctx, "app", []string{"v1"}) // the same repository: nothing more
	r.early.wg.Wait()
	if got := gate.seen(); count(got, "token") != 1 || count(got, "blob") != 0 {
		t.Fatalf("after Open the registry saw %v, want a ping and one token, no blob", got)
	}
	l := newLayer(t)
	img := newImage(t, "amd64", l, newLayer(t))
	r.Prepare(ctx, "app", []string{"v1"}, l)
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	got := gate.seen()
	if count(got, "token") != 1 {
		t.Errorf("%d token requests in the push, want 1: %v", count(got, "token"), got)
	}
	// go-containerregistry pings with each scheme a loopback host may
	// take, and the 401 that names the token server is an answer to a
	// ping too: every ping comes before the token, none after.
	tok := strings.Index(strings.Join(got, " "), "token")
	if strings.Contains(strings.Join(got, " ")[tok:], "ping") {
		t.Errorf("a ping after the token: %v", got)
	}
}

// An Open that fails (the token server refuses) fails nothing itself:
// Write, which pings and authenticates again, reports the refusal,
// naming the registry, as without Open.
func TestOpenRefusedIsLeftToWrite(t *testing.T) {
	gate := &orderGate{tokenGate: tokenGate{denied: http.StatusForbidden}}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler { gate.next = h; return gate })
	ctx := context.Background()
	r := &Registry{Ref: reg.Host + "/denied/app:v1"}
	defer r.Finish()
	r.Open(ctx, "app", []string{"v1"})
	r.early.wg.Wait()
	if got := gate.seen(); count(got, "token") != 1 {
		t.Fatalf("Open made %d token requests, want 1: %v", count(got, "token"), got)
	}
	err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: newImage(t, "amd64", newLayer(t))}})
	if err == nil {
		t.Fatal("a push to a refused repository succeeded")
	}
	if !strings.Contains(err.Error(), reg.Host) {
		t.Errorf("the refusal does not name the registry %s: %v", reg.Host, err)
	}
	if got := gate.seen(); count(got, "token") != 2 {
		t.Errorf("%d token requests, want Open's and Write's: %v", count(got, "token"), got)
	}
}

// A build opens the push before it opens its cache, and so before it sets
// Sources: the hints Sources gives are still taken, and a remembered blob
// is mounted rather than uploaded.
func TestOpenBeforeSourcesStillMounts(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	l := newLayer(t)
	if err := (&Registry{Ref: host + "/there/a:1"}).Write(ctx, []Image{{Repository: "a", Image: newImage(t, "amd64", l)}}); err != nil {
		t.Fatal(err)
	}
	regName, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	p.reset()
	r := &Registry{Ref: host + "/here/b:1"}
	defer r.Finish()
	r.Open(ctx, "b", []string{"1"})
	r.Sources = memSources{sourcesKey(regName): {digest(t, l).String(): "there/a"}}
	r.Prepare(ctx, "b", []string{"1"}, l)
	if err := r.Write(ctx, []Image{{Repository: "b", Image: newImage(t, "amd64", l)}}); err != nil {
		t.Fatal(err)
	}
	rec := p.record()
	if from := rec.mounted[digest(t, l)]; len(from) != 1 || from[0] != "there/a" {
		t.Errorf("the remembered layer was mounted from %v, want there/a once; requests %v", from, rec.requests)
	}
	if n := rec.commits[digest(t, l)]; n != 0 {
		t.Errorf("the remembered layer was uploaded %d times", n)
	}
}

// refuseFirstPing answers the first ping 404, as a registry not yet up
// behind its proxy might, and passes everything else on.
type refuseFirstPing struct {
	next  http.Handler
	mu    sync.Mutex
	pings int
}

func (h *refuseFirstPing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v2/" {
		h.mu.Lock()
		h.pings++
		first := h.pings == 1
		h.mu.Unlock()
		if first {
			http.Error(w, "not yet", http.StatusNotFound)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// An Open whose ping fails fails no push: Write pings again, and pushes.
func TestOpenFailedPingLeavesThePushToWrite(t *testing.T) {
	h := &refuseFirstPing{}
	reg := testregistry.Start(t, func(next http.Handler) http.Handler { h.next = next; return h })
	ctx := context.Background()
	r := &Registry{Ref: reg.Host + "/later/app:v1"}
	defer r.Finish()
	r.Open(ctx, "app", []string{"v1"})
	r.early.wg.Wait()
	img := newImage(t, "amd64", newLayer(t))
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatalf("the push failed after Open's ping did: %v", err)
	}
	h.mu.Lock()
	pings := h.pings
	h.mu.Unlock()
	if pings != 2 {
		t.Errorf("%d pings, want Open's (refused) and Write's", pings)
	}
	checkPulled(t, reg.Host+"/later/app:v1", img)
}

// holdCommit holds the commit (the PUT) of one blob until the commit of
// another has been answered, and notes the order of the commits.
type holdCommit struct {
	next          http.Handler
	held, waitFor string // digests
	in            chan struct{}
	once          sync.Once
	mu            sync.Mutex
	commits       []string
}

func (h *holdCommit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := r.URL.Query().Get("digest")
	if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/blobs/uploads/") || d == "" {
		h.next.ServeHTTP(w, r)
		return
	}
	if d == h.held {
		// Not a bound on the push: the wait ends as soon as the other
		// blob is in, and only a push that never sends it while this
		// one is held waits it out.
		select {
		case <-h.in:
		case <-time.After(20 * time.Second):
		}
	}
	h.next.ServeHTTP(w, r)
	h.mu.Lock()
	h.commits = append(h.commits, d)
	h.mu.Unlock()
	if d == h.waitFor {
		h.once.Do(func() { close(h.in) })
	}
}

// Write sends the blobs the early uploads do not cover (here the
// config) while an early upload is still going, within Jobs, where before
// it waited for every early upload to end first: the config went up
// after the largest layer, on the push's critical path.
func TestWriteDoesNotWaitForOtherBlobsEarlyUploads(t *testing.T) {
	l := newLayer(t)
	img := newImage(t, "amd64", l)
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	h := &holdCommit{held: digest(t, l).String(), waitFor: cfg.String(), in: make(chan struct{})}
	reg := testregistry.Start(t, func(next http.Handler) http.Handler { h.next = next; return h })
	ctx := context.Background()
	r := &Registry{Ref: reg.Host + "/overlap/app:v1", Jobs: 2}
	defer r.Finish()
	r.Open(ctx, "app", []string{"v1"})
	r.Prepare(ctx, "app", []string{"v1"}, l)
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	commits := slices.Clone(h.commits)
	h.mu.Unlock()
	if want := []string{cfg.String(), digest(t, l).String()}; !slices.Equal(commits, want) {
		t.Errorf("blobs committed in the order %v, want the config's while the layer's early upload went on: %v", commits, want)
	}
	checkPulled(t, reg.Host+"/overlap/app:v1", img)
}

// Write's uploads and the early ones still going share Jobs: no more
// blobs go up at once than it says.
func TestWriteAndEarlyUploadsShareJobs(t *testing.T) {
	p, host := newProxy(t)
	p.delay = 50 * time.Millisecond // uploads that may overlap do
	ls := []v1.Layer{newLayer(t), newLayer(t), newLayer(t), newLayer(t)}
	img := newImage(t, "amd64", ls...)
	ctx := context.Background()
	r := &Registry{Ref: host + "/shared/app:v1", Jobs: 2}
	defer r.Finish()
	r.Open(ctx, "app", []string{"v1"})
	for _, l := range ls[2:] { // the last: Write starts on the others at once
		r.Prepare(ctx, "app", []string{"v1"}, l)
	}
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	if n := p.record().maxInflight; n > 2 {
		t.Errorf("%d blob uploads in flight at once, over Jobs (2)", n)
	}
	checkPulled(t, host+"/shared/app:v1", img)
}

// An early upload that fails while Write goes on is tried again by
// Write, which waited for it: the push succeeds. The layer's first PATCH
// fails through go-containerregistry's retries (the first three).
func TestWriteRetriesAnEarlyUploadThatFailed(t *testing.T) {
	p, host := newProxy(t)
	l := newLayer(t)
	bad := digest(t, l)
	p.setFault(func(method string, blob v1.Hash, n int) fault {
		if method == http.MethodPatch && blob == bad && n < 3 {
			return fail500
		}
		return pass
	})
	img := newImage(t, "amd64", l, newLayer(t))
	ctx := context.Background()
	r := &Registry{Ref: host + "/again/app:v1", Options: []remote.Option{fastRetry}}
	defer r.Finish()
	r.Open(ctx, "app", []string{"v1"})
	r.early.opens.Wait()
	r.Prepare(ctx, "app", []string{"v1"}, l)
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	if rec := p.record(); rec.commits[bad] != 1 || rec.injected < 3 {
		t.Errorf("the layer was committed %d times after %d failed tries, want once after 3", rec.commits[bad], rec.injected)
	}
	checkPulled(t, host+"/again/app:v1", img)
}
