// Package artifact obtains artifacts: one artifact, for one platform, as a
// file tree on disk plus the licence files that go with it. Each kind of
// artifact (a local path, a pinned download, a Go build of a local module,
// a Go build of a pinned git commit, files of a pinned git commit, a Go
// module from the module proxy, files of such a module) is
// one file implementing Kind. A front end picks the kind from the mode the
// build chose, so a mode that was not chosen never reaches this package.
package artifact

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Kind is one way of obtaining an artifact, fully expanded for one
// platform. Its methods are called by Fetcher, which adds the cache, the
// licences and the record around them.
type Kind interface {
	// Name is the kind as records and messages show it ("url", "go").
	Name() string
	// Key lists everything that can change what Produce makes, for the
	// cache. ok is false for a kind whose result is not cached (it is used
	// where it is).
	Key(f *Fetcher, r *Request) (parts []string, ok bool, err error)
	// Produce makes the artifact's tree under work, a directory of its own.
	Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error)
	// Origin says where the content comes from, with its pins.
	Origin() Origin
	// Mirror copies what an offline build of this kind needs into a
	// mirror directory (pallet fetch). Kinds with nothing to mirror return
	// nil.
	Mirror(ctx context.Context, f *Fetcher, r *Request, dir string) error
}

// Origin is where an artifact's content comes from, as the build record
// shows it; SHA256 and Commit are the pins a cached result must carry.
type Origin struct {
	URL    string `json:"url,omitempty"`
	Path   string `json:"path,omitempty"`
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Tag is the tag a git source's commit was checked to carry.
	Tag string `json:"tag,omitempty"`
	// GitPath is the file or directory taken from a git source's
	// checkout, relative to the repository's root.
	GitPath string `json:"gitPath,omitempty"`
	// Module is module@version for a Go module fetched by version.
	Module string `json:"module,omitempty"`
	// InModule is the file or directory taken from such a module,
	// relative to its root (not "modulePath", the go command's name for
	// the module's import path).
	InModule string `json:"inModule,omitempty"`
	// SHA256 pins a download; for a module, its go.sum hash (h1:...).
	SHA256 string `json:"sha256,omitempty"`
}

// Request is one artifact on one platform, with the kind that makes it.
type Request struct {
	Name     string
	Platform platform.Platform
	// Mode is the mode the build chose ("source", "release", "local"), or
	// empty for an artifact with a single kind.
	Mode    string
	Version string
	// Licenses names licence files relative to the artifact's root; nil
	// finds them by name. NoLicense declares there is none to ship.
	Licenses  []string
	NoLicense bool
	Kind      Kind
}

// How is what the build does for r, as progress shows it: the mode
// chosen ("release"), or the kind of an artifact without modes ("go").
func (r *Request) How() string {
	if r.Mode == "" {
		return r.Kind.Name()
	}
	return r.Mode
}

func (r *Request) String() string {
	return r.On([]platform.Platform{r.Platform})
}

// On names the artifact as String does, for the platforms ps in the
// order given: a message true of the artifact on several platforms says
// so once, naming each ("linux/amd64 and linux/arm64"), rather than once
// per platform or for one of them.
func (r *Request) On(ps []platform.Platform) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	on := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		on = strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	}
	// "mode" only where the recipe has modes: an artifact of one kind
	// has none to choose, and "gomod mode" would send its reader looking
	// for a modes: section it never wrote.
	how := r.Kind.Name()
	if r.Mode != "" {
		how = r.Mode + " mode"
	}
	return fmt.Sprintf("artifact %s (%s, %s)", r.Name, on, how)
}

// Result is what an artifact produced.
type Result struct {
	Tree *tree.Tree
	// Licenses holds the licence files found, named relative to the
	// artifact's root; placed under /LICENSES/<artifact>/.
	Licenses *tree.Tree
	Record   Record
	// Cached says the result came from the cache: nothing was fetched or built.
	Cached bool
	// InCache says every file the result names is in the cache (an entry
	// found, or stored by this run), not in the work directory the fetch
	// was given, which can go as soon as the fetch returns.
	InCache bool
	// GoSource is the directory of the module a Go build compiled, for
	// what must be read beside its binaries (module licences): the local
	// module, the checkout or unpacked module of a build of this run (it
	// lasts as long as the work directory), or, for a result from the
	// cache, the module in ModuleSource's copy there (GoSourceSelected).
	GoSource         string
	GoSourceSelected bool
	// ModuleSource holds, for a build of a checkout or a downloaded
	// module, the files module licences read of its source, by path in it
	// (moduleSnapshot); the cache keeps them with the result, so a build
	// taken from it needs neither the repository nor the network for them.
	ModuleSource *tree.Tree
	// CLicenses holds the copyright files of the Debian packages owning
	// the C libraries a cgo build's binaries contain (Record.CLinked), by
	// path under /LICENSES/<artifact>/ (CLicenseDir); nil when none. Kept
	// apart from Licenses, the artifact's own.
	CLicenses *tree.Tree
	// GoRoot is the GOROOT of the toolchain that a Go build of this run
	// used (Record.GoVersion), as the go command said while it built:
	// where that toolchain's licence is. Empty for a result from the
	// cache, and for go install, whose toolchain is read from its
	// binaries.
	GoRoot string
}

