package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// job is one CI job's cache: an artifact and a layer of its own and, if
// shared is set, a layer under that key, which other jobs build too (each
// with other bytes, as builds that are not reproducible make them).
type job struct {
	name             string
	c                *Cache
	log              *logLines
	art, lay, shared string
	layer, sharedE   LayerEntry
}

func newJob(t *testing.T, name, shared string) *job {
	t.Helper()
	c, log := openCache(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	j := &job{name: name, c: c, log: log, art: Key("artifact", name), lay: Key("layer", name), shared: shared}
	commitArtifact(t, c, j.art, artifactFiles(name, sha([]byte(name))))
	j.layer, _ = putLayer(t, c, j.lay, bytes.Repeat([]byte("layer of "+name+" "), 100))
	if shared != "" {
		j.sharedE, _ = putLayer(t, c, shared, []byte("the shared layer as "+name+" built it"))
	}
	return j
}

// keys are the entry ids the job exports.
func (j *job) keys() []string {
	ids := []string{annArtifact + "=" + j.art, annLayer + "=" + j.lay}
	if j.shared != "" {
		ids = append(ids, annLayer+"="+j.shared)
	}
	return ids
}

// tagManifest is the manifest the tag points at now.
func tagManifest(t *testing.T, ref string) v1.Manifest {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkHolds fails unless the cache at ref lists every job's entries once
// and a fresh cache imports each of them with its content.
func checkHolds(t *testing.T, ref string, jobs ...*job) {
	t.Helper()
	m := tagManifest(t, ref)
	count := map[string]int{}
	for _, d := range m.Layers {
		count[entryID(d)]++
	}
	for _, j := range jobs {
		for _, id := range j.keys() {
			if count[id] != 1 {
				t.Errorf("%s is listed %d times, want once", id, count[id])
			}
		}
	}
	c, log := importing(t, ref)
	for _, j := range jobs {
		dir, ok := c.Artifact(j.art)
		if !ok {
			t.Errorf("artifact of %s not imported", j.name)
		} else if b, err := os.ReadFile(filepath.Join(dir, "tree", "bin", j.name)); err != nil || string(b) != "binary "+j.name {
			t.Errorf("artifact of %s imported holding %q (%v)", j.name, b, err)
		}
		if e, _, ok := c.Layer(j.lay); !ok || e != j.layer {
			t.Errorf("layer of %s imported as %+v %v, want %+v", j.name, e, ok, j.layer)
		}
	}
	if shared := jobs[0].shared; shared != "" {
		e, _, ok := c.Layer(shared)
		found := false
		for _, j := range jobs {
			found = found || e == j.sharedE
		}
		if !ok || !found {
			t.Errorf("the shared layer imported as %+v %v, not one a job exported", e, ok)
		}
	}
	if log.String() != "" {
		t.Errorf("importing warned:\n%s", log)
	}
}

// Jobs exporting to one tag at the same moment keep each other's entries,
// and those of an export made before them.
func TestConcurrentExportsKeepEveryEntry(t *testing.T) {
	var mu sync.Mutex
	writes := 0
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
				mu.Lock()
				writes++
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/ci/cache:main"
	ctx := context.Background()
	earlier := newJob(t, "earlier", "")
	if err := earlier.c.ExportTo(ctx, ref); err != nil {
		t.Fatal(err)
	}
	shared := Key("layer", "shared")
	jobs := make([]*job, 4)
	for i := range jobs {
		jobs[i] = newJob(t, fmt.Sprint("job", i), shared)
	}
	start := make(chan struct{})
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = j.c.ExportTo(ctx, ref)
		}()
	}
	close(start)
	wg.Wait()
	for i, j := range jobs {
		if errs[i] != nil {
			t.Errorf("job %d: %v", i, errs[i])
		}
		if s := j.log.String(); s != "" {
			t.Errorf("job %d warned:\n%s", i, s)
		}
	}
	checkHolds(t, ref, append(jobs, earlier)...)
	mu.Lock()
	t.Logf("%d exports wrote the tag %d times", len(jobs)+1, writes)
	mu.Unlock()
}

