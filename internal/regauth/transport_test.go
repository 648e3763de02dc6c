package regauth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/pallet-dev/pallet/internal/regauth"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// stall is the tests' stall timeout: long enough for loopback to deliver
// whatever was sent, short enough for a test to wait out several.
const stall = 200 * time.Millisecond

// hang blocks a handler, sending nothing, until the client goes away or
// the test ends.
func hang(t *testing.T, r *http.Request) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// client sends through a fresh bounded transport, so that no test shares
// connections with another.
func client(t *testing.T, to regauth.Timeouts) *http.Client {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: regauth.Transport(base, to)}
}

// zeros is an endless body: what a big upload looks like to a transport.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// trickle yields data in chunks pausing every between them, never as long
// as the stall timeout.
type trickle struct {
	data  []byte
	chunk int
	every time.Duration
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.every)
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestTransportStall(t *testing.T) {
	const sent = 1000
	const upload = 1 << 30
	tests := []struct {
		name    string
		to      regauth.Timeouts
		handler func(t *testing.T, w http.ResponseWriter, r *http.Request)
		// body, when set, is sent with a PUT of length upload.
		body  io.Reader
		while string
		check func(t *testing.T, se *regauth.StallError)
	}{
		{"response body", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}},
			func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1048576")
				w.Write(bytes.Repeat([]byte{'x'}, sent))
				w.(http.Flusher).Flush()
				hang(t, r)
			}, nil, "receiving the response",
			func(t *testing.T, se *regauth.StallError) {
				if se.Received != sent {
					t.Errorf("Received = %d, want %d", se.Received, sent)
				}
			}},
		{"response headers", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}},
			func(t *testing.T, w http.ResponseWriter, r *http.Request) { hang(t, r) },
			nil, "waiting for the response", nil},
		{"request body the registry stops reading", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}},
			func(t *testing.T, w http.ResponseWriter, r *http.Request) { hang(t, r) },
			io.LimitReader(zeros{}, upload), "connecting or sending the request",
			func(t *testing.T, se *regauth.StallError) {
				// What the socket buffers took, and no more.
				if se.Sent <= 0 || se.Sent >= upload {
					t.Errorf("Sent = %d, want some of the %d bytes", se.Sent, upload)
				}
			}},
		// A small body leaves the registry nothing to digest for long:
		// Stall, not the 5 minutes a blob of gigabytes may take.
		{"answer to a small upload", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}},
			func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				hang(t, r)
			}, io.LimitReader(zeros{}, 1<<10), "waiting for the response", nil},
		{"answer to an upload", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}, ResponseHeader: stall},
			func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				hang(t, r)
			}, io.LimitReader(zeros{}, 1<<20), "waiting for the response",
			func(t *testing.T, se *regauth.StallError) {
				if se.Sent != 1<<20 {
					t.Errorf("Sent = %d, want the whole %d", se.Sent, 1<<20)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each mostly waits out timeouts.
			t.Parallel()
			srv := server(t, func(w http.ResponseWriter, r *http.Request) { tc.handler(t, w, r) })
			method, size := http.MethodGet, int64(0)
			if tc.body != nil {
				method, size = http.MethodPut, upload
				if tc.while == "waiting for the response" {
					size = 1 << 20
					if tc.name == "answer to a small upload" {
						size = 1 << 10
					}
				}
			}
			req, err := http.NewRequest(method, srv.URL+"/v2/x/blobs/uploads/1?_state=secret", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = size
			start := time.Now()
			resp, err := client(t, tc.to).Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			elapsed := time.Since(start)
			var se *regauth.StallError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *StallError", err, err)
			}
			if elapsed < stall || elapsed > 5*time.Second {
				t.Errorf("failed after %s; the stall timeout is %s", elapsed, stall)
			}
			if se.While != tc.while {
				t.Errorf("stalled while %q, want %q", se.While, tc.while)
			}
			idle := stall
			if tc.name == "answer to a small upload" {
				idle += (1 << 10) * (time.Second / (8 << 20)) // 1 KiB's time at 8 MiB/s
			}
			if se.Method != method || se.Idle != idle {
				t.Errorf("StallError %+v, want method %s and idle %s", *se, method, idle)
			}
			for _, want := range []string{srv.URL + "/v2/x/blobs/uploads/1", "stalled", idle.String(), tc.while} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			// http.Client's own wrapping shows the URL as given; the
			// StallError, which may be logged alone, must not.
			if strings.Contains(se.Error(), "secret") {
				t.Errorf("StallError %q shows the query", se)
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("error %v is not a net.Error timeout", err)
			}
			if tc.check != nil {
				tc.check(t, se)
			}
		})
	}
}

