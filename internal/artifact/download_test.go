package artifact_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// payload is large enough that a partial write leaves the client mid-body
// rather than with everything already buffered.
var payload = bytes.Repeat([]byte("pallet download fault test\n"), 4096)

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// fetcher is what artifact.New returns, with a backoff short enough for tests
// and a client with a timeout so that a mistake hangs no test for long.
func fetcher(t *testing.T) *artifact.Fetcher {
	f := artifact.New()
	f.Client = &http.Client{Timeout: 10 * time.Second}
	f.Backoff = 5 * time.Millisecond
	f.Log = t.Logf
	return f
}

// server counts requests and hands each to handle with its 1-based number.
type server struct {
	*httptest.Server
	n atomic.Int32
}

func serve(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handle(w, r, int(s.n.Add(1)))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() int { return int(s.n.Load()) }

func full(w http.ResponseWriter) {
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	w.Write(payload)
}

// truncate declares the whole payload but sends a third of it; net/http
// then closes the connection, since it can no longer be reused.
func truncate(w http.ResponseWriter) {
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	w.Write(payload[:len(payload)/3])
}

// reset writes the headers and part of the body straight onto the
// connection, then aborts it with an RST (SO_LINGER 0) rather than a FIN.
func reset(t *testing.T, w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n", len(payload))
	buf.Write(payload[:len(payload)/2])
	buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// noFile fails unless file is absent; downloads must never leave a partial
// or unverified file under the final name.
func noFile(t *testing.T, file string) {
	t.Helper()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("%s exists (stat: %v); a failed download must leave nothing under its name", filepath.Base(file), err)
	}
}

// onlyFiles fails unless dir holds exactly the named files: no temp files.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}

func TestDownloadRetriesBrokenTransfers(t *testing.T) {
	tests := []struct {
		name string
		// fail breaks the transfer in some way.
		fail func(t *testing.T, w http.ResponseWriter)
		// failures is how many requests fail before the server behaves;
		// -1 means it never does.
		failures int
		wantReqs int
		// wantErr are phrases the final error must contain (besides the URL).
		wantErr []string
	}{
		{"truncated once", func(_ *testing.T, w http.ResponseWriter) { truncate(w) }, 1, 2, nil},
		{"truncated until the last retry", func(_ *testing.T, w http.ResponseWriter) { truncate(w) }, 3, 4, nil},
		{"truncated always", func(_ *testing.T, w http.ResponseWriter) { truncate(w) }, -1, 4,
			[]string{fmt.Sprintf("%d of %d bytes", len(payload)/3, len(payload)), "unexpected EOF", "4 attempts"}},
		{"reset once", reset, 1, 2, nil},
		{"reset twice", reset, 2, 3, nil},
		{"reset always", reset, -1, 4, []string{"4 attempts"}},
		{"500 once", func(_ *testing.T, w http.ResponseWriter) { w.WriteHeader(500) }, 1, 2, nil},
		{"500 always", func(_ *testing.T, w http.ResponseWriter) { w.WriteHeader(500) }, -1, 4, []string{"500", "4 attempts"}},
		{"502 twice", func(_ *testing.T, w http.ResponseWriter) { w.WriteHeader(502) }, 2, 3, nil},
		{"503 three times", func(_ *testing.T, w http.ResponseWriter) { w.WriteHeader(503) }, 3, 4, nil},
		{"429 once", func(_ *testing.T, w http.ResponseWriter) { w.WriteHeader(429) }, 1, 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			dst := filepath.Join(dir, "download")
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				// Between attempts, nothing may sit under the final name.
				if _, err := os.Stat(dst); !os.IsNotExist(err) {
					t.Errorf("request %d: %s exists before the download is verified", n, dst)
				}
				if tc.failures < 0 || n <= tc.failures {
					tc.fail(t, w)
					return
				}
				full(w)
			})
			url := srv.URL + "/pkg.tgz"
			err := fetcher(t).Download(context.Background(), url, sum(payload), dst)
			if got := srv.requests(); got != tc.wantReqs {
				t.Errorf("%d requests, want %d", got, tc.wantReqs)
			}
			if tc.failures >= 0 {
				if err != nil {
					t.Fatalf("download failed: %v", err)
				}
				got, err := os.ReadFile(dst)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, payload) {
					t.Errorf("downloaded %d bytes, not the payload", len(got))
				}
				onlyFiles(t, dir, "download")
				return
			}
			if err == nil {
				t.Fatal("download succeeded against a server that never sends the file")
			}
			var mm *artifact.MismatchError
			if errors.As(err, &mm) {
				t.Errorf("a broken transfer reported as a digest mismatch: %v", err)
			}
			for _, want := range append([]string{url}, tc.wantErr...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			noFile(t, dst)
			onlyFiles(t, dir)
		})
	}
}

