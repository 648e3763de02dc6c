package output

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/testregistry"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// Layers handed to Prepare are uploaded before Write, each once; Write
// then finds them (HEAD) instead of sending them again, and adds the
// config and the manifest. The pusher of the early uploads serves Write:
// one ping and token per repository in all.
func TestPrepareUploadsLayersBeforeWrite(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	l1, l2 := newLayer(t), newLayer(t)
	img := newImage(t, "amd64", l1, l2)
	r := &Registry{Ref: host + "/early/app:v1"}
	defer r.Finish()
	for _, l := range []v1.Layer{l1, l2, l1} { // the repeat is not sent again
		r.Prepare(ctx, "app", []string{"v1"}, l)
	}
	r.early.wg.Wait() // the early uploads are over
	rec := p.record()
	for _, l := range []v1.Layer{l1, l2} {
		if n := rec.commits[digest(t, l)]; n != 1 {
			t.Errorf("layer %s uploaded %d times before Write, want 1", digest(t, l), n)
		}
	}
	if m := manifestEvents(rec.events); len(m) != 0 {
		t.Errorf("manifests written before Write: %v", m)
	}
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	rec = p.record()
	for _, l := range []v1.Layer{l1, l2} {
		if n := rec.commits[digest(t, l)]; n != 1 {
			t.Errorf("layer %s uploaded %d times in all, want 1", digest(t, l), n)
		}
	}
	if n := rec.requests["GET /v2/"]; n != 1 {
		t.Errorf("%d pings, want 1", n)
	}
	checkPulled(t, host+"/early/app:v1", img)
}

// A build that fails after its first layers were uploaded leaves blobs
// and no tag: Finish stops what is still running.
func TestPrepareWithoutWriteMovesNoTag(t *testing.T) {
	p, host := newProxy(t)
	ctx := context.Background()
	r := &Registry{Ref: host + "/early/failed:v1"}
	l := newLayer(t)
	r.Prepare(ctx, "failed", []string{"v1"}, l)
	r.Finish()
	if m := manifestEvents(p.record().events); len(m) != 0 {
		t.Errorf("manifests written: %v", m)
	}
	ref := host + "/early/failed:v1"
	if _, err := remote.Head(mustTag(t, ref)); err == nil {
		t.Errorf("%s exists after a build that never wrote", ref)
	}
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// manifestEvents are the manifest commits among a proxy's events.
func manifestEvents(events []string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, "manifest ") {
			out = append(out, e)
		}
	}
	return out
}

// A registry that fails an early upload most likely fails the next: the
// first failure stops the early uploads still to go, each of which would
// otherwise spend its own retries (a stalled registry a stall timeout
// each) before Write, which tries again and names what fails.
func TestPrepareStopsAtTheFirstFailure(t *testing.T) {
	p, host := newProxy(t)
	p.setFault(func(method string, _ v1.Hash, _ int) fault {
		if method == http.MethodPatch {
			return fail500
		}
		return pass
	})
	ctx := context.Background()
	r := &Registry{Ref: host + "/early/down:v1", Options: []remote.Option{fastRetry}}
	defer r.Finish()
	var ls []v1.Layer
	for range 3 * earlyJobs {
		l := newLayer(t)
		ls = append(ls, l)
		r.Prepare(ctx, "down", []string{"v1"}, l)
	}
	r.early.wg.Wait() // the early uploads are over
	// go-containerregistry tries each upload 3 times; at most earlyJobs
	// were under way when the first gave up.
	if n := p.record().injected; n > 3*earlyJobs {
		t.Errorf("%d uploads of %d layers were tried before Write, want at most %d", n, len(ls), 3*earlyJobs)
	}
	err := r.Write(ctx, []Image{{Repository: "down", Tags: []string{"v1"}, Image: newImage(t, "amd64", ls...)}})
	if err == nil || !strings.Contains(err.Error(), "upload sha256:") {
		t.Errorf("Write to a registry that takes no blob: %v", err)
	}
}

// stallingRegistry starts a registry that gives no answer to a request
// stall picks (n counts the earlier requests with the same method and
// path) until the client gives up on it; hits counts the requests it
// picked, all counts every request.
func stallingRegistry(t *testing.T, stall func(r *http.Request, n int) bool) (host string, hits, all *atomic.Int64) {
	hits, all = &atomic.Int64{}, &atomic.Int64{}
	var mu sync.Mutex
	seen := map[string]int{}
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			all.Add(1)
			mu.Lock()
			key := r.Method + " " + r.URL.Path
			n := seen[key]
			seen[key]++
			mu.Unlock()
			if !stall(r, n) {
				h.ServeHTTP(w, r)
				return
			}
			hits.Add(1)
			<-r.Context().Done()
		})
	})
	return reg.Host, hits, all
}

