package regauth

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// Timeouts bound every registry request. A zero field takes its default.
// Beside Total, none limits how long a transfer takes: a layer of many
// gigabytes may move slowly, but not stop, nor crawl below MinRate.
type Timeouts struct {
	// Limits are the pace a request is held to, as any transfer. Stall
	// is how long it may go with no byte moving either way, whether
	// sending, waiting for the answer or receiving it, before it fails
	// with a *StallError; MinRate is the fewest bytes a second a body
	// must move, averaged over each Stall: a registry dripping a byte a
	// second would never stall, and never finish. A body that is a file
	// the kernel sends (over plain HTTP) is seen moving only when the
	// watchdog looks, so its stall fails after between one and two
	// Stalls. MaxBytes is not the transport's to hold: a blob's size is
	// its descriptor's, which the caller checks (as the shared cache
	// does its entries').
	transfer.Limits
	// Dial bounds opening a TCP connection. Zero means DefaultDial.
	Dial time.Duration
	// TLSHandshake bounds the TLS handshake. Zero means
	// DefaultTLSHandshake.
	TLSHandshake time.Duration
	// ResponseHeader bounds how long the registry may take to answer
	// once it has a request's whole body: it may be digesting or moving
	// a blob of gigabytes then. Within it, a body gets Stall and the time
	// its bytes take at slowStore (answerWindow): a registry that never
	// answers a manifest held a push 5 minutes a try. Requests without a
	// body get Stall. Zero means DefaultResponseHeader.
	ResponseHeader time.Duration
	// Total bounds one request in all, from its start to its answer's
	// last byte, however it keeps moving (limits.download-timeout,
	// --download-timeout): a registry, or a path, kept just above MinRate
	// would hold a pull or a push for as long as a blob's size takes at
	// its pace. A blob goes up in one request (a PATCH or a PUT) and
	// comes down in one GET, so it bounds each blob's transfer, not a
	// whole pull or push, which may take as long as its blobs need, each
	// within the bound. A request it ends fails with a *TimeoutError,
	// which go-containerregistry does not retry: one that took the
	// whole bound would take it again. Zero means
	// transfer.DefaultTimeout.
	Total time.Duration
	// FinalStall makes a stall end the call: its *StallError comes
	// wrapped, no longer Temporary, so go-containerregistry does not
	// retry the request after its backoff. For calls that only save
	// work (the shared cache's entries), better given up at once.
	FinalStall bool
}

// The defaults of Timeouts beside those of its Limits.
const (
	DefaultDial           = 30 * time.Second
	DefaultTLSHandshake   = 10 * time.Second
	DefaultResponseHeader = 5 * time.Minute
)

// maxRedirects is how many redirects one request may follow, net/http's
// own cap: go-containerregistry replaces net/http's redirect check with
// one that has none, and a registry redirecting to itself kept a build
// going for ever (every hop moves bytes, so no stall ends it).
const maxRedirects = 10

// MaxManifest bounds a manifest or index a registry sends, as containerd
// bounds them: go-containerregistry reads up to 100 MiB into memory, and
// a real one is a few KiB.
const MaxManifest = 4 << 20

// maxPingBody bounds the body of a registry's answer to GET /v2/, its API
// version check: go-containerregistry drains that body to reuse the
// connection, and a registry sending one without end at full speed held
// a push for good (it moves, so no stall ends it). A real one is "{}" or
// a short error.
const maxPingBody = 64 << 10

// boundsKey is the context key of the bounds WithBounds sets.
type boundsKey struct{}

// WithBounds returns ctx with t as the bounds Options puts on the
// registry calls made with it: how a build's limits (limits.stall, over
// --stall-timeout's default) reach its pulls, pushes and shared-cache
// transfers, as they reach its downloads. A zero field of t takes its
// default (transfer.DefaultStall, DefaultDial, ...).
func WithBounds(ctx context.Context, t Timeouts) context.Context {
	return context.WithValue(ctx, boundsKey{}, t)
}

