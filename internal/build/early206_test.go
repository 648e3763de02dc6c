package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A push opens its session (the registry's ping, and a token where one is
// asked) at the build's start, not at its first blob: the download of the
// build's one artifact is held until the registry has been pinged, and
// the build must get past it. Before, the first ping came with the first
// layer, made of that download: the download's server gave up waiting
// and said so.
func TestPushOpensBeforeTheInputsAreRead(t *testing.T) {
	var (
		mu     sync.Mutex
		events []string
	)
	note := func(ev string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}
	pinged := make(chan struct{})
	var once sync.Once
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/" {
				note("ping")
				once.Do(func() { close(pinged) })
			}
			h.ServeHTTP(w, r)
		})
	})
	data := []byte("the artifact\n")
	sum := sha256.Sum256(data)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Not a bound on the build's time: the wait ends at once when
		// the ping has come, and only a build that would never ping
		// before its inputs are read waits it out.
		select {
		case <-pinged:
		case <-time.After(20 * time.Second):
		}
		note("download")
		w.Write(data)
	}))
	defer files.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pallet.yaml": fmt.Sprintf(`version: 1
artifacts:
  a:
    url:
      url: %s/a
      sha256: %s
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: a, dest: /a}
`, files.URL, hex.EncodeToString(sum[:]))})
	out, err := output.Parse("registry:"+reg.Host+"/early/app:v1", output.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Outputs: []output.Target{out}, CacheDir: t.TempDir(), RecordPath: filepath.Join(dir, "record.json"), Progress: quietReporter(t)}
	if _, err := Run(context.Background(), recipePlan(t, dir), opt); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) == 0 || events[0] != "ping" {
		t.Errorf("the registry was pinged after the build's input was downloaded: %v", events)
	}
}