func TestDownloadDoesNotRetryClientErrors(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 410} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			dir := t.TempDir()
			dst := filepath.Join(dir, "download")
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				http.Error(w, "no", code)
			})
			url := srv.URL + "/missing.tgz"
			err := fetcher(t).Download(context.Background(), url, sum(payload), dst)
			if err == nil {
				t.Fatal("download succeeded")
			}
			if got := srv.requests(); got != 1 {
				t.Errorf("%d requests, want 1: a %d is not worth retrying", got, code)
			}
			for _, want := range []string{url, strconv.Itoa(code)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			noFile(t, dst)
			onlyFiles(t, dir)
		})
	}
}

// A redirect loop and a redirect out of http are the same answer on every
// attempt: said at once, not retried.
func TestDownloadDoesNotRetryBadRedirects(t *testing.T) {
	for _, tc := range []struct{ name, to, want string }{
		{"loop", "/loop", "stopped after 10 redirects"},
		{"to a file", "file:///etc/passwd", "redirected to file:///etc/passwd, which is not http or https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "download")
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				http.Redirect(w, r, tc.to, http.StatusFound)
			})
			err := fetcher(t).Download(context.Background(), srv.URL+"/loop", sum(payload), dst)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "attempts") {
				t.Fatalf("got %v, want %q at the first attempt", err, tc.want)
			}
			if max := map[string]int{"loop": 10, "to a file": 1}[tc.name]; srv.requests() != max {
				t.Errorf("%d requests, want %d", srv.requests(), max)
			}
			noFile(t, dst)
		})
	}
}

func TestDownloadBackoffIsBoundedAndExponential(t *testing.T) {
	tests := []struct {
		retries int
		backoff time.Duration
	}{
		{0, 10 * time.Millisecond},
		{1, 10 * time.Millisecond},
		{3, 10 * time.Millisecond},
		{4, 5 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("retries=%d,backoff=%s", tc.retries, tc.backoff), func(t *testing.T) {
			var mu sync.Mutex
			var at []time.Time
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				mu.Lock()
				at = append(at, time.Now())
				mu.Unlock()
				w.WriteHeader(http.StatusInternalServerError)
			})
			f := fetcher(t)
			f.Retries, f.Backoff = tc.retries, tc.backoff
			dir := t.TempDir()
			start := time.Now()
			err := f.Download(context.Background(), srv.URL+"/f", sum(payload), filepath.Join(dir, "f"))
			elapsed := time.Since(start)
			if err == nil {
				t.Fatal("download succeeded against a server that always fails")
			}
			if got, want := srv.requests(), 1+tc.retries; got != want {
				t.Fatalf("%d requests, want %d (1 + %d retries)", got, want, tc.retries)
			}
			// Lower bounds only: a slow machine may wait longer, never less.
			var total time.Duration
			mu.Lock()
			defer mu.Unlock()
			for i := 1; i < len(at); i++ {
				wait := tc.backoff << (i - 1)
				total += wait
				if gap := at[i].Sub(at[i-1]); gap < wait {
					t.Errorf("retry %d came %s after the previous request; want at least %s", i, gap, wait)
				}
			}
			if elapsed < total {
				t.Errorf("gave up after %s; the backoffs alone add up to %s", elapsed, total)
			}
			onlyFiles(t, dir)
		})
	}
}