// exporterHeader names the exporter a request comes from, for the
// registry middleware of these tests.
const exporterHeader = "X-Pallet-Test-Exporter"

// as makes an exporter's requests carry its name.
func as(who string) remote.Option {
	return remote.WithTransport(named{who: who, next: http.DefaultTransport})
}

type named struct {
	who  string
	next http.RoundTripper
}

func (n named) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(exporterHeader, n.who)
	return n.next.RoundTrip(r)
}

// interleaver holds manifest requests of one exporter until given
// requests of another have been served, so that a race between exports
// runs the same way every time. A request is named by its exporter,
// method and rank among that exporter's manifest requests of that method:
// "B GET 2" is B's second read of a manifest.
type interleaver struct {
	holds map[string]string // request -> the request it waits for

	mu     sync.Mutex
	seen   map[string]int
	served map[string]chan struct{}
	errs   []string
}

func newInterleaver(holds map[string]string) *interleaver {
	return &interleaver{holds: holds, seen: map[string]int{}, served: map[string]chan struct{}{}}
}

// done is closed once the request named has been served.
func (il *interleaver) done(req string) chan struct{} {
	ch, ok := il.served[req]
	if !ok {
		ch = make(chan struct{})
		il.served[req] = ch
	}
	return ch
}

func (il *interleaver) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := r.Header.Get(exporterHeader)
		if who == "" || !strings.Contains(r.URL.Path, "/manifests/") {
			h.ServeHTTP(w, r)
			return
		}
		il.mu.Lock()
		il.seen[who+" "+r.Method]++
		req := fmt.Sprintf("%s %s %d", who, r.Method, il.seen[who+" "+r.Method])
		var wait chan struct{}
		if after, ok := il.holds[req]; ok {
			wait = il.done(after)
		}
		mine := il.done(req)
		il.mu.Unlock()
		if wait != nil {
			select {
			case <-wait:
			case <-time.After(10 * time.Second):
				il.mu.Lock()
				il.errs = append(il.errs, req+" waited in vain for "+il.holds[req])
				il.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
		close(mine)
	})
}

// count is how many manifest requests of method who made.
func (il *interleaver) count(who, method string) int {
	il.mu.Lock()
	defer il.mu.Unlock()
	return il.seen[who+" "+method]
}

// The lost update, forced: A reads the tag, B reads and writes it, then
// A writes what it read merged with its own, without B's entries. B must
// find that out and merge again, whether A's write lands before B reads
// the tag back or while B waits to check it once more.
func TestExportRaceLostUpdateIsMerged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds map[string]string
	}{
		{"A writes before B reads back", map[string]string{
			"B PUT 1": "A GET 1", // A's read misses B's write
			"A PUT 1": "B PUT 1",
			"B GET 2": "A PUT 1", // B's read back sees A's write
		}},
		{"A writes while B settles", map[string]string{
			"B PUT 1": "A GET 1",
			"A PUT 1": "B GET 2", // B's read back sees its own write
			"B GET 3": "A PUT 1", // B's check after the settle delay sees A's
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			il := newInterleaver(tc.holds)
			reg := testregistry.Start(t, il.wrap)
			ref := reg.Host + "/ci/cache:main"
			ctx := context.Background()
			earlier := newJob(t, "earlier", "")
			if err := earlier.c.ExportTo(ctx, ref); err != nil {
				t.Fatal(err)
			}
			a, b := newJob(t, "A", ""), newJob(t, "B", "")
			var wg sync.WaitGroup
			var errA, errB error
			wg.Add(2)
			go func() { defer wg.Done(); errA = a.c.ExportTo(ctx, ref, as("A")) }()
			go func() { defer wg.Done(); errB = b.c.ExportTo(ctx, ref, as("B")) }()
			wg.Wait()
			if errA != nil || errB != nil {
				t.Fatalf("exports failed: A %v, B %v", errA, errB)
			}
			il.mu.Lock()
			for _, e := range il.errs {
				t.Error(e)
			}
			il.mu.Unlock()
			// Without those the race did not run as planned: the test
			// would prove nothing.
			if n := il.count("A", "PUT"); n != 1 {
				t.Errorf("A wrote the tag %d times, want once", n)
			}
			if n := il.count("B", "PUT"); n != 2 {
				t.Errorf("B wrote the tag %d times, want twice (once more after A replaced it)", n)
			}
			for _, j := range []*job{a, b} {
				if s := j.log.String(); s != "" {
					t.Errorf("%s warned:\n%s", j.name, s)
				}
			}
			checkHolds(t, ref, earlier, a, b)
		})
	}
}