func TestTransportSlowButSteady(t *testing.T) {
	payload := bytes.Repeat([]byte("registry trickle\n"), 1024)
	// 8.5 MiB: time for the registry to digest it, at the slowest it is
	// taken to store (regauth's slowStore), is over a second.
	large := bytes.Repeat([]byte("registry trickle\n"), 512<<10)
	const chunks = 12
	size := (len(payload) + chunks - 1) / chunks
	tests := []struct {
		name    string
		to      regauth.Timeouts
		handler http.HandlerFunc
		body    func() io.Reader
	}{
		{"download", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}},
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(len(payload)))
				io.Copy(flushing{w}, &trickle{payload, size, stall / 4})
			}, nil},
		{"upload", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}},
			func(w http.ResponseWriter, r *http.Request) {
				got, _ := io.ReadAll(r.Body)
				w.Write(got)
			}, func() io.Reader { return &trickle{payload, size, stall / 4} }},
		// The registry digesting what it got for longer than Stall,
		// within the time it may take for the payload's size.
		{"slow answer to an upload", regauth.Timeouts{Limits: transfer.Limits{Stall: stall}, ResponseHeader: 10 * stall},
			func(w http.ResponseWriter, r *http.Request) {
				// Counted, not kept: io.ReadAll's growing copies of
				// 8.5 MiB took the race detector over a second, which
				// the client saw as the registry's answer being late.
				n, _ := io.Copy(io.Discard, r.Body)
				time.Sleep(3 * stall)
				// Its size, not the body again: 8.5 MiB back on a loaded
				// machine may pause past Stall, which is another test's.
				fmt.Fprint(w, n)
			}, func() io.Reader { return bytes.NewReader(large) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each mostly waits out timeouts.
			t.Parallel()
			srv := server(t, tc.handler)
			method, body := http.MethodGet, io.Reader(nil)
			if tc.body != nil {
				method, body = http.MethodPut, tc.body()
			}
			req, err := http.NewRequest(method, srv.URL+"/v2/x/blobs/y", body)
			if err != nil {
				t.Fatal(err)
			}
			sent, want := payload, payload
			if tc.name == "slow answer to an upload" {
				sent, want = large, []byte(strconv.Itoa(len(large)))
			}
			if body != nil {
				req.ContentLength = int64(len(sent))
			}
			start := time.Now()
			resp, err := client(t, tc.to).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("a transfer that kept moving failed: %v", err)
			}
			// Otherwise the test proves nothing about outlasting Stall.
			if elapsed := time.Since(start); elapsed < 2*stall {
				t.Fatalf("the transfer took only %s", elapsed)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got %d bytes back, want %d", len(got), len(want))
			}
		})
	}
}

type flushing struct{ w http.ResponseWriter }

func (f flushing) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.w.(http.Flusher).Flush()
	return n, err
}