func TestDownloadDigestMismatch(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "download")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) { full(w) })
	url := srv.URL + "/pkg.tgz"
	want := sum([]byte("something else"))
	err := fetcher(t).Download(context.Background(), url, want, dst)
	var mm *artifact.MismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("error %v (%T) is not a *MismatchError", err, err)
	}
	if mm.URL != url || mm.Expected != want || mm.Actual != sum(payload) {
		t.Errorf("mismatch = %+v, want URL %s, expected %s, actual %s", *mm, url, want, sum(payload))
	}
	for _, s := range []string{url, want, sum(payload)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if got := srv.requests(); got != 1 {
		t.Errorf("%d requests, want 1: the same bytes would come again", got)
	}
	noFile(t, dst)
	onlyFiles(t, dir)
}

func TestDownloadCancelledDuringBackoff(t *testing.T) {
	const backoff = time.Minute
	tests := []struct {
		name string
		// ctx returns the context for the download; retrying is called
		// when the fetcher logs that it is about to wait.
		ctx  func(t *testing.T) (ctx context.Context, retrying func())
		want error
	}{
		{"cancel", func(t *testing.T) (context.Context, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func(t *testing.T) (context.Context, func()) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			t.Cleanup(cancel)
			return ctx, func() {}
		}, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			ctx, retrying := tc.ctx(t)
			f := fetcher(t)
			f.Backoff = backoff
			var logged atomic.Bool
			f.Log = func(format string, args ...any) {
				t.Logf(format, args...)
				logged.Store(true)
				// Cancelled after the decision to wait, in a goroutine so
				// that the fetcher is most likely already waiting.
				go func() {
					time.Sleep(20 * time.Millisecond)
					retrying()
				}()
			}
			dir := t.TempDir()
			start := time.Now()
			err := f.Download(ctx, srv.URL+"/f", sum(payload), filepath.Join(dir, "f"))
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("returned after %s; the context ended long before", elapsed)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if !logged.Load() {
				t.Error("the fetcher never got to waiting for a retry")
			}
			if got := srv.requests(); got != 1 {
				t.Errorf("%d requests, want 1", got)
			}
			onlyFiles(t, dir)
		})
	}
}

func TestGetMirror(t *testing.T) {
	good := sum(payload)
	tests := []struct {
		name string
		// mirror is the content of mirror/sha256/<good>; nil for none.
		mirror []byte
		// fifo makes mirror/sha256/<good> a named pipe nothing writes to.
		fifo bool
		// huge makes mirror/sha256/<good> the payload followed by a hole
		// to this size, over the download limit the test sets, 1 MiB.
		huge      int64
		offline   bool
		mirrorURL string // path on the server to use as MirrorURL; "" for none
		wantReqs  int
		wantPath  string // path the server must have seen
		wantErr   string // phrase in the error; "" for success
	}{
		{name: "mirror hit", mirror: payload, wantReqs: 0},
		{name: "mirror hit offline", mirror: payload, offline: true, wantReqs: 0},
		{name: "corrupt mirror goes upstream", mirror: payload[:100], wantReqs: 1, wantPath: "/upstream/pkg.tgz"},
		{name: "corrupt mirror offline", mirror: []byte("x"), offline: true, wantReqs: 0, wantErr: "corrupt"},
		{name: "offline miss", offline: true, wantReqs: 0, wantErr: "offline"},
		{name: "pipe in the mirror offline", fifo: true, offline: true, wantReqs: 0, wantErr: "named pipe, not a file"},
		{name: "pipe in the mirror goes upstream", fifo: true, wantReqs: 1, wantPath: "/upstream/pkg.tgz"},
		{name: "huge mirror file offline", huge: 64 << 20, offline: true, wantReqs: 0, wantErr: "67108864 bytes, over the download limit of 1048576 bytes"},
		{name: "huge mirror file goes upstream", huge: 64 << 20, wantReqs: 1, wantPath: "/upstream/pkg.tgz"},
		{name: "mirror miss goes upstream", wantReqs: 1, wantPath: "/upstream/pkg.tgz"},
		{name: "mirror url root", mirrorURL: "/", wantReqs: 1, wantPath: "/sha256/" + good},
		{name: "mirror url prefix", mirrorURL: "/m", wantReqs: 1, wantPath: "/m/sha256/" + good},
		{name: "mirror url prefix slash", mirrorURL: "/m/", wantReqs: 1, wantPath: "/m/sha256/" + good},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var paths []string
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				mu.Lock()
				paths = append(paths, r.URL.Path)
				mu.Unlock()
				full(w)
			})
			mirror := t.TempDir()
			if tc.huge > 0 {
				tc.mirror = payload
			}
			if tc.mirror != nil || tc.fifo {
				blob := filepath.Join(mirror, "sha256", good)
				if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
					t.Fatal(err)
				}
				if tc.fifo {
					if err := syscall.Mkfifo(blob, 0o644); err != nil {
						t.Skipf("mkfifo: %v", err)
					}
				} else if err := os.WriteFile(blob, tc.mirror, 0o644); err != nil {
					t.Fatal(err)
				}
				if tc.huge > 0 {
					if err := os.Truncate(blob, tc.huge); err != nil {
						t.Skipf("a sparse file of %d bytes: %v", tc.huge, err)
					}
				}
			}
			f := fetcher(t)
			f.Limits.MaxBytes = 1 << 20
			f.Mirror = mirror
			f.Offline = tc.offline
			if tc.mirrorURL != "" {
				f.MirrorURL = srv.URL + tc.mirrorURL
			}
			dir := t.TempDir()
			dst := filepath.Join(dir, "download")
			err := f.Get(context.Background(), srv.URL+"/upstream/pkg.tgz", good, dst)

			mu.Lock()
			defer mu.Unlock()
			if len(paths) != tc.wantReqs {
				t.Errorf("requests %q, want %d", paths, tc.wantReqs)
			}
			if tc.wantPath != "" && (len(paths) == 0 || paths[0] != tc.wantPath) {
				t.Errorf("requested %q, want %s", paths, tc.wantPath)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				noFile(t, dst)
				onlyFiles(t, dir)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("got %d bytes, not the payload", len(got))
			}
			onlyFiles(t, dir, "download")
		})
	}
}

// pallet fetch mends a mirror's damaged download (cut short, other
// bytes, a named pipe, a link to a file outside, a file made huge): the
// download takes its place, what a link named is left as it was, and
// nothing else is left in the mirror.
func TestMirrorMendsDownload(t *testing.T) {
	good := sum(payload)
	for _, tc := range []struct {
		name  string
		place func(t *testing.T, blob, outside string)
	}{
		{"cut short", func(t *testing.T, blob, _ string) { writeBytes(t, blob, payload[:len(payload)/2]) }},
		{"other bytes", func(t *testing.T, blob, _ string) { writeBytes(t, blob, bytes.ToUpper(payload)) }},
		{"named pipe", func(t *testing.T, blob, _ string) {
			if err := syscall.Mkfifo(blob, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}},
		{"link out of the mirror", func(t *testing.T, blob, outside string) {
			if err := os.Symlink(outside, blob); err != nil {
				t.Fatal(err)
			}
		}},
		{"huge", func(t *testing.T, blob, _ string) {
			writeBytes(t, blob, payload)
			if err := os.Truncate(blob, 64<<20); err != nil {
				t.Skipf("a sparse file: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) { full(w) })
			mirror := t.TempDir()
			blob := filepath.Join(mirror, "sha256", good)
			if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(t.TempDir(), "mine")
			writeBytes(t, outside, []byte("a file of the user's"))
			tc.place(t, blob, outside)
			f := fetcher(t)
			f.Limits.MaxBytes = 1 << 20
			req := &artifact.Request{Name: "pkg", Kind: &artifact.URL{URL: srv.URL + "/pkg.tgz", SHA256: good}}
			if err := f.MirrorTo(context.Background(), mirror, []*artifact.Request{req}); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(blob); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("mirror's download after fetch: %v, %v", fi, err)
			}
			if got, err := os.ReadFile(blob); err != nil || !bytes.Equal(got, payload) {
				t.Errorf("mirror's download holds %d bytes, not the payload (%v)", len(got), err)
			}
			if got, err := os.ReadFile(outside); err != nil || string(got) != "a file of the user's" {
				t.Errorf("the file the link named was written: %q, %v", got, err)
			}
			onlyFiles(t, filepath.Dir(blob), good)
		})
	}
}

func writeBytes(t *testing.T, file string, b []byte) {
	t.Helper()
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stall is what the tests give as Limits.Stall: long enough for loopback
// to deliver anything sent, short enough to run several attempts quickly.
const stall = 200 * time.Millisecond

// hang blocks a handler until the client goes away or the test ends,
// sending nothing more: a server that is alive but no longer delivers.
func hang(t *testing.T, r *http.Request) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

// counting is a client transport that counts the body bytes the
// downloader takes. With understate, it reports half the real
// Content-Length, standing in for a transport that would hand over a body
// longer than announced (net/http itself cuts a body at its length).
type counting struct {
	base       *http.Transport
	read       atomic.Int64
	understate bool
}

func countingClient(t *testing.T, understate bool) (*http.Client, *counting) {
	// No keep-alive: bytes sent past a body would otherwise be logged as
	// an unsolicited response on the idle connection.
	c := &counting{base: &http.Transport{DisableKeepAlives: true}, understate: understate}
	t.Cleanup(c.base.CloseIdleConnections)
	return &http.Client{Transport: c, Timeout: 10 * time.Second}, c
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if c.understate {
		resp.ContentLength = int64(len(payload) / 2)
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, n: &c.read}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestDownloadStall(t *testing.T) {
	const sent = 1000
	// midBody sends the headers and the first bytes, then nothing.
	midBody := func(t *testing.T, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		w.Write(payload[:sent])
		w.(http.Flusher).Flush()
		hang(t, r)
	}
	// noHeaders accepts the request and never answers.
	noHeaders := func(t *testing.T, w http.ResponseWriter, r *http.Request) { hang(t, r) }
	tests := []struct {
		name     string
		fail     func(t *testing.T, w http.ResponseWriter, r *http.Request)
		failures int // as in TestDownloadRetriesBrokenTransfers
		wantReqs int
		wantErr  []string
	}{
		{"mid-body once", midBody, 1, 2, nil},
		{"mid-body always", midBody, -1, 4,
			[]string{fmt.Sprintf("after %d of %d bytes", sent, len(payload)), "nothing received for " + stall.String(), "4 attempts"}},
		{"before headers always", noHeaders, -1, 4, []string{"no response for " + stall.String(), "4 attempts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each mostly waits out timeouts.
			t.Parallel()
			dir := t.TempDir()
			dst := filepath.Join(dir, "download")
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if tc.failures < 0 || n <= tc.failures {
					tc.fail(t, w, r)
					return
				}
				full(w)
			})
			url := srv.URL + "/pkg.tgz"
			start := time.Now()
			err := fetcher(t).DownloadWithin(context.Background(), url, sum(payload), dst, transfer.Limits{Stall: stall})
			elapsed := time.Since(start)
			if got := srv.requests(); got != tc.wantReqs {
				t.Errorf("%d requests, want %d", got, tc.wantReqs)
			}
			stalls := tc.wantReqs - 1
			if tc.failures < 0 {
				stalls = tc.wantReqs
			}
			// Each stalled attempt waits out the timeout and no more than a
			// generous multiple of it: the client's 10s Timeout must not be
			// what ends it.
			if min := time.Duration(stalls) * stall; elapsed < min {
				t.Errorf("returned after %s; %d stalls take at least %s", elapsed, stalls, min)
			}
			if elapsed > 5*time.Second {
				t.Errorf("returned after %s; the stall timeout is %s", elapsed, stall)
			}
			if tc.failures >= 0 {
				if err != nil {
					t.Fatalf("download failed: %v", err)
				}
				got, err := os.ReadFile(dst)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, payload) {
					t.Errorf("downloaded %d bytes, not the payload", len(got))
				}
				onlyFiles(t, dir, "download")
				return
			}
			if err == nil {
				t.Fatal("download succeeded against a server that stalls")
			}
			if errors.Is(err, context.Canceled) {
				t.Errorf("a stall reported as a cancellation: %v", err)
			}
			for _, want := range append([]string{url}, tc.wantErr...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			noFile(t, dst)
			onlyFiles(t, dir)
		})
	}
}

func TestDownloadSlowButSteadySucceeds(t *testing.T) {
	const chunks = 12
	const every = stall / 4
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		size := (len(payload) + chunks - 1) / chunks
		for b := payload; len(b) > 0; {
			k := min(size, len(b))
			w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
			time.Sleep(every)
		}
	})
	dir := t.TempDir()
	dst := filepath.Join(dir, "download")
	start := time.Now()
	err := fetcher(t).DownloadWithin(context.Background(), srv.URL+"/slow.tgz", sum(payload), dst, transfer.Limits{Stall: stall})
	if err != nil {
		t.Fatalf("a download that never paused for %s failed: %v", stall, err)
	}
	// Otherwise the test proves nothing about outlasting the stall timeout.
	if elapsed := time.Since(start); elapsed < 2*stall {
		t.Fatalf("the trickle took only %s", elapsed)
	}
	if got := srv.requests(); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("downloaded %d bytes, not the payload", len(got))
	}
}

// A server that sends a byte now and then, never pausing for a whole
// Stall, is cut off once a Stall brings fewer bytes than MinRate asks:
// each attempt, and so the download, ends instead of lasting as long as
// the body takes at that pace.
func TestDownloadSlowDripFails(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		for _, b := range payload {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(stall / 5):
			case <-r.Context().Done():
				return
			}
		}
	})
	dir := t.TempDir()
	dst := filepath.Join(dir, "download")
	f := fetcher(t)
	f.Retries = 1
	start := time.Now()
	err := f.DownloadWithin(context.Background(), srv.URL+"/drip.tgz", sum(payload), dst, transfer.Limits{Stall: stall, MinRate: 1000})
	if err == nil || !strings.Contains(err.Error(), "slower than the 1000 bytes/s a download must keep up") || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Fatalf("err = %v", err)
	}
	// Two attempts of about one Stall each, not the hours the body takes.
	if elapsed := time.Since(start); elapsed > 10*stall {
		t.Errorf("took %s", elapsed)
	}
	if got := srv.requests(); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
	noFile(t, dst)
	onlyFiles(t, dir)
}

func TestDownloadRefusesContentLengthOverLimit(t *testing.T) {
	tests := []struct {
		name   string
		lim    transfer.Limits
		claim  int64
		wantIn []string
	}{
		// The default needs no giant body: the claim alone must be refused.
		{"default limit", transfer.Limits{}, transfer.DefaultMaxBytes + 1,
			[]string{strconv.FormatInt(transfer.DefaultMaxBytes+1, 10), strconv.FormatInt(transfer.DefaultMaxBytes, 10)}},
		{"set limit", transfer.Limits{MaxBytes: int64(len(payload)) - 1}, int64(len(payload)),
			[]string{strconv.Itoa(len(payload)), strconv.Itoa(len(payload) - 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Length", strconv.FormatInt(tc.claim, 10))
				w.Write(payload)
				w.(http.Flusher).Flush()
				hang(t, r)
			})
			f := fetcher(t)
			client, c := countingClient(t, false)
			f.Client = client
			dir := t.TempDir()
			url := srv.URL + "/big.tgz"
			start := time.Now()
			err := f.DownloadWithin(context.Background(), url, sum(payload), filepath.Join(dir, "big.tgz"), tc.lim)
			if err == nil {
				t.Fatal("download succeeded")
			}
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("refused after %s; the size was known from the headers", elapsed)
			}
			for _, want := range append([]string{url, "over the limit"}, tc.wantIn...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if got := srv.requests(); got != 1 {
				t.Errorf("%d requests, want 1: the size will not shrink on retry", got)
			}
			if got := c.read.Load(); got != 0 {
				t.Errorf("read %d body bytes of a download refused by its headers", got)
			}
			onlyFiles(t, dir)
		})
	}
}