// isBlobHead picks the HEADs go-containerregistry asks with whether the
// repository has a blob.
func isBlobHead(r *http.Request) bool {
	return r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/blobs/sha256:")
}

// stallBounds is a context whose registry calls give up on a request
// after 400 ms without a byte: long enough for the requests the tests
// let through to be answered under -race on a loaded machine (100 ms
// was not, at load 20), short enough for the stalled ones to cost little.
func stallBounds() context.Context {
	return regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: 400 * time.Millisecond}})
}

// A registry that stalls every request: once the early uploads' retries
// ended on a stall, Write sends it nothing and fails at once with that
// stall, naming the request and the blob. Write used to try every blob
// again, each a stall timeout a try: 20 s at --stall-timeout 2s.
func TestPushToStalledRegistryFailsAfterOneStall(t *testing.T) {
	host, stalled, all := stallingRegistry(t, func(r *http.Request, _ int) bool { return isBlobHead(r) })
	ctx := stallBounds()
	r := &Registry{Ref: host + "/stalled/app:v1", Options: []remote.Option{fastRetry}}
	defer r.Finish()
	var ls []v1.Layer
	for range 2 * earlyJobs {
		l := newLayer(t)
		ls = append(ls, l)
		r.Prepare(ctx, "app", []string{"v1"}, l)
	}
	r.early.wg.Wait() // the early uploads are over
	early, before := stalled.Load(), all.Load()
	if early == 0 || early > 3*earlyJobs {
		t.Fatalf("%d HEADs stalled during the early uploads, want 1 to %d", early, 3*earlyJobs)
	}
	img := newImage(t, "amd64", ls...)
	about := map[v1.Hash]string{}
	for i, l := range ls {
		about[digest(t, l)] = fmt.Sprintf("layer %d", i)
	}
	err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img, About: about}})
	var se *regauth.StallError
	if !errors.As(err, &se) {
		t.Fatalf("Write to a registry that stalled: %v, want its *regauth.StallError", err)
	}
	for _, want := range []string{"HEAD http://" + host + "/v2/stalled/app/blobs/sha256:", "stalled: nothing moved", "(layer ", "stalled past its retries"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Write's error does not say %q: %v", want, err)
		}
	}
	if n := all.Load() - before; n != 0 {
		t.Errorf("Write sent %d requests to a registry that had stalled through its retries, want none (%d stalled)", n, stalled.Load()-early)
	}
}

// A registry that stalls a request once and then answers is pushed to:
// the retries get through, and nothing is given up.
func TestPushToRegistryStallingOnceSucceeds(t *testing.T) {
	host, stalled, _ := stallingRegistry(t, func(r *http.Request, n int) bool { return isBlobHead(r) && n == 0 })
	ctx := stallBounds()
	r := &Registry{Ref: host + "/once/app:v1", Options: []remote.Option{fastRetry}}
	defer r.Finish()
	l1, l2 := newLayer(t), newLayer(t)
	for _, l := range []v1.Layer{l1, l2} {
		r.Prepare(ctx, "app", []string{"v1"}, l)
	}
	img := newImage(t, "amd64", l1, l2)
	if err := r.Write(ctx, []Image{{Repository: "app", Tags: []string{"v1"}, Image: img}}); err != nil {
		t.Fatal(err)
	}
	if stalled.Load() == 0 {
		t.Fatal("no request stalled: the test tested nothing")
	}
	checkPulled(t, host+"/once/app:v1", img)
}

// A push that stalled is not pushed again without remembered sources,
// as one refused a remembered source's scope is: a second try costs
// the stall timeout and retries again.
func TestPushStalledWithRememberedSourceIsNotRetried(t *testing.T) {
	l := newLayer(t)
	host, stalled, _ := stallingRegistry(t, func(r *http.Request, _ int) bool {
		return isBlobHead(r) && strings.HasSuffix(r.URL.Path, digest(t, l).String())
	})
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	src := memSources{reg.Name(): {digest(t, l).String(): "elsewhere/repo"}}
	r := &Registry{Ref: host + "/remembered/app:v1", Options: []remote.Option{fastRetry}, Sources: src}
	err = r.Write(stallBounds(), []Image{{Repository: "app", Image: newImage(t, "amd64", l)}})
	var se *regauth.StallError
	if !errors.As(err, &se) {
		t.Fatalf("Write to a registry that stalled: %v, want its *regauth.StallError", err)
	}
	if n := stalled.Load(); n != 3 {
		t.Errorf("the layer's HEAD stalled %d times, want 3 (go-containerregistry's tries, once)", n)
	}
}