// Record describes where an artifact came from, for logs and the build record.
type Record struct {
	Name     string `json:"name"`
	Mode     string `json:"mode,omitempty"`
	Kind     string `json:"kind"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform"`
	Origin
	// Digest is what was taken when no pin says it: a local file's sha256
	// or a local directory's tree digest.
	Digest string `json:"digest,omitempty"`
	// GoVersion is the toolchain that built a source or go artifact.
	GoVersion string `json:"goToolchain,omitempty"`
	// Skipped counts the entries of an archive that are not placed
	// (device nodes, named pipes), and SkippedNames names the first of
	// them, with what each is: the image has none of them.
	Skipped      int      `json:"skipped,omitempty"`
	SkippedNames []string `json:"skippedNames,omitempty"`
	// CLinked says, for each binary of a cgo build, the C libraries it
	// contains and the shared ones it loads; the build moves it onto its
	// Go binaries in the record.
	CLinked []clibs.Binary `json:"cLinked,omitempty"`
}

// maxSkippedNames bounds the names Record.SkippedNames keeps.
const maxSkippedNames = 8

// skippedName is how Record.SkippedNames says an entry: its name, and
// what it is ("dev/null (character device)").
func skippedName(name, what string) string { return name + " (" + what + ")" }

// SkippedPath is the entry's path in a name of Record.SkippedNames.
func SkippedPath(skipped string) string {
	if i := strings.LastIndex(skipped, " ("); i >= 0 {
		return skipped[:i]
	}
	return skipped
}

// Fetcher obtains artifacts, with the build-wide policy every kind obeys:
// network, mirror, offline, cache, limits. Its zero value is not usable;
// use New.
type Fetcher struct {
	Client *http.Client
	// Retries is how many times a failed download is tried again.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// Mirror is a directory written by `pallet fetch`: downloads and git
	// repositories are taken from it when present.
	Mirror string
	// MirrorURL serves a mirror's layout over http(s); downloads and
	// repositories come from there instead of their upstream URLs.
	MirrorURL string
	// Offline forbids the network: everything must be in Mirror, or,
	// without one, in the cache and in ModCache.
	Offline bool
	// ModCache is, offline without a mirror, the go command's own module
	// cache, read by Go builds as their only module proxy (file://), as
	// a mirror's is: the modules and toolchains earlier builds fetched.
	ModCache string
	// Limits bound each download (size, stall).
	Limits Limits
	// Dpkg is where a cgo build's C libraries are looked up: the build
	// machine's dpkg database and documentation (its zero value), or a
	// test's.
	Dpkg clibs.Dpkg
	// Cache, when set, keeps downloads and built artifacts between builds.
	Cache *cache.Cache
	// Log receives one line per notable event (retries, warnings).
	Log func(format string, args ...any)
	// shared, when set, is where checkouts of one commit fetch it once
	// (ShareCheckouts).
	shared *gitShare
	// gates holds the gate the go command reaches module proxies through
	// (see proxyGate); nil leaves GOPROXY as it is. Close stops it.
	gates *gateSlot
	// getting serialises Gets of one digest into the cache (see Get).
	getting *sync.Map // sha256 → chan struct{}
	// said holds the lines logOnce has logged.
	said *sync.Map
	// goSources are the Go files read for the packages a module's key
	// covers through its links up (see goSourceOf): path → goSourceAt.
	goSources *sync.Map
	// keyReads are the headers a local cgo build's key found, for its
	// build (see keyedReads): keyReadsKey → *cgoReads.
	keyReads *sync.Map
}

// logOnce logs a line once per Fetcher: one that says the same of an
// artifact for each of its platforms, as the build of a module in its
// unpacked tree does, says nothing more the second time.
func (f *Fetcher) logOnce(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if f.said != nil {
		if _, dup := f.said.LoadOrStore(line, true); dup {
			return
		}
	}
	f.Log("%s", line)
}

// New returns a Fetcher with sensible network defaults.
func New() *Fetcher {
	return &Fetcher{
		// No overall timeout: Limits.Stall bounds a dead transfer, and
		// a large one that keeps moving may take as long as it needs.
		Client:  &http.Client{},
		Retries: 3,
		Backoff: 500 * time.Millisecond,
		Log:     func(string, ...any) {},
		gates:   &gateSlot{},
		getting: &sync.Map{},
		said:    &sync.Map{},

		goSources: &sync.Map{},
		keyReads:  &sync.Map{},
	}
}

// Fetch produces r's tree under work, a directory owned by this call. With
// a cache, an artifact whose inputs were seen before is taken from it, and
// a new one is made under a lock and stored.
func (f *Fetcher) Fetch(ctx context.Context, r *Request, work string) (*Result, error) {
	res, err := f.fetch(ctx, r, work)
	if err != nil {
		return nil, &RequestError{Request: r, Err: err}
	}
	// Where it came from is the request's, never the cache entry's: the
	// entry may have been made from a copy elsewhere, by another recipe.
	res.Record.Origin = r.Kind.Origin()
	res.name(r)
	// What was taken without a pin (a local file or directory) shows
	// its digest where a pinned download shows its pin.
	if res.Record.SHA256 == "" {
		res.Record.SHA256 = res.Record.Digest
	}
	res.Record.Digest = ""
	if res.Licenses == nil {
		res.Licenses = tree.New()
	}
	return res, nil
}

// name says in res's record that it is r's.
func (res *Result) name(r *Request) {
	res.Record.Name = r.Name
	res.Record.Mode = r.Mode
	res.Record.Kind = r.Kind.Name()
	res.Record.Version = r.Version
	res.Record.Platform = r.Platform.String()
}

// SameWork names the work r asks for when no part of it depends on the
// platform, "" when one may: requests of one build with the same
// SameWork make the same result, which the build makes once and gives
// each of them (Result.For). A local file, directory or archive, a
// download by its URL and pin, and the files of a git commit or of a
// module version are read and unpacked as they are whatever the image
// runs on; a Go build is compiled for its platform, and a URL written
// with {{arch}}, or pinned per platform, differs in its fields here.
// Unpacked twice, a 70,000-entry zip placed on two platforms took its
// half-minute twice.
func (r *Request) SameWork() string {
	var parts []string
	switch k := r.Kind.(type) {
	case *Local:
		parts = []string{k.Path, k.Extract.key(), strconv.FormatBool(k.KeepLinks), k.Filename}
	case *URL:
		parts = []string{k.URL, k.SHA256, k.Filename, k.Extract.key()}
	case *GitFiles:
		parts = []string{k.Repo, k.Commit, k.Tag, k.Path}
	case *GoModuleFiles:
		parts = []string{k.Module, k.Version, k.Sum, k.Commit, k.Path}
	default:
		return ""
	}
	// The licences found and the include filter's extra patterns follow
	// the request's licence settings; the rest of the request is what
	// its record says (name), not what is made.
	common := []string{r.Name, r.Mode, r.Version, r.Kind.Name(), strings.Join(r.Licenses, "\x00"), strconv.FormatBool(r.NoLicense)}
	return strings.Join(append(common, parts...), "\x01")
}

// For is res, the result of a request whose SameWork is r's, as r's: its
// record names r's platform, and its trees are its own, since a build
// takes the entries of an artifact's tree into the layer that places it
// last (tree.Move), which would empty the other request's too (tree.Clone). The
// files on disk are res's, and last as long as they do.
func (res *Result) For(r *Request) (*Result, error) {
	c := *res
	// Its origin is the same as r's, and what was taken without a pin
	// already shows its digest there (Fetch).
	c.name(r)
	for _, t := range []**tree.Tree{&c.Tree, &c.Licenses, &c.ModuleSource, &c.CLicenses} {
		var err error
		if *t, err = (*t).Clone(); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// produce does the work of r's kind in a fresh work directory.
func (f *Fetcher) produce(ctx context.Context, r *Request, work string) (*Result, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	return r.Kind.Produce(ctx, f, r, work)
}

// RequestError is the failure of one request (Fetch) of several (MirrorTo): the
// caller knows where that request was written, and says it.
type RequestError struct {
	Request *Request
	// On are the platforms the failure is true of, when the request's
	// work was done for several (SameWork); nil is the request's own.
	On  []platform.Platform
	Err error
}

func (e *RequestError) Error() string {
	if e.On != nil {
		return fmt.Sprintf("%s: %v", e.Request.On(e.On), e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Request, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// MirrorTo copies what reqs download or clone into the mirror directory
// dir, for builds with --offline.
func (f *Fetcher) MirrorTo(ctx context.Context, dir string, reqs []*Request) error {
	for _, r := range reqs {
		if err := r.Kind.Mirror(ctx, f, r, dir); err != nil {
			return &RequestError{Request: r, Err: err}
		}
	}
	// Once all are in: pruned after each, a pinned toolchain would be
	// unpacked again for every request that uses it.
	return PruneModuleCache(dir)
}

// FieldError blames one setting of an artifact, by its name in the
// recipe's kind sections ("commit", "tag", "repo", "module", "packages",
// "url", "sha256"), so that the message can be placed at the line where it
// was written.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// blame wraps err as a FieldError of field; nil stays nil.
func blame(field string, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Field: field, Err: err}
}