// BoundsOf is what WithBounds set in ctx; its zero fields take their
// defaults when a call is made with them.
func BoundsOf(ctx context.Context) Timeouts {
	t, _ := ctx.Value(boundsKey{}).(Timeouts)
	return t
}

func (t Timeouts) withDefaults() Timeouts {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	t.Limits = t.Limits.WithDefaults()
	set(&t.Dial, DefaultDial)
	set(&t.TLSHandshake, DefaultTLSHandshake)
	set(&t.ResponseHeader, DefaultResponseHeader)
	set(&t.Total, transfer.DefaultTimeout)
	return t
}

// transports keeps one bounded transport per Timeouts, so that registry
// calls share connections as they would with remote.DefaultTransport.
var transports sync.Map // Timeouts or transportKey -> http.RoundTripper

// WithTimeouts is the remote option that sends requests through
// remote.DefaultTransport bounded by t. After Options' own, it replaces
// the context's bounds for that call, and with them the insecure
// registries of Options' context and the record of credentials Explain
// reads.
func WithTimeouts(t Timeouts) remote.Option {
	return remote.WithTransport(transportFor(t, nil))
}

// Transport returns base bounded by t. When base is an *http.Transport,
// a copy of it gets the dial and TLS handshake bounds; the stall and
// response bounds apply to any base.
func Transport(base http.RoundTripper, t Timeouts) http.RoundTripper {
	t = t.withDefaults()
	if ht, ok := base.(*http.Transport); ok {
		ht = ht.Clone()
		ht.DialContext = boundDial(ht.DialContext, t.Dial)
		ht.TLSHandshakeTimeout = t.TLSHandshake
		base = ht
	}
	return &boundedTransport{base: base, t: t, held: &heldHosts{until: map[string]time.Time{}}, realms: &realms{}}
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// boundDial keeps base's dialer (proxies and tests may have their own)
// and only adds the deadline.
func boundDial(base dialFunc, limit time.Duration) dialFunc {
	if base == nil {
		base = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		return base(ctx, network, addr)
	}
}

// StallError reports a registry request abandoned because nothing moved
// for Idle. It is a temporary timeout, so go-containerregistry's retries
// treat it as the network flake it is (unless Timeouts.FinalStall).
type StallError struct {
	// Method and URL are the request's; the URL is without its query,
	// which may hold upload state or a signature.
	Method, URL string
	// While is what the request was doing: "connecting or sending the
	// request", "waiting for the response" or "receiving the response".
	While string
	Idle  time.Duration
	// Sent and Received count body bytes.
	Sent, Received int64
	// Moved is what moved in the last Idle, fewer bytes than MinRate
	// asks for: a crawl rather than a stop when not zero.
	Moved, MinRate int64
}

func (e *StallError) Error() string {
	if e.Moved > 0 {
		return fmt.Sprintf("%s %s: stalled: %d bytes moved in %s while %s, under the floor of %d bytes/s (%d body bytes sent, %d received)",
			e.Method, e.URL, e.Moved, e.Idle, e.While, e.MinRate, e.Sent, e.Received)
	}
	return fmt.Sprintf("%s %s: stalled: nothing moved for %s while %s (%d body bytes sent, %d received)",
		e.Method, e.URL, e.Idle, e.While, e.Sent, e.Received)
}

// Timeout reports true: a stall is a timeout, as net.Error means it.
func (e *StallError) Timeout() bool { return true }

// Temporary reports true: the next attempt may find the network moving.
func (e *StallError) Temporary() bool { return true }

// TimeoutError reports a registry request abandoned because it took
// longer than Timeouts.Total. It is not Temporary: go-containerregistry
// would retry it, and it would take as long again.
type TimeoutError struct {
	// Method and URL are the request's, the URL without its query (as
	// StallError's): the repository, and a blob's digest where the
	// request names it (a pull; an upload is named by its caller).
	Method, URL string
	// While is what the request was doing, as StallError's.
	While string
	// Total is the bound, Took how long the request had run.
	Total, Took time.Duration
	// Sent and Received count body bytes.
	Sent, Received int64
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s %s: gave up after %s while %s, over the %s one registry request may take (limits.download-timeout, --download-timeout; %d body bytes sent, %d received)",
		e.Method, e.URL, e.Took.Round(time.Millisecond), e.While, e.Total, e.Sent, e.Received)
}

// Timeout reports true: the request ran out of time, as net.Error means
// it.
func (e *TimeoutError) Timeout() bool { return true }

// boundedTransport is the RoundTripper Transport returns.
type boundedTransport struct {
	base http.RoundTripper
	t    Timeouts
	held *heldHosts
	// realms are the token servers registries named, for tokenAnswer.
	realms *realms
}

// heldHosts are the hosts that answered 429 or 503 with a Retry-After of
// at most transfer.MaxRetryAfter, each until the time it named: no
// request goes to one before then. go-containerregistry retries such an
// answer after its own backoff (1 s, then 3 s), not the wait asked, so a
// registry rate limiting a push for 5 s failed it; held, the retry goes
// when the registry said it would take it. A longer wait is not held: a
// registry asking for an hour fails the request at once, saying so
// (note), rather than holding it.
type heldHosts struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// wait holds a request to host until the time its last Retry-After
// named, or ctx ends.
func (h *heldHosts) wait(ctx context.Context, host string) error {
	h.mu.Lock()
	until, ok := h.until[host]
	if ok && !time.Now().Before(until) {
		delete(h.until, host)
	}
	h.mu.Unlock()
	d := time.Until(until)
	if !ok || d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// note holds host as resp's Retry-After asks, if it does. One asking
// for longer than transfer.MaxRetryAfter is the error note returns,
// saying so, which go-containerregistry does not retry: its retries,
// seconds apart, would be refused alike, and the error said nothing of
// when the registry would take the request. It reads resp's body then.
func (h *heldHosts) note(host string, resp *http.Response) error {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return nil
	}
	now := time.Now()
	d, ok := transfer.RetryAfterOf(resp.Header, now)
	if !ok {
		return nil
	}
	if d > transfer.MaxRetryAfter {
		body := resp.Body
		resp.Body = io.NopCloser(io.LimitReader(body, maxErrorBody))
		err := transport.CheckError(resp)
		body.Close()
		return fmt.Errorf("%w (%s: the registry asks to be asked again in %s, its Retry-After, longer than the %s pallet waits; try again later)", err, resp.Status, d.Round(time.Second), transfer.MaxRetryAfter)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if until := now.Add(d); until.After(h.until[host]) {
		h.until[host] = until
	}
	return nil
}

// maxErrorBody bounds the body of a refusal read to say what it is.
const maxErrorBody = 64 << 10

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A request net/http makes to follow a redirect carries the response
	// that sent it there, which carries the request before: the chain.
	hops := 0
	for r := req.Response; r != nil && r.Request != nil; r = r.Request.Response {
		hops++
	}
	if hops >= maxRedirects {
		u := *req.URL
		u.RawQuery, u.User = "", nil
		return nil, fmt.Errorf("%s %s: stopped after %d redirects", req.Method, u.String(), hops)
	}
	if err := b.held.wait(req.Context(), req.URL.Host); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	x := newExchange(req, b.t, cancel)
	out := req.Clone(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		// Over TLS the bytes go through the process to be encrypted
		// anyway: only plain HTTP gains from a file sent by the kernel.
		plain := req.URL.Scheme == "http"
		out.Body = x.body(req.Body, plain)
		if req.GetBody != nil {
			// The transport may replay the body on a fresh connection.
			out.GetBody = func() (io.ReadCloser, error) {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				return x.body(body, plain), nil
			}
		}
	}
	resp, err := b.base.RoundTrip(out)
	if err != nil {
		x.end()
		cancel(nil)
		if se := stallOf(ctx); se != nil {
			return nil, x.stalled(se)
		}
		if te := timeoutOf(ctx); te != nil {
			return nil, te
		}
		return nil, err
	}
	x.receiving()
	b.realms.note(req.URL.Host, resp)
	if err := storedOther(req, resp, x.url); err != nil {
		resp.Body.Close()
		x.end()
		cancel(nil)
		return nil, err
	}
	if note, ok := req.Context().Value(storedKey{}).(func(string, string)); ok {
		if repo, d := storedBlob(req, resp); d != "" {
			note(req.URL.Host+"/"+repo, d)
		}
	}
	resp.Request = req
	resp.Body = &receiving{ReadCloser: resp.Body, x: x, ctx: ctx, cancel: cancel}
	if err := b.held.note(req.URL.Host, resp); err != nil {
		return nil, err
	}
	if registry, ok := b.realms.of(x.url); ok && resp.StatusCode == http.StatusOK && !apiPath(req.URL.Path) {
		if resp.Body, err = tokenAnswer(resp.Body, req.Method+" "+x.url, registry); err != nil {
			return nil, err
		}
	}
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/manifests/") {
		if resp.ContentLength > MaxManifest {
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s: a manifest of %d bytes, over the %d pallet reads", req.Method, x.url, resp.ContentLength, MaxManifest)
		}
		resp.Body = &capped{ReadCloser: resp.Body, left: MaxManifest, limit: MaxManifest, what: req.Method + " " + x.url, over: "a manifest"}
	} else if req.Method == http.MethodGet && req.URL.Path == "/v2/" {
		resp.Body = &capped{ReadCloser: resp.Body, left: maxPingBody, limit: maxPingBody, what: req.Method + " " + x.url, over: "an answer to the API version check"}
	}
	return resp, nil
}

