package main

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/pallet-dev/pallet/internal/testregistry"
)

// A registry that answers an upload with a Docker-Content-Digest other
// than the digest of what pallet sent (it stored other bytes, or says
// so) fails the push naming the request, both digests and the image,
// as containerd refuses it; before, the push succeeded and printed a
// digest the registry does not hold. Caught on a blob or on a
// platform's manifest, it moves no tag; on the one manifest a push of
// one tag writes, the error says the tag may have moved. Once the
// registry is well, the same push succeeds. A blob the registry holds
// but names by another digest when asked with HEAD is not taken as
// there.
func TestPushRegistryNamingOtherDigestRefused(t *testing.T) {
	const other = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  a: {local: {path: a.txt}, licenses: none}
images:
  app:
    tags: ["1", latest]
    base: scratch
    platforms: [linux/amd64]
    files:
      - artifact: a
        dest: /a.txt
`)
	for _, c := range []struct {
		name string
		// path is part of the path of the requests the registry answers
		// naming other; ref is the -o reference.
		path, ref string
		wants     []string
		tagMoves  bool
	}{
		{"blob", "/blobs/uploads/", "/fault/app", []string{"upload sha256:", "/v2/fault/app/blobs/", "for the blob "}, false},
		{"manifest by digest", "/manifests/sha256:", "/fault/app", []string{"/v2/fault/app/manifests/sha256:", "for the manifest pallet sent as sha256:"}, false},
		{"manifest by tag", "/manifests/", "/fault/app:1", []string{"/v2/fault/app/manifests/1:", "tag 1 may now name what it stored"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lying atomic.Bool
			lying.Store(true)
			reg := testregistry.Start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					// A registry that misreports what it stored misreports it when
					// asked again (HEAD) too.
					put := r.Method == http.MethodPut && strings.Contains(r.URL.Path, c.path)
					head := r.Method == http.MethodHead && c.path == "/blobs/uploads/" && strings.Contains(r.URL.Path, "/blobs/sha256:")
					if lying.Load() && (put || head) {
						w = &namingOther{ResponseWriter: w, digest: other, code: http.StatusCreated}
						if head {
							w.(*namingOther).code = http.StatusOK
						}
					}
					h.ServeHTTP(w, r)
				})
			})
			args := []string{"build", "-q", "-f", recipe, "--cache-dir", t.TempDir(), "-o", "registry:" + reg.Host + c.ref}
			_, _, err := palletOut(t, args...)
			if err == nil {
				t.Fatal("the push succeeded though the registry said it stored other bytes")
			}
			for _, w := range append([]string{"push " + reg.Host + "/fault/app:1 (image app at " + recipe + ":5", " naming " + other + " (its Docker-Content-Digest)"}, c.wants...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			tags := []string{"1", "latest"}
			if c.tagMoves {
				tags = tags[1:]
			}
			for _, tag := range tags {
				if _, err := remote.Head(mustRef(t, reg.Host+"/fault/app:"+tag)); err == nil {
					t.Errorf("tag %s was set by a push that failed", tag)
				}
			}

			lying.Store(false)
			stdout, stderr, err := palletOut(t, args...)
			if err != nil {
				t.Fatalf("the same push once the registry is well: %v\n%s", err, stderr)
			}
			m := digestLine.FindStringSubmatch(strings.TrimSpace(strings.Split(stdout, "\n")[0]))
			if m == nil {
				t.Fatalf("the push printed %q", stdout)
			}
			img, err := remote.Image(mustRef(t, reg.Host+"/fault/app:1"))
			if err != nil {
				t.Fatal(err)
			}
			if d, err := img.Digest(); err != nil || d.String() != m[2] {
				t.Errorf("tag 1 is %v, the push printed %s", d, m[2])
			}
			if err := validate.Image(img); err != nil {
				t.Errorf("tag 1 does not pull whole: %v", err)
			}
		})
	}
}

// namingOther answers code with digest as its Docker-Content-Digest,
// whatever the registry stored.
type namingOther struct {
	http.ResponseWriter
	digest string
	code   int
}

func (n *namingOther) WriteHeader(code int) {
	if code == n.code {
		n.Header().Set("Docker-Content-Digest", n.digest)
	}
	n.ResponseWriter.WriteHeader(code)
}

// A registry that rate limits every request for a while, answering 429
// with a Retry-After of that while, is asked again once it has passed:
// a push to it and a build from a base on it succeed. Before, a request
// was retried after go-containerregistry's own backoff (1 s, then 3 s)
// and failed inside the window.
func TestRegistryRetryAfterWaited(t *testing.T) {
	const window = 6 * time.Second
	var (
		mu      sync.Mutex
		limited time.Time // when the window began; zero: not yet
		on      atomic.Bool
		refused atomic.Int32
	)
	reg := testregistry.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on.Load() && r.URL.Path != "/v2/" {
				mu.Lock()
				if limited.IsZero() {
					limited = time.Now()
				}
				left := window - time.Since(limited)
				mu.Unlock()
				if left > 0 {
					refused.Add(1)
					w.Header().Set("Retry-After", strconv.Itoa(int(left.Round(time.Second)/time.Second)+1))
					http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	for _, c := range []struct {
		name string
		args func() []string
	}{
		{"push", func() []string {
			return []string{"build", "-q", "-f", smallRecipe(t, "scratch", "app\n"), "--no-cache", "-o", "registry:" + reg.Host + "/limited/app:1"}
		}},
		{"base", func() []string {
			mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", "base\n"), "--no-cache", "-o", "registry:"+reg.Host+"/limited/base:1")
			return []string{"build", "-q", "-f", smallRecipe(t, reg.Host+"/limited/base:1", "app\n"), "--cache-dir", t.TempDir(), "-o", "oci:" + filepath.Join(t.TempDir(), "out")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args()
			mu.Lock()
			limited = time.Time{}
			mu.Unlock()
			refused.Store(0)
			on.Store(true)
			defer on.Store(false)
			if _, stderr, err := palletOut(t, args...); err != nil {
				t.Fatalf("pallet %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			if refused.Load() == 0 {
				t.Fatal("the registry never refused a request: the test proves nothing")
			}
		})
	}
}

// A registry whose token server (its Bearer realm) answers a token cut
// short, a proxy's HTML page or JSON with no token fails the push and a
// build from a base on it saying that the token server of that registry
// gave no token, naming the request, and never quoting the answer.
// Before, the error ended in "unexpected end of JSON input", or, with no
// token, in the registry's 401 blaming the credentials. Answers holding
// a token, as "token" or as "access_token", are taken.
func TestRegistryTokenServerAnswerChecked(t *testing.T) {
	for _, c := range []struct {
		name, answer, want string
		// quoted is part of answer the error must not hold.
		quoted string
	}{
		{"cut short", `{"token": "sec`, "answered 14 bytes that are not a JSON token", `"sec`},
		{"html", `<html><body>sign in to the proxy</body></html>`, "that are not a JSON token", "sign in"},
		{"no token", `{"expires_in": 300}`, "answered with no token", "expires_in"},
		{"token", `{"token": "secret"}`, "", ""},
		{"access token", `{"access_token": "secret"}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var base atomic.Bool
			reg := testregistry.Start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !base.Load() {
						h.ServeHTTP(w, r)
						return
					}
					if r.URL.Path == "/token" {
						w.Write([]byte(c.answer))
						return
					}
					if r.Header.Get("Authorization") != "Bearer secret" {
						w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="reg"`)
						http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
						return
					}
					r.Header.Del("Authorization")
					h.ServeHTTP(w, r)
				})
			})
			mustPallet(t, "build", "-q", "-f", smallRecipe(t, "scratch", "base\n"), "--no-cache", "-o", "registry:"+reg.Host+"/tok/base:1")
			base.Store(true)
			for _, args := range [][]string{
				{"build", "-q", "-f", smallRecipe(t, "scratch", "app\n"), "--no-cache", "-o", "registry:" + reg.Host + "/tok/app:1"},
				{"build", "-q", "-f", smallRecipe(t, reg.Host+"/tok/base:1", "app\n"), "--cache-dir", t.TempDir(), "-o", "oci:" + filepath.Join(t.TempDir(), "out")},
			} {
				_, stderr, err := palletOut(t, args...)
				if c.want == "" {
					if err != nil {
						t.Errorf("pallet %s: %v\n%s", strings.Join(args, " "), err, stderr)
					}
					continue
				}
				if err == nil {
					t.Fatalf("pallet %s succeeded with no token", strings.Join(args, " "))
				}
				for _, w := range []string{"GET http://" + reg.Host + "/token: the token server of " + reg.Host, c.want, "/tok/"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("pallet %s: the error does not say %q: %v", args[len(args)-1], w, err)
					}
				}
				if strings.Contains(err.Error(), c.quoted) {
					t.Errorf("the error quotes the token server's answer: %v", err)
				}
			}
		})
	}
}
