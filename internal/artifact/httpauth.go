package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// HeaderEnv names the environment variables that add a header to the
// downloads from one host: PALLET_HTTP_HEADER, or PALLET_HTTP_HEADER_ and
// any suffix (one variable per header), each "HOST Name: value", e.g.
//
//	PALLET_HTTP_HEADER_GITHUB="github.com Authorization: Bearer ghp_..."
//
// HOST is a host name (any port) or HOST:PORT. The suffix only tells the
// variables apart; the host is the one in the value, matched exactly.
const HeaderEnv = "PALLET_HTTP_HEADER"

// NetrcEnv names the netrc file downloads take credentials from;
// ~/.netrc (or ~/_netrc on Windows) when it is unset.
const NetrcEnv = "NETRC"

// httpCreds are what downloads may send, per host: headers from the
// environment and netrc entries. They are added by the transport to each
// request for its own host, so a redirect to another host carries none
// (http.Client copies only the headers of the first request, which has
// none of them), and they appear in no error, log or record.
type httpCreds struct {
	headers  []hostHeader
	machines []netrcEntry
	// fallback is netrc's default entry, for hosts no machine names.
	fallback *netrcEntry
}

type hostHeader struct {
	host, name, value string
}

type netrcEntry struct {
	machine, login, password string
}

func (c *httpCreds) empty() bool {
	return len(c.headers) == 0 && len(c.machines) == 0 && c.fallback == nil
}

// loadHTTPCreds reads the credentials from the environment and the netrc
// file. A malformed variable is an error naming the variable, never its
// value.
func loadHTTPCreds() (*httpCreds, error) {
	c := &httpCreds{}
	env := os.Environ()
	slices.Sort(env)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k != HeaderEnv && !strings.HasPrefix(k, HeaderEnv+"_") {
			continue
		}
		h, err := parseHostHeader(v)
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", k, err)
		}
		c.headers = append(c.headers, h)
	}
	path, explicit := os.LookupEnv(NetrcEnv)
	if !explicit || path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, nil
		}
		path = filepath.Join(home, ".netrc")
		if runtime.GOOS == "windows" {
			if _, err := os.Stat(path); err != nil {
				path = filepath.Join(home, "_netrc")
			}
		}
		explicit = false
	}
	data, err := bounded.ReadFile(path, maxConfigFile)
	switch {
	case err == nil:
		c.machines, c.fallback, err = parseNetrc(string(data))
		if err != nil {
			return nil, fmt.Errorf("netrc file %s: %w", path, err)
		}
	case explicit || !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("netrc file %s (%s): %w", path, NetrcEnv, err)
	}
	return c, nil
}

// parseHostHeader reads "HOST Name: value".
func parseHostHeader(v string) (hostHeader, error) {
	const want = `want "HOST Name: value", e.g. "files.example.com Authorization: Bearer TOKEN"`
	host, rest, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || host == "" {
		return hostHeader{}, errors.New(want)
	}
	if strings.Contains(host, "/") || strings.Contains(host, "@") {
		return hostHeader{}, fmt.Errorf("the host must be HOST or HOST:PORT, without a scheme or path; %s", want)
	}
	name, value, ok := strings.Cut(strings.TrimSpace(rest), ":")
	name = strings.TrimSpace(name)
	if !ok || !validHeaderName(name) {
		return hostHeader{}, fmt.Errorf("no valid header name after the host; %s", want)
	}
	value = strings.TrimSpace(value)
	if strings.ContainsAny(value, "\r\n\x00") {
		return hostHeader{}, errors.New("the header value holds a line break or NUL")
	}
	return hostHeader{host: strings.ToLower(host), name: http.CanonicalHeaderKey(name), value: value}, nil
}

// validHeaderName is RFC 9110's token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// parseNetrc reads a netrc file as curl and ftp do: "machine NAME" starts
// an entry, "default" the entry for every other host, "login" and
// "password" fill the current one, "account" is ignored, "macdef" skips
// its macro (up to a blank line). Tokens may be quoted ("a b", with \"
// and \\), and # starts a comment.
func parseNetrc(data string) ([]netrcEntry, *netrcEntry, error) {
	var (
		machines []netrcEntry
		fallback *netrcEntry
		cur      *netrcEntry
	)
	t := &netrcTokens{data: data}
	for {
		tok, ok, err := t.next()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		switch tok {
		case "machine":
			name, ok, err := t.next()
			if err != nil || !ok {
				return nil, nil, errors.New("machine without a name")
			}
			if fallback != nil {
				// Like curl: entries after default are not read.
				return machines, fallback, nil
			}
			machines = append(machines, netrcEntry{machine: strings.ToLower(name)})
			cur = &machines[len(machines)-1]
		case "default":
			fallback = &netrcEntry{}
			cur = fallback
		case "login", "password", "account":
			val, ok, err := t.next()
			if err != nil || !ok {
				return nil, nil, fmt.Errorf("%s without a value", tok)
			}
			if cur == nil {
				return nil, nil, fmt.Errorf("%s before any machine or default", tok)
			}
			switch tok {
			case "login":
				cur.login = val
			case "password":
				cur.password = val
			}
		case "macdef":
			if _, _, err := t.next(); err != nil {
				return nil, nil, err
			}
			t.skipMacro()
		default:
			return nil, nil, errors.New("unknown netrc keyword (want machine, default, login, password, account or macdef)")
		}
	}
	return machines, fallback, nil
}

type netrcTokens struct {
	data string
	pos  int
}

