package artifact

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/tempfile"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// MismatchError reports a download whose content is not what the recipe pinned.
type MismatchError struct {
	URL, Expected, Actual string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("sha256 mismatch for %s: expected %s, got %s", e.URL, e.Expected, e.Actual)
}

// Get puts the file pinned by want into file: from the mirror directory
// when it holds it, else from the mirror URL or the upstream URL unless
// offline.
func (f *Fetcher) Get(ctx context.Context, rawURL, want, file string) error {
	if f.Cache != nil && f.getting != nil {
		// One file many requests share (an archive of scripts every
		// platform places) is downloaded once: the others wait, then
		// take it from the cache.
		v, _ := f.getting.LoadOrStore(want, make(chan struct{}, 1))
		turn := v.(chan struct{})
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-turn }()
	}
	if f.Cache != nil {
		// Any size: the cache took the entry under some recipe's
		// limits, not necessarily this one's.
		err := copyVerified(f.Cache.Blob(want), want, file, 0)
		if err == nil {
			return nil
		}
		if !os.IsNotExist(err) {
			// A corrupt entry is reported and replaced, never used.
			f.Log("cache: %v; fetching again", err)
			os.Remove(f.Cache.Blob(want))
		}
		defer func() {
			// Verified by now when it exists: keep it for the next build.
			if _, err := os.Stat(file); err == nil {
				os.Link(file, f.Cache.Blob(want))
			}
		}()
	}
	if f.Mirror != "" {
		err := copyVerified(mirrorBlob(f.Mirror, want), want, file, f.Limits.Limits.WithDefaults().MaxBytes)
		if err == nil {
			return nil
		}
		if !os.IsNotExist(err) {
			if f.Offline {
				return err
			}
			// A mirror is a cache: a damaged entry is said and left
			// as it is (the mirror is fetch's to mend), and the file
			// comes from the network.
			f.Log("%v; downloading %s instead", err, ShownURL(rawURL))
		}
	}
	if f.Offline {
		return fmt.Errorf("offline: %s (sha256 %s) is not %s", rawURL, want, f.offlineWhere())
	}
	from := rawURL
	if f.MirrorURL != "" {
		from = strings.TrimSuffix(f.MirrorURL, "/") + "/sha256/" + want
	}
	return f.Download(ctx, from, want, file)
}

// downloadTemp names a download being written, beside the file it is to
// become.
const downloadTemp = ".download-*"

// mirrorBlob is where a mirror keeps the download pinned by sum.
func mirrorBlob(mirror, sum string) string {
	return filepath.Join(mirror, "sha256", sum)
}

// copyVerified copies src to dst (dst "" only checks it), failing unless
// its sha256 is want: a mirror is a cache, and a cache is checked on
// read. A file over limit bytes (0 for any size) is refused unread, as
// its download would be: copied first and hashed after, a mirror file
// made huge (a sparse file of a terabyte) filled the disk, and took
// hours, before it was found wrong.
func copyVerified(src, want, dst string, limit int64) error {
	in, err := bounded.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a file", src, bounded.TypeName(info.Mode()))
	}
	overLimit := func(size int64) error {
		return fmt.Errorf("mirror file %s is %d bytes, over the download limit of %d bytes (--max-download, limits.download)", src, size, limit)
	}
	// It may grow as it is read: receive reads one byte past the limit.
	read := int64(math.MaxInt64 - 1)
	if limit > 0 {
		if info.Size() > limit {
			return overLimit(info.Size())
		}
		read = limit
	}
	var (
		out io.Writer = io.Discard
		tmp *os.File
	)
	if dst != "" {
		if tmp, err = tempfile.Create(filepath.Dir(dst), ".mirror-*"); err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		out = tmp
	}
	n, got, err := receive(out, in, -1, read)
	if tmp != nil {
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
	}
	switch {
	case err != nil:
		return err
	case limit > 0 && n > limit:
		return overLimit(n)
	}
	if got != want {
		return fmt.Errorf("mirror file %s is corrupt: sha256 %s, expected %s", src, got, want)
	}
	if tmp == nil {
		return nil
	}
	return os.Rename(tmp.Name(), dst)
}

// maxRedirects is how many redirects a download follows, as net/http's
// default policy.
const maxRedirects = 10

// redirectError is a redirect a download does not follow: a loop, or
// one to a scheme other than http and https (file:, ftp:).
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// withRedirectPolicy is c following at most maxRedirects redirects, and
// only to http and https, each refusal a redirectError.
func withRedirectPolicy(c *http.Client) *http.Client {
	cc := *c
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if s := req.URL.Scheme; s != "http" && s != "https" {
			return &redirectError{fmt.Sprintf("redirected to %s, which is not http or https", ShownURL(req.URL.String()))}
		}
		if len(via) >= maxRedirects {
			return &redirectError{fmt.Sprintf("stopped after %d redirects", maxRedirects)}
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &cc
}

// permanent marks a download failure that retrying cannot fix.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// diskWriter marks the errors of writing what arrived: the disk's (no
// space left, a read-only or over-quota file system), which retrying the
// transfer does not mend, and which the retries' backoff only delayed.
type diskWriter struct{ w io.Writer }

type diskError struct{ error }

func (e diskError) Unwrap() error { return e.error }

func (d diskWriter) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	if err != nil {
		err = diskError{err}
	}
	return n, err
}

