package artifact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// proxyGate stands between the go command and the module proxies it is
// given (GOPROXY), holding each response to the download limits. The go
// command has none: a proxy that stalls, or trickles, would hold a source
// build for ever, and one that sends without end would fill the disk.
// Responses pass through unchanged otherwise, and the go command still
// proves every module against go.sum and the checksum database.
type proxyGate struct {
	lim transfer.Limits
	// timeout bounds each response in all (DownloadTimeout): a proxy
	// trickling a module zip just above MinRate passes the watchdog for
	// as long as the zip's size takes at its pace.
	timeout time.Duration
	client  *http.Client
	srv     *http.Server
	// base is the gate's own URL, http://127.0.0.1:PORT.
	base string

	mu sync.Mutex
	// upstream maps a gate path ("/1/https/proxy.golang.org") to the
	// proxy it stands for; the path names it, so that a go command's
	// message about the gate's URL still says which proxy failed.
	upstream map[string]string
	// notes say why the gate cut responses off, by the gate's URL of
	// each: the go command's failure names that URL, and reads only
	// "unexpected EOF".
	notes map[string]string
}

// gateSlot starts a Fetcher's gate once, when a go command first needs it.
type gateSlot struct {
	once sync.Once
	gate *proxyGate
	err  error
}

// defaultGoProxy is the go command's GOPROXY when none is set.
const defaultGoProxy = "https://proxy.golang.org,direct"

// gated returns env with its module proxies behind the gate: each
// http(s) entry of GOPROXY, but one the go command would send
// credentials to (a netrc machine, GOAUTH other than netrc or off), which
// the gate cannot add. The env is returned as it is offline (the
// mirror's file proxy), or when the gate cannot start.
func (f *Fetcher) gated(env []string) []string {
	if f.gates == nil || f.Offline {
		return env
	}
	proxy, auth := cmp.Or(EnvValue(env, "GOPROXY"), defaultGoProxy), EnvValue(env, "GOAUTH")
	if auth != "" && auth != "netrc" && auth != "off" {
		return env
	}
	var creds *httpCreds
	if auth != "off" {
		c, err := loadHTTPCreds()
		if err != nil || c.fallback != nil {
			return env // a default netrc entry: the go command may send it anywhere
		}
		creds = c
	}
	f.gates.once.Do(func() { f.gates.gate, f.gates.err = startGate(f.Limits, f.Client) })
	g := f.gates.gate
	if f.gates.err != nil {
		f.Log("module proxies not bounded by pallet's download limits: %v", f.gates.err)
		return env
	}
	// GOPROXY is a list of entries, each followed by "," (the next on a
	// 404 or 410) or "|" (the next on any error); the separators stay.
	var b strings.Builder
	changed := false
	for proxy != "" {
		i := strings.IndexAny(proxy, ",|")
		entry, sep := proxy, ""
		if i >= 0 {
			entry, sep = proxy[:i], proxy[i:i+1]
			proxy = proxy[i+1:]
		} else {
			proxy = ""
		}
		if gatePath, ok := g.register(strings.TrimSpace(entry), creds); ok {
			entry, changed = g.base+gatePath, true
		}
		b.WriteString(entry + sep)
	}
	if !changed {
		return env
	}
	return append(env, "GOPROXY="+b.String())
}

// startGate listens on loopback for the go command's requests.
func startGate(lim Limits, client *http.Client) (*proxyGate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{}
	}
	g := &proxyGate{lim: lim.Limits.WithDefaults(), timeout: lim.timeout(), client: client, base: "http://" + ln.Addr().String(), upstream: map[string]string{}, notes: map[string]string{}}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go g.srv.Serve(ln)
	return g, nil
}

// register puts the proxy entry behind the gate and returns its path
// there, unless it is no http(s) URL ("direct", "off", file://), carries
// credentials, or names a host the netrc file has credentials for.
func (g *proxyGate) register(entry string, creds *httpCreds) (string, bool) {
	u, err := url.Parse(entry)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	if creds != nil {
		for _, m := range creds.machines {
			if strings.EqualFold(m.machine, u.Hostname()) {
				return "", false
			}
		}
	}
	base := strings.TrimRight(entry, "/")
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, b := range g.upstream {
		if b == base {
			return p, true
		}
	}
	// Numbered, so that no proxy's path is a prefix of another's.
	p := fmt.Sprintf("/%d/%s/%s%s", len(g.upstream)+1, u.Scheme, u.Host, strings.TrimRight(u.EscapedPath(), "/"))
	g.upstream[p] = base
	return p, true
}

// upstreamFor returns the proxy URL a request to the gate stands for.
func (g *proxyGate) upstreamFor(escapedPath string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, base := range g.upstream {
		if rest, ok := strings.CutPrefix(escapedPath, p+"/"); ok {
			return base + "/" + rest, true
		}
	}
	return "", false
}

// maxGateNotes bounds the notes a gate keeps for one build.
const maxGateNotes = 1024