// TestOptionsBoundAuthenticatedPulls pulls through Options from a registry
// that demands the credentials of the docker config and stalls a blob.
func TestOptionsBoundAuthenticatedPulls(t *testing.T) {
	const user, pass = "pallet", "s3cret"
	var stallBlobs atomic.Bool
	var authorized atomic.Int32
	reg := registry.New(registry.Logger(log.New(testLog{t}, "", 0)))
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "credentials", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		if stallBlobs.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			// Chunked: go-containerregistry checks a Content-Length
			// against the layer's size.
			w.Write(bytes.Repeat([]byte{0}, 1000))
			w.(http.Flusher).Flush()
			hang(t, r)
			return
		}
		reg.ServeHTTP(w, r)
	})
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, auth), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfg)
	ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: stall}})
	ref, err := name.ParseReference(host + "/pallet/stall:test")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(64<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, regauth.Options(ctx)...); err != nil {
		t.Fatalf("push with the docker config's credentials: %v", err)
	}
	if authorized.Load() == 0 {
		t.Fatal("the registry saw no request with the credentials")
	}

	stallBlobs.Store(true)
	pulled, err := remote.Image(ref, regauth.Options(ctx)...)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := pulled.Layers()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rc, err := layers[0].Compressed()
	if err == nil {
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
	}
	elapsed := time.Since(start)
	var se *regauth.StallError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *StallError", err, err)
	}
	if se.Received != 1000 || se.Idle != stall {
		t.Errorf("StallError %+v, want 1000 bytes received and idle %s", *se, stall)
	}
	if elapsed > 5*time.Second {
		t.Errorf("failed after %s; the stall timeout is %s", elapsed, stall)
	}
}

// testLog sends the registry's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A registry that redirects a request to itself is left after net/http's
// ten hops, through go-containerregistry, which sets a redirect check of
// its own without that cap.
func TestTransportRedirectLoop(t *testing.T) {
	var hits atomic.Int64
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		hits.Add(1)
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	})
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://")+"/x/y:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := remote.Get(ref, regauth.WithTimeouts(regauth.Timeouts{Limits: transfer.Limits{Stall: stall}}))
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("still following redirects after a minute (%d requests)", hits.Load())
	}
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("error %v", err)
	}
	// go-containerregistry may retry; each attempt is bounded.
	if n := hits.Load(); n > 100 {
		t.Errorf("%d requests", n)
	}
}

// With FinalStall, a stall ends the call: go-containerregistry, which
// retries a stall after its backoff, asks once, and the *StallError is
// still there to be found.
func TestTransportFinalStall(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		asked.Add(1)
		hang(t, r)
	})
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://")+"/x/y:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.Get(ref, regauth.WithTimeouts(regauth.Timeouts{Limits: transfer.Limits{Stall: stall}, FinalStall: true}))
	var se *regauth.StallError
	if !errors.As(err, &se) || se.While != "waiting for the response" {
		t.Fatalf("error %v, want a stall waiting for the response", err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the manifest was asked for %d times", n)
	}
}

// A body that keeps moving, but slower than the floor, fails as a stall
// after one Stall instead of lasting for ever.
func TestTransportBelowTheFloor(t *testing.T) {
	t.Parallel()
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		for range 100000 {
			if _, err := w.Write([]byte{'x'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(stall / 10)
		}
	})
	resp, err := client(t, regauth.Timeouts{Limits: transfer.Limits{Stall: stall, MinRate: 1024}}).Get(srv.URL + "/v2/x/blobs/y")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	_, err = io.Copy(io.Discard, resp.Body)
	var se *regauth.StallError
	if !errors.As(err, &se) || se.Moved == 0 || !strings.Contains(err.Error(), "under the floor of 1024 bytes/s") {
		t.Fatalf("a drip: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 5*stall {
		t.Errorf("the drip went on for %s", elapsed)
	}
}

// The bounds a context carries (a build's limits.stall) are the ones its
// registry calls get, not the defaults.
func TestOptionsTakeTheContextsBounds(t *testing.T) {
	t.Parallel()
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		hang(t, r)
	})
	ctx := regauth.WithBounds(context.Background(), regauth.Timeouts{Limits: transfer.Limits{Stall: stall}})
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://")+"/pallet/bounds:test", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = remote.Get(ref, regauth.Options(ctx, remote.WithRetryBackoff(remote.Backoff{Steps: 1}))...)
	var se *regauth.StallError
	if !errors.As(err, &se) || se.Idle != stall || se.While != "waiting for the response" {
		t.Fatalf("got %v, want a stall after %s waiting for the manifest", err, stall)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("failed after %s; the context's stall timeout is %s", elapsed, stall)
	}
}

// A registry whose answer to the API version check (GET /v2/) never ends,
// at full speed, does not hold a pull: go-containerregistry drains that
// body, which moves too fast for any stall to end it, and the build that
// asked waited for good.
func TestTransportPingBodyBounded(t *testing.T) {
	t.Parallel()
	reg := registry.New(registry.Logger(log.New(testLog{t}, "", 0)))
	var endless atomic.Bool
	var sent atomic.Int64
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" && endless.Load() {
			buf := make([]byte, 32<<10)
			for r.Context().Err() == nil {
				n, err := w.Write(buf)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		reg.ServeHTTP(w, r)
	})
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://")+"/x/y:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	opt := regauth.WithTimeouts(regauth.Timeouts{Limits: transfer.Limits{Stall: stall}})
	if err := remote.Write(ref, img, opt); err != nil {
		t.Fatal(err)
	}
	endless.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := remote.Get(ref, opt)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the manifest after an endless answer to GET /v2/: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still reading the answer to GET /v2/ after 30 s (%d bytes sent)", sent.Load())
	}
}

// A request that keeps moving, above the floor, but longer than Total
// allows, fails with a *TimeoutError at Total, however it moves: a blob
// coming down, or going up to a registry that reads it slowly. Without
// the bound each would go on for tens of seconds here, and for as long
// as the blob's size takes at the floor's pace in the field.
func TestTransportTotalBoundsATrickle(t *testing.T) {
	// 512 KiB at 16 KiB/s is 32 s: far above the floor of 1 KiB/s.
	payload := bytes.Repeat([]byte("x"), 512<<10)
	const total = time.Second
	for _, tc := range []struct {
		name    string
		upload  bool
		handler http.HandlerFunc
		while   string
	}{
		{"download", false, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)))
			io.Copy(flushing{w}, &trickle{payload, 512, 30 * time.Millisecond})
		}, "receiving the response"},
		// Larger, and read faster, so that the socket buffers fill and
		// the client is still sending at the bound: 64 MiB at 1.6 MB/s.
		{"upload", true, func(w http.ResponseWriter, r *http.Request) {
			buf := make([]byte, 16<<10)
			for {
				if _, err := io.ReadFull(r.Body, buf); err != nil {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}, "connecting or sending the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := server(t, tc.handler)
			method, body := http.MethodGet, io.Reader(nil)
			size := int64(len(payload))
			if tc.upload {
				size = 64 << 20
				method, body = http.MethodPatch, io.LimitReader(zeros{}, size)
			}
			req, err := http.NewRequest(method, srv.URL+"/v2/x/blobs/uploads/u?digest=sha256:1", body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.upload {
				req.ContentLength = size
			}
			start := time.Now()
			// A Stall longer than Total: only Total can end it first.
			resp, err := client(t, regauth.Timeouts{Limits: transfer.Limits{Stall: 2 * total}, Total: total}).Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			took := time.Since(start)
			var te *regauth.TimeoutError
			if !errors.As(err, &te) || te.While != tc.while || te.Total != total || te.Took < total ||
				!strings.Contains(err.Error(), method+" "+srv.URL+"/v2/x/blobs/uploads/u: gave up after 1") ||
				!strings.Contains(err.Error(), "over the 1s one registry request may take (limits.download-timeout, --download-timeout;") {
				t.Fatalf("a trickle: %v", err)
			}
			if moved := te.Sent + te.Received; moved == 0 || moved >= size {
				t.Errorf("moved %d bytes of %d", moved, size)
			}
			if took > 10*total {
				t.Errorf("the trickle went on for %s", took)
			}
		})
	}
}