func TestDownloadStopsAtLimitWithoutContentLength(t *testing.T) {
	const limit = 64 << 10
	const chunk = 32 << 10
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		// Chunked, endless as far as the client can tell; the cutoff only
		// keeps a broken client from running forever.
		buf := bytes.Repeat([]byte{'x'}, chunk)
		for sent := 0; sent < 64<<20 && r.Context().Err() == nil; sent += chunk {
			if _, err := w.Write(buf); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	f := fetcher(t)
	client, c := countingClient(t, false)
	f.Client = client
	dir := t.TempDir()
	url := srv.URL + "/endless"
	err := f.DownloadWithin(context.Background(), url, sum(payload), filepath.Join(dir, "endless"), transfer.Limits{MaxBytes: limit})
	if err == nil {
		t.Fatal("download succeeded")
	}
	for _, want := range []string{url, fmt.Sprintf("limit of %d bytes", limit)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	var mm *artifact.MismatchError
	if errors.As(err, &mm) {
		t.Errorf("an oversized body reported as a digest mismatch: %v", err)
	}
	if got := c.read.Load(); got > limit+1 {
		t.Errorf("read %d bytes; the limit is %d", got, limit)
	}
	if got := srv.requests(); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
	onlyFiles(t, dir)
}

func TestDownloadMoreThanContentLength(t *testing.T) {
	// lie announces the payload's length and sends it followed by as much
	// again, straight onto the connection.
	lie := func(t *testing.T, w http.ResponseWriter) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(payload))
		buf.Write(payload)
		buf.Write(bytes.Repeat([]byte{'!'}, len(payload)))
		buf.Flush()
	}
	t.Run("over the wire", func(t *testing.T) {
		// net/http stops at the announced length; what follows never
		// reaches the file, and the announced bytes are what is verified.
		srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) { lie(t, w) })
		f := fetcher(t)
		client, c := countingClient(t, false)
		f.Client = client
		dir := t.TempDir()
		dst := filepath.Join(dir, "download")
		if err := f.DownloadWithin(context.Background(), srv.URL+"/f", sum(payload), dst, transfer.Limits{}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payload) {
			t.Errorf("file holds %d bytes, want the %d announced", len(got), len(payload))
		}
		if n := c.read.Load(); n != int64(len(payload)) {
			t.Errorf("read %d bytes of a body announced as %d", n, len(payload))
		}
	})
	t.Run("through a transport that passes it on", func(t *testing.T) {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) { full(w) })
		f := fetcher(t)
		client, c := countingClient(t, true)
		f.Client = client
		dir := t.TempDir()
		url := srv.URL + "/f"
		err := f.DownloadWithin(context.Background(), url, sum(payload), filepath.Join(dir, "f"), transfer.Limits{})
		if err == nil {
			t.Fatal("download succeeded")
		}
		announced := len(payload) / 2
		for _, want := range []string{url, fmt.Sprintf("more than its Content-Length of %d bytes", announced)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if n := c.read.Load(); n > int64(announced)+1 {
			t.Errorf("read %d bytes of a body announced as %d", n, announced)
		}
		if got := srv.requests(); got != 1 {
			t.Errorf("%d requests, want 1", got)
		}
		onlyFiles(t, dir)
	})
}