func (g *proxyGate) note(r *http.Request, format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.notes) < maxGateNotes {
		g.notes[g.base+r.URL.RequestURI()] = fmt.Sprintf(format, args...)
	}
}

// explain is a go command's failure message with the notes on the
// responses it names, and the gate's URLs in it put back as the proxies
// they stand for: the go command names what it was given, and
// "reading http://127.0.0.1:35707/1/https/proxy.golang.org/..." would
// send whoever reads it looking for a server on loopback.
func (g *proxyGate) explain(msg string) string {
	if g == nil {
		return msg
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var add []string
	for u, n := range g.notes {
		if strings.Contains(msg, u) {
			add = append(add, n)
		}
	}
	// Longest first: no gate path is a prefix of another's (each starts
	// with its own number), but the order need not depend on that.
	paths := slices.SortedFunc(maps.Keys(g.upstream), func(a, b string) int { return len(b) - len(a) })
	for _, p := range paths {
		msg = strings.ReplaceAll(msg, g.base+p, ShownURL(g.upstream[p]))
	}
	if len(add) == 0 {
		return msg
	}
	slices.Sort(add)
	return msg + "\n" + strings.Join(add, "\n")
}

func (g *proxyGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "pallet's module proxy gate takes GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	target, ok := g.upstreamFor(r.URL.EscapedPath())
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	start := time.Now()
	ctx, stop := context.WithTimeoutCause(r.Context(), g.timeout, errGateTimeout)
	defer stop()
	ctx, dog, cancel := transfer.Watch(ctx, g.lim.Stall, g.lim.MinRate)
	defer cancel(nil)
	defer dog.Stop()
	// The go command gone is no timeout of the proxy's.
	overtime := func() bool { return r.Context().Err() == nil && errors.Is(context.Cause(ctx), errGateTimeout) }
	req, err := http.NewRequestWithContext(ctx, r.Method, target, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"Accept", "User-Agent"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := g.client.Do(req)
	if err != nil {
		// The go command shows the body of an error response.
		if transfer.StallOf(ctx) != nil {
			err = fmt.Errorf("module proxy %s: no response for %s (limits.stall)", ShownURL(target), g.lim.Stall)
		} else if overtime() {
			err = fmt.Errorf("module proxy %s: no response within the %s one response may take (limits.download-timeout, --download-timeout)", ShownURL(target), g.timeout)
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength > g.lim.MaxBytes {
		http.Error(w, fmt.Sprintf("module proxy %s: Content-Length %d bytes is over the limit of %d bytes (limits.download)", ShownURL(target), resp.ContentLength, g.lim.MaxBytes), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"Content-Type", "Content-Length", "Cache-Control", "Last-Modified", "ETag"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	dog.Restart(g.lim.Stall)
	n, err := io.Copy(w, io.LimitReader(dog.Reader(resp.Body), g.lim.MaxBytes+1))
	se := transfer.StallOf(ctx)
	switch {
	case n > g.lim.MaxBytes:
		g.note(r, "module proxy %s: cut off at the limit of %d bytes (limits.download); the server kept sending", ShownURL(target), g.lim.MaxBytes)
	case err != nil && se != nil && se.Moved == 0:
		g.note(r, "module proxy %s: cut off after %d bytes: nothing received for %s (limits.stall)", ShownURL(target), n, g.lim.Stall)
	case err != nil && se != nil:
		g.note(r, "module proxy %s: cut off after %d bytes: slower than %d bytes/s over %s (limits.stall)", ShownURL(target), n, g.lim.MinRate, g.lim.Stall)
	case err != nil && overtime():
		g.note(r, "module proxy %s: cut off after %s and %s: over the %s one response may take (limits.download-timeout, --download-timeout)", ShownURL(target), received(n, resp.ContentLength), time.Since(start).Round(time.Millisecond), g.timeout)
	case err != nil && !errors.Is(err, context.Canceled):
		// The go command sees the body end early and says so.
	default:
		return
	}
	// The go command must not take a body cut short for a whole one.
	panic(http.ErrAbortHandler)
}

// errGateTimeout ends a module proxy response that took longer than its
// DownloadTimeout.
var errGateTimeout = errors.New("module proxy response took too long")

// Close stops the gate, if a go command started it.
func (f *Fetcher) Close() error {
	if f.gates == nil || f.gates.gate == nil {
		return nil
	}
	return f.gates.gate.srv.Close()
}

// explainGo adds to a go command's failure what the gate cut off.
func (f *Fetcher) explainGo(msg string) string {
	if f.gates == nil {
		return msg
	}
	return f.gates.gate.explain(msg)
}

// ExplainGoError is err, from a step that ran the go command with an
// environment of GoEnv (the licences of a binary's modules), said as
// explainGo says a go command's failure; errors.Is and As see err.
func (f *Fetcher) ExplainGoError(err error) error {
	if err == nil {
		return nil
	}
	msg := f.explainGo(err.Error())
	if msg == err.Error() {
		return err
	}
	return &explainedError{msg: msg, err: err}
}

// explainedError is an error said otherwise.
type explainedError struct {
	msg string
	err error
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }
