package artifact_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/platform"
)

// hosts are loopback servers reached by names, as DNS would have it: the
// credentials are bound to names, and a redirect between two of them is a
// redirect to another host. The names are under example.com, which the
// test certificate is for.
type hosts struct {
	addr map[string]string // name -> 127.0.0.1:port
	tls  *tls.Config       // trusts the test servers' certificate
	mu   sync.Mutex
	seen map[string][]http.Header // name -> headers of each request
}

func newHosts() *hosts {
	return &hosts{addr: map[string]string{}, seen: map[string][]http.Header{}}
}

// serve starts a server for name; handle answers after the request's
// headers are recorded.
func (h *hosts) serve(t *testing.T, name string, tls bool, handle http.HandlerFunc) string {
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen[name] = append(h.seen[name], r.Header.Clone())
		h.mu.Unlock()
		handle(w, r)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(record)
		h.tls = srv.Client().Transport.(*http.Transport).TLSClientConfig
	} else {
		srv = httptest.NewServer(record)
	}
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	h.addr[name+":"+port] = addr
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + name + ":" + port
}

func (h *hosts) headers(name string) []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[name]
}

// fetcher is a Fetcher whose client dials the named servers and trusts
// the test certificate.
func (h *hosts) fetcher(t *testing.T) (*artifact.Fetcher, *[]string) {
	f := fetcher(t)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if a, ok := h.addr[addr]; ok {
				addr = a
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	tr.TLSClientConfig = h.tls
	t.Cleanup(tr.CloseIdleConnections)
	f.Client = &http.Client{Transport: tr}
	var logs []string
	f.Log = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	return f, &logs
}

const (
	netrcPassword = "n3trc-s3cret"
	headerToken   = "h3ader-t0ken"
)

func netrc(t *testing.T, content string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "netrc")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(artifact.NetrcEnv, p)
}

// serveAuthed serves payload only to a request with alice's netrc
// password and the header token.
func serveAuthed(w http.ResponseWriter, r *http.Request) {
	u, p, _ := r.BasicAuth()
	if u != "alice" || p != netrcPassword || r.Header.Get("X-Token") != headerToken {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	full(w)
}

func TestDownloadSendsNetrcAndHeaderToTheirHostOnly(t *testing.T) {
	h := newHosts()
	cdn := h.serve(t, "cdn.example.com", false, func(w http.ResponseWriter, r *http.Request) { full(w) })
	files := h.serve(t, "files.example.com", false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, cdn+"/f", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/f", http.StatusFound)
		case "/forbidden":
			http.Error(w, "no", http.StatusForbidden)
		default:
			serveAuthed(w, r)
		}
	})
	netrc(t, "# CI credentials\nmachine other.example.com login bob password nope\nmachine files.example.com\n  login alice\n  password "+netrcPassword+"\n")
	t.Setenv("PALLET_HTTP_HEADER_FILES", "files.example.com X-Token: "+headerToken)
	f, logs := h.fetcher(t)
	dir := t.TempDir()

	for _, path := range []string{"/f", "/here"} {
		if err := f.Download(context.Background(), files+path, sum(payload), filepath.Join(dir, "f")); err != nil {
			t.Fatalf("download %s with netrc and header credentials: %v", path, err)
		}
	}
	if err := f.Download(context.Background(), files+"/redirect", sum(payload), filepath.Join(dir, "g")); err != nil {
		t.Fatal(err)
	}
	for _, hd := range h.headers("cdn.example.com") {
		if hd.Get("Authorization") != "" || hd.Get("X-Token") != "" {
			t.Errorf("the redirect to another host carried credentials: %v", hd)
		}
	}
	if len(h.headers("cdn.example.com")) == 0 {
		t.Fatal("the redirect did not reach the other host")
	}

	err := f.Download(context.Background(), files+"/forbidden", sum(payload), filepath.Join(dir, "h"))
	if err == nil {
		t.Fatal("forbidden download succeeded")
	}
	basic := base64.StdEncoding.EncodeToString([]byte("alice:" + netrcPassword))
	for _, s := range append([]string{err.Error()}, *logs...) {
		for _, secret := range []string{netrcPassword, headerToken, basic} {
			if strings.Contains(s, secret) {
				t.Errorf("a message shows a credential: %s", s)
			}
		}
	}
}

// The build record of a download made with credentials holds none.
func TestDownloadCredentialsStayOutOfTheRecord(t *testing.T) {
	h := newHosts()
	files := h.serve(t, "files.example.com", false, serveAuthed)
	netrc(t, "machine files.example.com login alice password "+netrcPassword)
	t.Setenv("PALLET_HTTP_HEADER", "files.example.com X-Token: "+headerToken)
	f, _ := h.fetcher(t)
	p, _ := platform.Parse("linux/amd64")
	res, err := f.Fetch(context.Background(), &artifact.Request{Name: "f", Platform: p, Kind: &artifact.URL{URL: files + "/f", SHA256: sum(payload)}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res.Record)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), netrcPassword) || strings.Contains(string(data), headerToken) || strings.Contains(string(data), "alice") {
		t.Errorf("the record holds credentials: %s", data)
	}
}