// Download fetches rawURL into file, verifying its sha256, within the
// default Limits. The file appears only once verified: a truncated or
// wrong download never sits under the final name. Server errors, broken
// connections and stalls are retried with exponential backoff; 4xx,
// digest mismatches and oversized bodies are not.
func (f *Fetcher) Download(ctx context.Context, rawURL, want, file string) error {
	return f.DownloadWithin(ctx, rawURL, want, file, f.Limits.Limits)
}

// DownloadWithin is Download bounded by lim: each attempt is abandoned
// when nothing arrives for lim.Stall, and a body larger than lim.MaxBytes
// is refused.
//
// Requests carry the credentials of their host from the environment
// (HeaderEnv) and the netrc file (NetrcEnv), added per request so that a
// redirect to another host carries none of them.
func (f *Fetcher) DownloadWithin(ctx context.Context, rawURL, want, file string, lim transfer.Limits) error {
	_, err := f.download(ctx, rawURL, want, file, lim)
	return err
}

// DownloadUnpinned fetches rawURL as Download does, with no digest to
// check, and returns the sha256 of what it received: how pallet lock
// learns a pin. With file "", the body is hashed as it streams and kept
// nowhere, so a large release costs no disk and no memory.
func (f *Fetcher) DownloadUnpinned(ctx context.Context, rawURL, file string, lim transfer.Limits) (string, error) {
	return f.download(ctx, rawURL, "", file, lim)
}

// download is Download, DownloadWithin and DownloadUnpinned: want ""
// accepts any content, file "" keeps none.
func (f *Fetcher) download(ctx context.Context, rawURL, want, file string, lim transfer.Limits) (string, error) {
	lim = lim.WithDefaults()
	creds, err := loadHTTPCreds()
	if err != nil {
		return "", fmt.Errorf("download %s: credentials: %w", ShownURL(rawURL), err)
	}
	client := withRedirectPolicy(f.authClient(creds, rawURL))
	// The watchdog holds each attempt to a floor, which a server (or a
	// path) just above it passes for as long as the size limit takes:
	// the whole download, retries included, is held to its time too.
	timeout := f.Limits.timeout()
	parent, start := ctx, time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errDownloadTimeout)
	defer cancel()
	var (
		got  string
		last attempt
	)
	err = transfer.Retry(ctx, f.Retries, f.Backoff, func() (err error) {
		last = attempt{length: -1}
		got, err = f.downloadOnce(ctx, client, creds, rawURL, want, file, lim, &last)
		return err
	}, func(err error) bool {
		var p permanent
		return !errors.As(err, &p)
	}, func(err error, wait time.Duration) {
		// err already names the URL.
		f.Log("%v; retrying in %s", err, wait)
	})
	if err != nil && parent.Err() == nil && errors.Is(context.Cause(ctx), errDownloadTimeout) {
		return "", fmt.Errorf("download %s: gave up after %s, over the %s one download may take (limits.download-timeout, --download-timeout): %s received by the last attempt", ShownURL(rawURL), time.Since(start).Round(time.Millisecond), timeout, received(last.n, last.length))
	}
	if p := (permanent{}); errors.As(err, &p) {
		return "", p.error
	}
	return got, err
}

// errDownloadTimeout ends a download that took longer than its
// DownloadTimeout.
var errDownloadTimeout = errors.New("download took too long")

// attempt is how far one attempt of a download got: the bytes of its
// body received, of its announced length (-1 when unknown).
type attempt struct{ n, length int64 }

func (f *Fetcher) downloadOnce(ctx context.Context, client *http.Client, creds *httpCreds, rawURL, want, file string, lim transfer.Limits, at *attempt) (string, error) {
	// The watchdog, not a deadline, bounds the attempt: a large download
	// may take hours as long as bytes keep coming.
	ctx, dog, cancel := transfer.Watch(ctx, lim.Stall, lim.MinRate)
	defer cancel(nil)
	defer dog.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", permanent{err}
	}
	// The pin is of the file as the server stores it, what upstream's
	// checksums and curl see. Left alone, net/http would ask for gzip and
	// hand over a body sent with Content-Encoding: gzip decompressed (a
	// .tar.gz stored so in S3 arrives as its .tar). With identity asked,
	// a body sent encoded anyway is passed on as it came.
	req.Header.Set("Accept-Encoding", "identity")
	// A password in the URL itself is not repeated in messages.
	shown := ShownURL(rawURL)
	resp, err := client.Do(req)
	if err != nil {
		if transfer.StallOf(ctx) != nil {
			return "", fmt.Errorf("download %s: no response for %s", shown, lim.Stall)
		}
		var (
			re *redirectError
			cv *tls.CertificateVerificationError
		)
		if errors.As(err, &re) || errors.As(err, &cv) {
			// The same answer again, however long one waits.
			return "", permanent{fmt.Errorf("download %s: %w", shown, err)}
		}
		return "", fmt.Errorf("download %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("download %s: %s", shown, resp.Status)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return "", transfer.AskedToWait(err, resp.Header, time.Now())
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			err = fmt.Errorf("%w; %s", err, creds.refusal(resp.Request.URL, strings.HasPrefix(strings.ToLower(rawURL), "https:")))
		}
		return "", permanent{err}
	}
	if resp.ContentLength > lim.MaxBytes {
		return "", permanent{fmt.Errorf("download %s: Content-Length %d bytes is over the limit of %d bytes", shown, resp.ContentLength, lim.MaxBytes)}
	}
	var (
		dst io.Writer = io.Discard
		tmp *os.File
	)
	if file != "" {
		if tmp, err = tempfile.Create(filepath.Dir(file), downloadTemp); err != nil {
			return "", permanent{err}
		}
		defer os.Remove(tmp.Name())
		dst = diskWriter{tmp}
	}
	// The rate is asked of the body from its first byte on, however
	// long the answer took to start.
	dog.Restart(lim.Stall)
	at.length = resp.ContentLength
	n, sum, err := receive(dst, counter{dog.Reader(resp.Body), &at.n}, resp.ContentLength, lim.MaxBytes)
	se := transfer.StallOf(ctx)
	var cerr error
	if tmp != nil {
		cerr = tmp.Close()
	}
	var de diskError
	switch {
	case errors.As(err, &de):
		return "", permanent{fmt.Errorf("download %s: stopped after %s: writing it: %w", shown, received(n, resp.ContentLength), de.error)}
	case err != nil && se != nil && se.Moved == 0:
		return "", fmt.Errorf("download %s: stopped after %s: nothing received for %s", shown, received(n, resp.ContentLength), lim.Stall)
	case err != nil && se != nil:
		return "", fmt.Errorf("download %s: stopped after %s: fewer than %d bytes received in %s, slower than the %d bytes/s a download must keep up", shown, received(n, resp.ContentLength), transfer.Floor(lim.Stall, lim.MinRate), lim.Stall, lim.MinRate)
	case err != nil:
		// A body cut short surfaces as a bare "unexpected EOF" or a reset;
		// how far it got is what tells the user the transfer broke.
		return "", fmt.Errorf("download %s: stopped after %s: %w", shown, received(n, resp.ContentLength), err)
	case resp.ContentLength >= 0 && n > resp.ContentLength:
		// The same server will send the same excess again.
		return "", permanent{fmt.Errorf("download %s: the server sent more than its Content-Length of %d bytes", shown, resp.ContentLength)}
	case n > lim.MaxBytes:
		return "", permanent{fmt.Errorf("download %s: stopped at the limit of %d bytes; the server kept sending", shown, lim.MaxBytes)}
	case cerr != nil:
		// What the disk took, as the writes' errors.
		return "", permanent{fmt.Errorf("download %s: writing it: %w", shown, cerr)}
	case resp.ContentLength >= 0 && n != resp.ContentLength:
		return "", fmt.Errorf("download %s: got %d of %d bytes", shown, n, resp.ContentLength)
	case want != "" && sum != want:
		return "", permanent{&MismatchError{URL: shown, Expected: want, Actual: sum}}
	case tmp == nil:
		return sum, nil
	}
	return sum, os.Rename(tmp.Name(), file)
}

// receive copies body into dst and returns how many bytes it read and
// their sha256. It reads at most one byte past what the server announced
// (or limit when it announced nothing), enough to tell that it sent too
// much without taking the rest.
func receive(dst io.Writer, body io.Reader, contentLength, limit int64) (int64, string, error) {
	expect := limit
	if contentLength >= 0 {
		expect = contentLength
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(body, expect+1))
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// counter counts into n the bytes read through it, as they arrive: what
// an attempt cut off mid-read had received.
type counter struct {
	r io.Reader
	n *int64
}

func (c counter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += int64(k)
	return k, err
}

// received says how much of a body arrived, out of its length if known.
func received(n, contentLength int64) string {
	if contentLength >= 0 {
		return fmt.Sprintf("%d of %d bytes", n, contentLength)
	}
	return fmt.Sprintf("%d bytes", n)
}

// offlineWhere says, for an offline build's error, where what it lacks
// was looked for and how to get it there.
func (f *Fetcher) offlineWhere() string {
	if f.Mirror != "" {
		return "in the mirror " + f.Mirror + "; run pallet fetch first"
	}
	if f.Cache == nil {
		return "in the cache, which --no-cache leaves unread (offline without --mirror, a build takes only what earlier builds kept); drop --no-cache, or run pallet fetch --mirror DIR and build with --mirror DIR"
	}
	return "in the cache (offline without --mirror, a build takes only what earlier builds kept); build once online, or run pallet fetch --mirror DIR and build with --mirror DIR"
}