func (t *netrcTokens) next() (string, bool, error) {
	for t.pos < len(t.data) {
		c := t.data[t.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			t.pos++
		case c == '#':
			for t.pos < len(t.data) && t.data[t.pos] != '\n' {
				t.pos++
			}
		case c == '"':
			return t.quoted()
		default:
			start := t.pos
			for t.pos < len(t.data) && !strings.ContainsRune(" \t\r\n", rune(t.data[t.pos])) {
				t.pos++
			}
			return t.data[start:t.pos], true, nil
		}
	}
	return "", false, nil
}

func (t *netrcTokens) quoted() (string, bool, error) {
	var b strings.Builder
	for t.pos++; t.pos < len(t.data); t.pos++ {
		c := t.data[t.pos]
		switch {
		case c == '"':
			t.pos++
			return b.String(), true, nil
		case c == '\\' && t.pos+1 < len(t.data):
			t.pos++
			b.WriteByte(t.data[t.pos])
		default:
			b.WriteByte(c)
		}
	}
	return "", false, errors.New("a quoted token is not closed")
}

// skipMacro skips a macdef body: the rest of its line and every line up
// to the first empty one.
func (t *netrcTokens) skipMacro() {
	if i := strings.Index(t.data[t.pos:], "\n\n"); i >= 0 {
		t.pos += i + 2
		return
	}
	t.pos = len(t.data)
}

// matchHost reports whether an entry for pattern applies to the URL host
// hostport: pattern is a host name (any port) or exactly HOST:PORT.
func matchHost(pattern, hostport string) bool {
	hostport = strings.ToLower(hostport)
	if pattern == hostport {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return pattern == host || pattern == "["+host+"]"
}

// netrcFor is the netrc entry for hostport: the first machine naming it,
// else the default entry.
func (c *httpCreds) netrcFor(hostport string) *netrcEntry {
	for i := range c.machines {
		if matchHost(c.machines[i].machine, hostport) {
			return &c.machines[i]
		}
	}
	return c.fallback
}

// refusal says, for a download refused with 401 or 403 by the server
// that answered u, whether pallet sent that host credentials and where
// they come from: the status alone does not tell a user whose netrc
// names another host, or who has none, what to do. secure is set when
// the download began over https (authTransport's).
func (c *httpCreds) refusal(u *url.URL, secure bool) string {
	host := u.Host
	var from []string
	if c != nil && !(secure && u.Scheme != "https") {
		for _, h := range c.headers {
			if matchHost(h.host, host) {
				from = append(from, HeaderEnv+"_*")
				break
			}
		}
		if e := c.netrcFor(host); e != nil && e.login != "" {
			from = append(from, "the netrc file")
		}
	}
	if len(from) > 0 {
		return fmt.Sprintf("%s refused the credentials pallet sent it (from %s)", host, strings.Join(from, " and "))
	}
	return fmt.Sprintf("pallet sent %s no credentials: give them in a netrc file (%s, ~/.netrc) or as %s_<ANY>=\"%s Name: value\"", host, NetrcEnv, HeaderEnv, host)
}

// authTransport adds the credentials for each request's own host.
type authTransport struct {
	base  http.RoundTripper
	creds *httpCreds
	// secure is set when the download began over https: credentials are
	// then never sent over plain http, even to a matching host that a
	// redirect leads to.
	secure bool
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.secure && req.URL.Scheme != "https" {
		return a.base.RoundTrip(req)
	}
	var out *http.Request
	clone := func() {
		if out == nil {
			out = req.Clone(req.Context())
		}
	}
	set := map[string]bool{}
	for _, h := range a.creds.headers {
		if !matchHost(h.host, req.URL.Host) {
			continue
		}
		clone()
		// A variable's header replaces the request's own, and several
		// variables naming one header all send it.
		if !set[h.name] {
			out.Header.Del(h.name)
			set[h.name] = true
		}
		out.Header.Add(h.name, h.value)
	}
	if e := a.creds.netrcFor(req.URL.Host); e != nil && e.login != "" && req.Header.Get("Authorization") == "" && !set["Authorization"] {
		clone()
		out.SetBasicAuth(e.login, e.password)
	}
	if out == nil {
		return a.base.RoundTrip(req)
	}
	return a.base.RoundTrip(out)
}

// authClient is f.Client sending creds for downloads that begin at rawURL.
func (f *Fetcher) authClient(creds *httpCreds, rawURL string) *http.Client {
	if creds == nil || creds.empty() {
		return f.Client
	}
	c := *f.Client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &authTransport{base: base, creds: creds, secure: strings.HasPrefix(strings.ToLower(rawURL), "https:")}
	return &c
}

// ShownURL is a URL (a download's, a repository's) as messages and
// records show it: a password written into it shows as xxxxx, and so
// does a token given as the user of an http(s) URL (https://TOKEN@host/...,
// which forges take); ssh's user (git@) is no secret, and stays.
// Records and SBOMs are shared, credentials are not; the fetch itself is
// given the URL whole.
func ShownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return shownUnparsed(raw)
	}
	if u.User == nil || u.Host == "" {
		return raw
	}
	switch _, hasPassword := u.User.Password(); {
	case hasPassword:
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	case u.Scheme == "http" || u.Scheme == "https":
		u.User = url.User("xxxxx")
	default:
		return raw
	}
	return u.String()
}

// shownUnparsed is ShownURL of a URL url.Parse refuses and git may take
// (a password holding % or /: https://u:50%off@host/r.git): everything
// between :// and the last @ is masked, on the side of hiding a path's
// @ rather than showing a secret. Without :// (git@host:org/repo, a
// path) there is nothing to mask.
func shownUnparsed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return raw
	}
	return scheme + "://xxxxx" + rest[at:]
}