// A download that began over https never sends credentials over plain
// http, even to a host they are for.
func TestDownloadCredentialsNotSentAfterDowngrade(t *testing.T) {
	h := newHosts()
	plain := h.serve(t, "files.example.com", false, func(w http.ResponseWriter, r *http.Request) { full(w) })
	secure := h.serve(t, "files.example.com", true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain+"/f", http.StatusFound)
	})
	netrc(t, "machine files.example.com login alice password "+netrcPassword)
	t.Setenv("PALLET_HTTP_HEADER_X", "files.example.com X-Token: "+headerToken)
	f, _ := h.fetcher(t)
	if err := f.Download(context.Background(), secure+"/f", sum(payload), filepath.Join(t.TempDir(), "f")); err != nil {
		t.Fatal(err)
	}
	seen := h.headers("files.example.com")
	if len(seen) != 2 {
		t.Fatalf("%d requests, want the https one and the http one", len(seen))
	}
	if u, _, _ := (&http.Request{Header: seen[0]}).BasicAuth(); u != "alice" || seen[0].Get("X-Token") != headerToken {
		t.Errorf("the https request lacked the credentials: %v", seen[0])
	}
	if seen[1].Get("Authorization") != "" || seen[1].Get("X-Token") != "" {
		t.Errorf("credentials went over plain http after a redirect from https: %v", seen[1])
	}
}

func TestDownloadNetrcDefaultEntry(t *testing.T) {
	h := newHosts()
	files := h.serve(t, "files.example.com", false, func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); u != "anon" || p != "guest" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		full(w)
	})
	netrc(t, "machine other.example.com login bob password nope\ndefault login anon password guest\n")
	f, _ := h.fetcher(t)
	if err := f.Download(context.Background(), files+"/f", sum(payload), filepath.Join(t.TempDir(), "f")); err != nil {
		t.Fatalf("download with the default entry: %v", err)
	}
}

func TestDownloadCredentialErrorsHideValues(t *testing.T) {
	netrc(t, "")
	f := fetcher(t)
	for _, bad := range []string{"Authorization: Bearer " + headerToken, "https://files.example.com X-Token: " + headerToken, "files.example.com " + headerToken} {
		t.Setenv("PALLET_HTTP_HEADER_BAD", bad)
		err := f.Download(context.Background(), "http://127.0.0.1:1/f", sum(payload), filepath.Join(t.TempDir(), "f"))
		if err == nil || !strings.Contains(err.Error(), "PALLET_HTTP_HEADER_BAD") {
			t.Errorf("%q: error %v, want one naming the variable", bad, err)
		} else if strings.Contains(err.Error(), headerToken) {
			t.Errorf("%q: the error shows the value: %v", bad, err)
		}
	}
	t.Setenv("PALLET_HTTP_HEADER_BAD", "")
	os.Unsetenv("PALLET_HTTP_HEADER_BAD")
	t.Setenv(artifact.NetrcEnv, filepath.Join(t.TempDir(), "missing"))
	if err := f.Download(context.Background(), "http://127.0.0.1:1/f", sum(payload), filepath.Join(t.TempDir(), "f")); err == nil || !strings.Contains(err.Error(), "netrc") {
		t.Errorf("a NETRC naming a missing file: %v", err)
	}
}

// A password written into the URL itself is not repeated in errors.
func TestDownloadErrorsRedactURLPassword(t *testing.T) {
	netrc(t, "")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request, n int) { http.Error(w, "no", http.StatusNotFound) })
	u := strings.Replace(srv.URL, "http://", "http://alice:pw-in-url@", 1) + "/f"
	err := fetcher(t).Download(context.Background(), u, sum(payload), filepath.Join(t.TempDir(), "f"))
	if err == nil || strings.Contains(err.Error(), "pw-in-url") || !strings.Contains(err.Error(), "404") {
		t.Errorf("error %v: want a 404 without the password", err)
	}
}

// A download refused with 401 or 403 says whether pallet sent the host
// credentials, and from where, or how to give them: the status alone
// left a user whose netrc names another host, or who has none, guessing.
func TestDownloadRefusalSaysWhatWasSent(t *testing.T) {
	h := newHosts()
	cdn := h.serve(t, "cdn.example.com", false, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "who are you", http.StatusForbidden)
	})
	files := h.serve(t, "files.example.com", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, cdn+"/f", http.StatusFound)
			return
		}
		serveAuthed(w, r)
	})
	host := strings.TrimPrefix(files, "http://")
	cdnHost := strings.TrimPrefix(cdn, "http://")
	for _, c := range []struct {
		name, netrc, header, path string
		want                      []string
	}{
		{"none", "", "", "/f", []string{"401 Unauthorized; pallet sent " + host + " no credentials: give them in a netrc file (NETRC, ~/.netrc) or as PALLET_HTTP_HEADER_<ANY>=\"" + host + " Name: value\""}},
		{"another host's", "machine other.example.com login bob password nope\n", "", "/f", []string{"pallet sent " + host + " no credentials"}},
		{"netrc", "machine files.example.com login alice password wrong\n", "", "/f", []string{"401 Unauthorized; " + host + " refused the credentials pallet sent it (from the netrc file)"}},
		{"both", "machine files.example.com login alice password wrong\n", "files.example.com X-Token: wrong", "/f", []string{"refused the credentials pallet sent it (from PALLET_HTTP_HEADER_* and the netrc file)"}},
		{"redirected", "machine files.example.com login alice password wrong\n", "", "/moved", []string{"403 Forbidden; pallet sent " + cdnHost + " no credentials"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			netrc(t, c.netrc)
			if c.header != "" {
				t.Setenv("PALLET_HTTP_HEADER_FILES", c.header)
			}
			f, _ := h.fetcher(t)
			err := f.Download(context.Background(), files+c.path, sum(payload), filepath.Join(t.TempDir(), "f"))
			if err == nil {
				t.Fatal("a refused download succeeded")
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %v, want it to say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("the message shows a credential: %v", err)
			}
		})
	}
}