// realms maps each token server (a Bearer realm, without its query) a
// registry's 401 named to that registry.
type realms struct{ m sync.Map }

var realmOf = lazyre.New(`(?i)^\s*bearer\s.*\brealm="([^"]+)"`)

func (r *realms) note(registry string, resp *http.Response) {
	if resp.StatusCode != http.StatusUnauthorized {
		return
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if m := realmOf().FindStringSubmatch(h); m != nil {
			if u, err := url.Parse(m[1]); err == nil {
				u.RawQuery, u.ForceQuery, u.User, u.Fragment = "", false, nil, ""
				r.m.Store(u.String(), registry)
			}
		}
	}
}

// of is the registry whose token server u (without its query) is.
func (r *realms) of(u string) (string, bool) {
	v, ok := r.m.Load(u)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// apiPath says whether path is one of the registry API's own, which no
// realm is taken to be, however a registry names its realm.
func apiPath(path string) bool {
	if path == "/v2/" {
		return true
	}
	for _, p := range []string{"/blobs/", "/manifests/", "/tags/", "/referrers/"} {
		if strings.Contains(path, p) {
			return true
		}
	}
	return false
}

// maxToken is as much of a token server's answer as go-containerregistry
// reads.
const maxToken = 64 << 10

// tokenAnswer reads a token server's answer to check it is what
// go-containerregistry will take, which says only "unexpected end of
// JSON input" of an answer cut short or of a proxy's HTML page, or sends
// an empty token when the answer holds none (the registry then refuses
// it, and the error blamed the credentials). It returns the answer to be
// read again. The answer is never quoted: it holds the token.
func tokenAnswer(body io.ReadCloser, what, registry string) (io.ReadCloser, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxToken+1))
	body.Close()
	if err != nil {
		return nil, err
	}
	if len(b) > maxToken {
		// go-containerregistry says so, with its bound.
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	switch {
	case json.Unmarshal(b, &tok) != nil:
		return nil, fmt.Errorf("%s: the token server of %s answered %d bytes that are not a JSON token (cut short, or a proxy's page): pallet cannot authenticate to %s; check the registry's token service, or a proxy between", what, registry, len(b), registry)
	case tok.Token == "" && tok.AccessToken == "":
		return nil, fmt.Errorf("%s: the token server of %s answered with no token (neither \"token\" nor \"access_token\"): pallet cannot authenticate to %s; check the registry's token service", what, registry, registry)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// storedOther refuses the answer to an upload (a blob's last PUT, a
// mount, a manifest's PUT) whose Docker-Content-Digest names another
// digest than that of what was sent, as containerd refuses it, and the
// answer to a HEAD or GET of a blob or manifest by digest that names
// another: go-containerregistry does not look, so a registry that stored
// other bytes (or says so) made a push succeed with pallet printing a
// digest the tag did not name, or an index whose children the registry
// holds under other digests; and a blob it said it stored, checked with
// HEAD before the next upload, was taken as there. where is the
// request's URL without its query.
func storedOther(req *http.Request, resp *http.Response, where string) error {
	got := resp.Header.Get("Docker-Content-Digest")
	if got == "" || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil
	}
	var want, what string
	switch {
	case strings.Contains(req.URL.Path, "/blobs/uploads/") && (req.Method == http.MethodPut || req.Method == http.MethodPost && resp.StatusCode == http.StatusCreated):
		what = "blob"
		want = req.URL.Query().Get("digest")
		if want == "" {
			want = req.URL.Query().Get("mount")
		}
	case (req.Method == http.MethodHead || req.Method == http.MethodGet) && (strings.Contains(req.URL.Path, "/blobs/") || strings.Contains(req.URL.Path, "/manifests/")):
		what = "manifest"
		if strings.Contains(req.URL.Path, "/blobs/") {
			what = "blob"
		}
		if ref := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]; strings.Contains(ref, ":") {
			want = ref
		}
		if want != "" && got != want && strings.HasPrefix(got, strings.SplitN(want, ":", 2)[0]+":") {
			return fmt.Errorf("%s %s: the registry answered %d naming %s (its Docker-Content-Digest) for the %s %s: it holds other bytes under that digest or misreports them", req.Method, where, resp.StatusCode, got, what, want)
		}
		return nil
	case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodPut && req.GetBody != nil:
		what = "manifest"
		body, err := req.GetBody()
		if err != nil {
			return nil
		}
		h := sha256.New()
		_, err = io.Copy(h, io.LimitReader(body, MaxManifest+1))
		body.Close()
		if err != nil {
			return nil
		}
		want = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	// A digest of another algorithm cannot be compared with ours.
	alg, _, _ := strings.Cut(want, ":")
	if want == "" || got == want || !strings.HasPrefix(got, alg+":") {
		return nil
	}
	err := fmt.Errorf("%s %s: the registry answered %d naming %s (its Docker-Content-Digest) for the %s pallet sent as %s: it stored other bytes or misreports them, and the push cannot be trusted", req.Method, where, resp.StatusCode, got, what, want)
	if ref := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]; what == "manifest" && !strings.Contains(ref, ":") {
		err = fmt.Errorf("%w; tag %s may now name what it stored", err, ref)
	}
	return err
}