// Two requests for one pinned file at once (an archive every platform
// places) download it once: the second takes the first's from the cache.
func TestGetSharedDigestDownloadsOnce(t *testing.T) {
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		<-release
		w.Write(payload)
	})
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fetcher(t)
	f.Cache = c
	dir := t.TempDir()
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			errs <- f.Get(context.Background(), srv.URL+"/scripts.tgz", sum(payload), filepath.Join(dir, strconv.Itoa(i)))
		}()
	}
	time.Sleep(100 * time.Millisecond) // both asked
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.requests(); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
	for i := range 2 {
		if b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i))); err != nil || !bytes.Equal(b, payload) {
			t.Errorf("file %d: %v", i, err)
		}
	}
}

// A download is the file as the server stores it, the bytes upstream's
// checksums and curl see: a .tar.gz stored with Content-Encoding: gzip
// (an S3 object uploaded so) is not handed over decompressed.
func TestDownloadKeepsContentEncoding(t *testing.T) {
	var stored bytes.Buffer
	zw := gzip.NewWriter(&stored)
	zw.Write(payload)
	zw.Close()
	var asked atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		// Sent encoded whatever the request accepts, as such an object is.
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(stored.Len()))
		w.Write(stored.Bytes())
	})
	dir := t.TempDir()
	dst := filepath.Join(dir, "download")
	if err := fetcher(t).DownloadWithin(context.Background(), srv.URL+"/x.tar.gz", sum(stored.Bytes()), dst, transfer.Limits{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, stored.Bytes()) {
		t.Errorf("file holds %d bytes, not the %d stored", len(got), stored.Len())
	}
	if a, _ := asked.Load().(string); a != "identity" {
		t.Errorf("Accept-Encoding %q, want identity", a)
	}
}