// An export whose entries never stand (here the registry takes its
// manifests and keeps them nowhere, as if another export replaced each
// one at once) stops after publishAttempts and warns: the build's images
// are done, and the cache is only a saving.
func TestExportThatNeverSettlesWarns(t *testing.T) {
	var mu sync.Mutex
	puts := 0
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
				mu.Lock()
				puts++
				mu.Unlock()
				w.WriteHeader(http.StatusCreated)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/ci/cache:main"
	j := newJob(t, "lonely", "")
	if err := j.c.ExportTo(context.Background(), ref); err != nil {
		t.Fatalf("an export that never settles failed the build: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if puts != publishAttempts {
		t.Errorf("%d writes, want %d", puts, publishAttempts)
	}
	if !strings.Contains(j.log.String(), "other exports kept replacing") {
		t.Errorf("no warning; log:\n%s", j.log)
	}
}

// A registry that refuses the export's writes fails it, as before: the
// build says the images are done but the export failed.
func TestExportRefusedIsAnError(t *testing.T) {
	for _, refused := range []string{"/blobs/", "/manifests/"} {
		t.Run(strings.Trim(refused, "/"), func(t *testing.T) {
			reg := testregistry.Start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method != http.MethodGet && r.Method != http.MethodHead && strings.Contains(r.URL.Path, refused) {
						http.Error(w, "read-only registry", http.StatusForbidden)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			j := newJob(t, "refused", "")
			err := j.c.ExportTo(context.Background(), reg.Host+"/ci/cache:main")
			if err == nil || !strings.Contains(err.Error(), "shared cache") {
				t.Errorf("got %v, want the export's error", err)
			}
		})
	}
}

// A tag the export cannot read (some registries answer 401 for a
// repository not created yet) is written with this build's entries alone,
// with one warning: reading it back fails the same way and says nothing
// new.
func TestExportOfUnreadableTagWarnsOnce(t *testing.T) {
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") && r.Header.Get(exporterHeader) != "" {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/ci/cache:main"
	j := newJob(t, "blind", "")
	if err := j.c.ExportTo(context.Background(), ref, as("blind")); err != nil {
		t.Fatal(err)
	}
	if n := len(j.log.lines); n != 1 || !strings.Contains(j.log.String(), "cannot be read, so only this build's are exported") {
		t.Errorf("%d warnings, want the one; log:\n%s", n, j.log)
	}
	checkHolds(t, ref, j)
}

// A tag that cannot be read for now (a 5xx) is not written over: it may
// hold entries of other builds that this export would drop.
func TestExportKeepsTagItCannotReadNow(t *testing.T) {
	var failing atomic.Bool
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if failing.Load() && strings.Contains(r.URL.Path, "/manifests/") {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/ci/cache:main"
	first := newJob(t, "first", "")
	if err := first.c.ExportTo(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	second := newJob(t, "second", "")
	if err := second.c.ExportTo(context.Background(), ref, remote.WithRetryBackoff(remote.Backoff{Steps: 1})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.log.String(), "not exported") {
		t.Errorf("want a warning that nothing was exported; log:\n%s", second.log)
	}
	failing.Store(false)
	checkHolds(t, ref, first)
}

// The merge keeps every entry of theirs but the expired, and one entry a
// key, the same whichever side merges.
func TestMergeEntries(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	desc := func(ann, key, blob, exported string) v1.Descriptor {
		return v1.Descriptor{MediaType: types.OCILayer, Size: 1,
			Digest:      v1.Hash{Algorithm: "sha256", Hex: sha([]byte(blob))},
			Annotations: map[string]string{ann: key, annExported: exported}}
	}
	mine := desc(annLayer, "k", "mine", at(0))
	for _, tc := range []struct {
		name   string
		theirs []v1.Descriptor
		want   []v1.Descriptor
	}{
		{"theirs under other keys are kept",
			[]v1.Descriptor{desc(annArtifact, "k", "art", at(-time.Hour)), desc(annLayer, "j", "j", at(-keepFor+time.Minute))},
			[]v1.Descriptor{desc(annArtifact, "k", "art", at(-time.Hour)), desc(annLayer, "j", "j", at(-keepFor+time.Minute)), mine}},
		{"expired or undated are dropped",
			[]v1.Descriptor{desc(annLayer, "j", "j", at(-keepFor-time.Minute)), desc(annLayer, "i", "i", "yesterday")},
			[]v1.Descriptor{mine}},
		{"an older entry under our key is replaced",
			[]v1.Descriptor{desc(annLayer, "k", "old", at(-time.Hour))},
			[]v1.Descriptor{mine}},
		{"an entry dated beyond the clock skew is dropped",
			[]v1.Descriptor{desc(annLayer, "k", "ahead", at(2*maxClockSkew)), desc(annLayer, "j", "j", at(2*maxClockSkew))},
			[]v1.Descriptor{mine}},
		{"a newer entry under our key stays",
			[]v1.Descriptor{desc(annLayer, "k", "newer", at(time.Second))},
			[]v1.Descriptor{desc(annLayer, "k", "newer", at(time.Second))}},
		{"at the same time the smaller digest stays",
			[]v1.Descriptor{desc(annLayer, "k", "a", at(0)), desc(annLayer, "k", "b", at(0))},
			[]v1.Descriptor{smallest(desc(annLayer, "k", "a", at(0)), desc(annLayer, "k", "b", at(0)), mine)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeEntries([]v1.Descriptor{mine}, tc.theirs, now)
			if !sameEntries(got, tc.want) {
				t.Errorf("merged\n%v\nwant\n%v", ids(got), ids(tc.want))
			}
		})
	}

	// Two exports of the same keys at the same moment, each merging the
	// other's manifest, write the same one.
	a := []v1.Descriptor{desc(annLayer, "shared", "from a", at(0)), desc(annLayer, "a", "a", at(0))}
	b := []v1.Descriptor{desc(annLayer, "shared", "from b", at(0)), desc(annArtifact, "b", "b", at(0))}
	ab, ba := mergeEntries(a, b, now), mergeEntries(b, a, now)
	if !sameEntries(ab, ba) || len(ab) != 3 {
		t.Errorf("A merging B's gives %v, B merging A's %v", ids(ab), ids(ba))
	}
}

func smallest(ds ...v1.Descriptor) v1.Descriptor {
	best := ds[0]
	for _, d := range ds[1:] {
		if d.Digest.String() < best.Digest.String() {
			best = d
		}
	}
	return best
}

// sameEntries compares entries in order, by key and blob.
func sameEntries(a, b []v1.Descriptor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if entryID(a[i]) != entryID(b[i]) || a[i].Digest != b[i].Digest {
			return false
		}
	}
	return true
}

func ids(ds []v1.Descriptor) []string {
	var out []string
	for _, d := range ds {
		out = append(out, entryID(d)+"@"+d.Digest.Hex[:8])
	}
	return out
}
