package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// job is one CI job's cache: an artifact and a layer of its own, and the
// layer every job builds under the same key (each with other bytes, as a
// build that is not reproducible would make them).
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
	reg := testregistry.Start(t, nil)
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
}
