package output

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

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