// storedKey is the context key of the note WithStored sets.
type storedKey struct{}

// WithStored returns ctx with note told of each blob a registry says it
// stored from a request made with ctx: an upload committed, or a blob
// mounted from another repository (201 Created), as the repository
// ("HOST/PATH", as in the request's URL) and the blob's digest. A push
// learns so which blobs a repository lacked before it, which
// go-containerregistry does not say.
func WithStored(ctx context.Context, note func(repository, digest string)) context.Context {
	return context.WithValue(ctx, storedKey{}, note)
}

// storedBlob is the repository (its path) and the digest of the blob
// resp says the registry stored from req, or "" if it says none.
func storedBlob(req *http.Request, resp *http.Response) (repo, digest string) {
	path := req.URL.Path
	i := strings.LastIndex(path, "/blobs/uploads/")
	if resp.StatusCode != http.StatusCreated || i < 0 || !strings.HasPrefix(path, "/v2/") {
		return "", ""
	}
	q := req.URL.Query()
	switch req.Method {
	case http.MethodPut:
		digest = q.Get("digest")
	case http.MethodPost:
		digest = cmp.Or(q.Get("mount"), q.Get("digest"))
	}
	if digest == "" {
		return "", ""
	}
	return path[len("/v2/"):i], digest
}

// timeoutOf is the *TimeoutError that ended ctx, if that is what ended
// it.
func timeoutOf(ctx context.Context) *TimeoutError {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te
	}
	return nil
}

