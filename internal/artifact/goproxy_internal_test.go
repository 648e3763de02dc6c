package artifact

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// Which GOPROXY entries go behind the gate: http(s) proxies the go
// command sends no credentials to; the list's separators stay.
func TestGatedGoProxy(t *testing.T) {
	netrc := filepath.Join(t.TempDir(), "netrc")
	if err := os.WriteFile(netrc, []byte("machine private.example login u password p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NETRC", netrc)
	f := New()
	t.Cleanup(func() { f.Close() })
	last := func(env []string) string {
		v := "(unset)"
		for _, kv := range env {
			if s, ok := strings.CutPrefix(kv, "GOPROXY="); ok {
				v = s
			}
		}
		return v
	}
	gate := func() string { return f.gates.gate.base }
	for _, c := range []struct {
		env  []string
		want func() string
	}{
		{nil, func() string { return gate() + "/1/https/proxy.golang.org,direct" }},
		{[]string{"GOPROXY=https://proxy.example.com/sub/|direct"}, func() string { return gate() + "/2/https/proxy.example.com/sub|direct" }},
		{[]string{"GOPROXY=file:///m,http://127.0.0.1:9/p"}, func() string { return "file:///m," + gate() + "/3/http/127.0.0.1:9/p" }},
		{[]string{"GOPROXY=https://u:pw@proxy.example.com"}, func() string { return "https://u:pw@proxy.example.com" }},
		{[]string{"GOPROXY=https://private.example,https://proxy.golang.org"}, func() string { return "https://private.example," + gate() + "/1/https/proxy.golang.org" }},
		{[]string{"GOPROXY=off"}, func() string { return "off" }},
		{[]string{"GOPROXY=https://proxy.golang.org", "GOAUTH=git /src"}, func() string { return "https://proxy.golang.org" }},
		{[]string{"GOPROXY=https://private.example", "GOAUTH=off"}, func() string { return gate() + "/4/https/private.example" }},
	} {
		got := last(f.gated(c.env))
		if want := c.want(); got != want {
			t.Errorf("gated(%q): GOPROXY=%s, want %s", c.env, got, want)
		}
	}
	for path, want := range map[string]string{
		"/1/https/proxy.golang.org/example.com/!a/@v/list": "https://proxy.golang.org/example.com/!a/@v/list",
		"/2/https/proxy.example.com/sub/x/@v/v1.0.0.zip":   "https://proxy.example.com/sub/x/@v/v1.0.0.zip",
		"/2/https/proxy.example.com/x/@v/list":             "",
		"/12/https/proxy.golang.org/x/@v/list":             "",
		"/elsewhere/x":                                     "",
	} {
		got, ok := f.gates.gate.upstreamFor(path)
		if got != want || ok != (want != "") {
			t.Errorf("upstreamFor(%s) = %q, %v; want %q", path, got, ok, want)
		}
	}
	// A default netrc entry may be sent to any host: nothing is gated.
	if err := os.WriteFile(netrc, []byte("default login u password p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := last(f.gated(nil)); got != "(unset)" {
		t.Errorf("with a default netrc entry: GOPROXY=%s", got)
	}
	f.Offline = true
	if got := last(f.gated([]string{"GOPROXY=https://proxy.golang.org"})); got != "https://proxy.golang.org" {
		t.Errorf("offline: GOPROXY=%s", got)
	}
}

// A module proxy sending a zip above the floor, but too slowly to be done
// within DownloadTimeout, is cut off at the timeout: the go command sees
// the body end early, and its failure, explained, names the proxy, the
// bytes received, the time and the limit. Without the bound the zip
// would take 30 s here, and as long as its size takes at the floor's
// pace in the field.
func TestGoProxyGateTimeout(t *testing.T) {
	const size = 512 << 10
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, 512)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(30 * time.Millisecond) // 16 KiB/s
		}
	}))
	t.Cleanup(upstream.Close)
	g, err := startGate(Limits{Limits: transfer.Limits{Stall: 5 * time.Second}, DownloadTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.srv.Close() })
	p, ok := g.register(upstream.URL, nil)
	if !ok {
		t.Fatalf("%s not gated", upstream.URL)
	}
	gated := g.base + p + "/example.com/m/@v/v1.0.0.zip"
	start := time.Now()
	resp, err := http.Get(gated)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if took := time.Since(start); err == nil || n >= size || took > 10*time.Second {
		t.Fatalf("through the gate: %d of %d bytes, %v, after %s; want it cut off at the timeout", n, size, err, took)
	}
	msg := g.explain("reading " + gated + ": unexpected EOF")
	if !strings.Contains(msg, "module proxy "+upstream.URL+"/example.com/m/@v/v1.0.0.zip: cut off after ") ||
		// The time is rounded to the millisecond: "1s" or "1.002s".
		!regexp.MustCompile(fmt.Sprintf(` of %d bytes and 1(\.[0-9]+)?s: `, size)).MatchString(msg) ||
		!strings.Contains(msg, "over the 1s one response may take (limits.download-timeout, --download-timeout)") {
		t.Errorf("explained: %s", msg)
	}
}
