package output

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
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
	r.settleEarly()
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
	r.settleEarly()
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