// stallOf is the *StallError that ended ctx, if that is what ended it.
func stallOf(ctx context.Context) *StallError {
	var se *StallError
	if errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

// Phases of an exchange, as StallError.While says them.
const (
	phaseSending   = "connecting or sending the request"
	phaseAwaiting  = "waiting for the response"
	phaseReceiving = "receiving the response"
)

// exchange is the watchdog of one request (a transfer.Watchdog) and what
// its StallError tells: the phase, and the bytes sent and received.
type exchange struct {
	method, url   string
	contentLength int64
	t             Timeouts
	dog           *transfer.Watchdog
	// total ends the request at t.Total, however it moves.
	total *time.Timer

	// mu guards the fields below, and orders the phases' restarts of
	// dog; it is taken before dog's own lock, never after.
	mu             sync.Mutex
	phase          string
	sent, received int64
	// probed is how far the file a sendingFile hands the kernel was
	// seen sent.
	probed int64
}

func newExchange(req *http.Request, t Timeouts, cancel context.CancelCauseFunc) *exchange {
	u := *req.URL
	u.RawQuery, u.ForceQuery, u.User = "", false, nil
	x := &exchange{method: req.Method, url: u.String(), contentLength: req.ContentLength, t: t, phase: phaseAwaiting}
	if req.Body != nil && req.Body != http.NoBody {
		x.phase = phaseSending
	}
	x.dog = transfer.NewWatchdog(t.Stall, t.MinRate, func(e *transfer.StallError) {
		x.mu.Lock()
		err := &StallError{Method: x.method, URL: x.url, While: x.phase, Idle: e.Window, Sent: x.sent, Received: x.received, Moved: e.Moved, MinRate: e.MinRate}
		x.mu.Unlock()
		cancel(err)
	})
	start := time.Now()
	x.total = time.AfterFunc(t.Total, func() {
		x.mu.Lock()
		err := &TimeoutError{Method: x.method, URL: x.url, While: x.phase, Total: t.Total, Took: time.Since(start), Sent: x.sent, Received: x.received}
		x.mu.Unlock()
		cancel(err)
	})
	return x
}

// enter moves to phase, where idle is allowed without progress; it never
// goes back from receiving, whatever order the transport reports in.
func (x *exchange) enter(phase string, idle time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.phase == phaseReceiving {
		return
	}
	x.phase = phase
	x.dog.Restart(idle)
}

// slowStore is the slowest a registry is taken to digest or move what it
// was sent before it answers: object storage copying a blob into place.
const slowStore = 8 << 20 // bytes a second

// answerWindow is how long the registry may take to answer once it has a
// body of n bytes: Stall, and the time n takes at slowStore, up to
// ResponseHeader (never less than Stall).
func (t Timeouts) answerWindow(n int64) time.Duration {
	w := t.ResponseHeader
	if n/slowStore < int64(w/time.Second) { // else n's time would overflow
		w = min(w, t.Stall+time.Duration(n)*(time.Second/slowStore))
	}
	return max(t.Stall, w)
}

func (x *exchange) sentAll() {
	x.mu.Lock()
	n := x.sent
	x.mu.Unlock()
	x.enter(phaseAwaiting, x.t.answerWindow(n))
}
func (x *exchange) receiving() { x.enter(phaseReceiving, x.t.Stall) }

func (x *exchange) moved(sent, received int) {
	x.mu.Lock()
	x.sent += int64(sent)
	x.received += int64(received)
	all := x.phase == phaseSending && x.contentLength > 0 && x.sent >= x.contentLength
	x.dog.Moved(int64(sent + received))
	x.mu.Unlock()
	if all {
		x.sentAll()
	}
}

func (x *exchange) end() {
	x.dog.Stop()
	x.total.Stop()
}

// stalled is se as the request's caller gets it: wrapped when the stall
// is final, so that the client library does not take it for a flake.
func (x *exchange) stalled(se *StallError) error {
	if x.t.FinalStall {
		return fmt.Errorf("%w", se)
	}
	return se
}

// body wraps a request body to report its progress: a file the kernel
// can send itself (over plain HTTP) as a sendingFile, anything else as a
// sending.
func (x *exchange) body(rc io.ReadCloser, plain bool) io.ReadCloser {
	s := sending{ReadCloser: rc, x: x}
	if f, ok := sendable(rc); ok && plain {
		if start, err := f.Seek(0, io.SeekCurrent); err == nil {
			x.mu.Lock()
			x.probed = 0
			x.mu.Unlock()
			x.dog.Probe(func() int64 {
				x.mu.Lock()
				defer x.mu.Unlock()
				at, err := f.Seek(0, io.SeekCurrent)
				if x.phase != phaseSending || err != nil || at-start <= x.probed {
					return 0
				}
				n := at - start - x.probed
				x.sent += n
				x.probed = at - start
				return n
			})
			return &sendingFile{sending: s, f: f}
		}
	}
	return &s
}

// capped fails a body that goes on past left bytes.
type capped struct {
	io.ReadCloser
	left int64
	// what is the request, over what the body is, for the error.
	what, over string
	limit      int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer.
		var b [1]byte
		if n, _ := c.ReadCloser.Read(b[:]); n > 0 {
			return 0, fmt.Errorf("%s: %s over the %d bytes pallet reads", c.what, c.over, c.limit)
		}
		return c.ReadCloser.Read(p)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// sending is a request body that reports its progress.
type sending struct {
	io.ReadCloser
	x *exchange
}

func (s *sending) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n > 0 {
		s.x.moved(n, 0)
	}
	if err == io.EOF {
		s.x.sentAll()
	}
	return n, err
}

// Close marks the body sent: the transport closes it once written.
func (s *sending) Close() error {
	s.x.sentAll()
	return s.ReadCloser.Close()
}

// receiving is a response body that reports its progress and turns the
// cancellation a stall causes into the *StallError.
type receiving struct {
	io.ReadCloser
	x      *exchange
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (r *receiving) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.x.moved(0, n)
	}
	if err == io.EOF {
		// Done, whether or not the caller gets round to closing it.
		r.x.end()
	}
	if err != nil && err != io.EOF {
		if se := stallOf(r.ctx); se != nil {
			return n, r.x.stalled(se)
		}
		if te := timeoutOf(r.ctx); te != nil {
			return n, te
		}
	}
	return n, err
}

func (r *receiving) Close() error {
	r.x.end()
	err := r.ReadCloser.Close()
	r.cancel(nil)
	return err
}

// sendingFile is a request body that is a file, such as a layer blob the
// cache has verified already. It lets net/http see the file (SyscallConn
// is what net's sendfile looks for), so the kernel moves the bytes from
// the page cache to the socket (sendfile(2)) instead of the process
// reading and writing them through a buffer: that copy was half of what a
// push cost in CPU. Read is then never called; the watchdog sees progress
// in the file's offset instead, which Linux's sendfile advances as it
// sends (the exchange's probe). It checks that offset when the timer
// fires, so a stall of such a body fails after between one and two
// Stalls rather than after exactly one.
type sendingFile struct {
	sending
	f *os.File
}

// SyscallConn hands the file to net's sendfile.
func (s *sendingFile) SyscallConn() (syscall.RawConn, error) { return s.f.SyscallConn() }

// Read serves a transport that copies after all (sendfile refused the
// file): the probe counts what it reads, as it counts what sendfile sends.
func (s *sendingFile) Read(p []byte) (int, error) {
	n, err := s.f.Read(p)
	if err == io.EOF {
		s.x.sentAll()
	}
	return n, err
}