// Offline without a mirror, a download the cache lacks is said to be
// missing from the cache, and with no cache (--no-cache) that the cache
// was not read, rather than that it lacks the file.
func TestOfflineMissSaysWhereItLooked(t *testing.T) {
	good := strings.Repeat("0", 64)
	f := fetcher(t)
	f.Offline = true
	err := f.Get(context.Background(), "http://127.0.0.1:1/pkg.tgz", good, filepath.Join(t.TempDir(), "download"))
	if err == nil || !strings.Contains(err.Error(), "which --no-cache leaves unread") {
		t.Errorf("offline, no cache: %v", err)
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.Cache = c
	err = f.Get(context.Background(), "http://127.0.0.1:1/pkg.tgz", good, filepath.Join(t.TempDir(), "download"))
	if err == nil || !strings.Contains(err.Error(), "is not in the cache (offline without --mirror") {
		t.Errorf("offline, with a cache: %v", err)
	}
}

// A 429 or 503 saying when to come back (Retry-After) is asked again no
// sooner: retried after the backoff alone, it was refused the same way
// until the retries ran out.
func TestDownloadWaitsRetryAfter(t *testing.T) {
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var first time.Time
			srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					first = time.Now()
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(code)
					return
				}
				if since := time.Since(first); since < time.Second {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(code)
					t.Errorf("asked again after %s, before the 1 s the server asked for", since)
					return
				}
				full(w)
			})
			f := fetcher(t)
			var logged []string
			f.Log = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			if err := f.Download(context.Background(), srv.URL+"/pkg.tgz", sum(payload), filepath.Join(t.TempDir(), "download")); err != nil {
				t.Fatal(err)
			}
			if len(logged) != 1 || !strings.HasSuffix(logged[0], "retrying in 1s") {
				t.Errorf("logged %q, want one retry saying it waits 1s", logged)
			}
		})
	}
}

// A download kept just above the watchdog's floor, which it passes for
// as long as its body takes, fails once it has taken its
// DownloadTimeout, retries included, naming the URL, the bytes
// received and the time it took.
func TestDownloadTimeoutBoundsATrickle(t *testing.T) {
	const chunk = 64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		for {
			if _, err := w.Write(make([]byte, chunk)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	dir := t.TempDir()
	dst := filepath.Join(dir, "download")
	f := fetcher(t)
	f.Retries = 3
	f.Limits.DownloadTimeout = 300 * time.Millisecond
	start := time.Now()
	// Without the timeout, the test's own bound ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// 6.4 KB/s, far over a floor of 100 B/s: the watchdog lets it run.
	err := f.DownloadWithin(ctx, srv.URL+"/trickle.tgz", sum(payload), dst, transfer.Limits{Stall: 200 * time.Millisecond, MinRate: 100})
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "download "+srv.URL+"/trickle.tgz: gave up after ") ||
		!strings.Contains(err.Error(), "over the 300ms one download may take (limits.download-timeout, --download-timeout)") ||
		!regexp.MustCompile(`: [1-9][0-9]* of 1073741824 bytes received`).MatchString(err.Error()) {
		t.Fatalf("err = %v", err)
	}
	// Well short of what the body takes at its pace (47 hours).
	if elapsed > time.Minute {
		t.Errorf("took %s", elapsed)
	}
	if got := srv.requests(); got != 1 {
		t.Errorf("%d requests, want 1: the timeout is not an attempt's, retried", got)
	}
	noFile(t, dst)
	onlyFiles(t, dir)
}
