package output

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Preparer is a Target that can start on an image's blobs while the build
// is still making the rest of it. Prepare is a hint: what it does not
// finish, Write does.
type Preparer interface {
	Target
	// Open readies the target for the image that will be written under
	// repository and tags, before the build has made any of it: a
	// registry pings and authenticates, which at the first blob would
	// wait on the build's own work for the processors. Like Prepare,
	// it is a hint, and its failure is Write's to report.
	Open(ctx context.Context, repository string, tags []string)
	// Prepare starts on blob l of the image that will be written under
	// repository and tags. The first call's ctx bounds all the work.
	Prepare(ctx context.Context, repository string, tags []string, l v1.Layer)
	// Finish stops what Prepare started and Write did not wait for
	// (the build failed), and waits for it to stop.
	Finish()
}

// earlyJobs bounds the uploads Prepare runs at once, as
// go-containerregistry bounds one image's (remote.WithJobs' default).
const earlyJobs = 4

// early is the session a Registry opened before Write (Open: the ping
// and the token, at the build's start) and the uploads it started
// before Write: each layer of the build goes to its repository as soon
// as it is written, so that the upload of a layer overlaps the compression of the next ones, and a push
// from the cache overlaps the checks that precede it. A blob already in
// the repository is not sent again (go-containerregistry asks first); a
// failed early upload is left for Write, which uploads what is missing
// and says what fails, but for one the registry stalled through its
// retries, which Write reports at once (pushSession.tripped). No
// manifest or tag is written early: a build that fails leaves at most
// blobs no tag points at.
type early struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	// uploads bounds the uploads alone: the first that fails stops the
	// others, since a registry that fails one (down, stalled, refusing)
	// most likely fails the next, each after its retries, and Write
	// tries them all again anyway; the session goes on to Write.
	uploads context.Context
	stop    context.CancelFunc
	session *pushSession
	err     error
	slots   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	// started are the early uploads, by repository@digest, each with
	// a channel closed when it ends, and the repositories opened (nil).
	started map[string]chan struct{}
	// opens are the Open calls still running; opened the repositories
	// they readied.
	opens  sync.WaitGroup
	opened map[string]bool
}

// start begins the early session, once; ctx, the first caller's, bounds
// all its work.
func (r *Registry) start(ctx context.Context) *early {
	e := &r.early
	e.once.Do(func() {
		e.ctx, e.cancel = context.WithCancel(ctx)
		e.uploads, e.stop = context.WithCancel(e.ctx)
		e.session, e.err = r.session(e.ctx)
		e.slots = make(chan struct{}, r.jobs())
		e.started = map[string]chan struct{}{}
		e.opened = map[string]bool{}
	})
	return e
}

// uploadKey names the early upload of blob d to repo in started: Prepare
// marks it, and Write's wait looks it up, by the same name.
func uploadKey(repo name.Repository, d v1.Hash) string { return repo.Name() + "@" + d.String() }

// first says whether key is new to e, and marks it with done.
func (e *early) first(key string, done chan struct{}) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.started[key]; ok {
		return false
	}
	e.started[key] = done
	return true
}

// Open pings the registry the image goes to and authenticates for a push
// to its repository, while the build reads its cache and hashes its
// inputs: those fill the processors, and a ping that waited on them took
// 40-90 ms in a push from the cache, against 3 ms alone. The pusher keeps
// what it learned for every later upload and manifest. A failed Open is
// left for Write, as a failed early upload is; it stops the early
// uploads, which would fail alike.
func (r *Registry) Open(ctx context.Context, repository string, tags []string) {
	repo, err := r.target(Image{Repository: repository, Tags: tags})
	if err != nil {
		return // Write says what is wrong
	}
	e := r.start(ctx)
	if e.err != nil || !e.first(repo.Name(), nil) {
		return
	}
	e.wg.Add(1)
	e.opens.Add(1)
	go func() {
		defer e.wg.Done()
		defer e.opens.Done()
		if err := e.session.open(e.uploads, repo); err != nil {
			e.session.trip(err, v1.Hash{})
			e.stop()
			return
		}
		e.mu.Lock()
		e.opened[repo.Name()] = true
		e.mu.Unlock()
	}()
}

// Prepare uploads l to the repository an image named so goes to.
func (r *Registry) Prepare(ctx context.Context, repository string, tags []string, l v1.Layer) {
	d, err := l.Digest()
	if err != nil {
		return
	}
	if mt, err := l.MediaType(); err != nil || !mt.IsDistributable() {
		return // a foreign layer stays where its URLs say
	}
	repo, err := r.target(Image{Repository: repository, Tags: tags})
	if err != nil {
		return // Write says what is wrong
	}
	e := r.start(ctx)
	done := make(chan struct{})
	if e.err != nil || !e.first(uploadKey(repo, d), done) {
		return
	}
	// Set by the build after Open (the cache opens meanwhile), read
	// before the first upload.
	e.session.useSources(r)
	// Taken now, before the goroutine waits for a slot: Write, which may
	// start while it waits, changes the session's hints and options as
	// it pushes, and the build calls Prepare before Write.
	hl, opts := e.session.hints.layer(l), e.session.with(e.uploads)
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(done)
		select {
		case e.slots <- struct{}{}:
		case <-e.uploads.Done():
			return
		}
		defer func() { <-e.slots }()
		if e.uploads.Err() != nil {
			return
		}
		if err := remote.WriteLayer(repo, hl, opts...); err != nil {
			e.session.trip(err, d)
			e.stop()
		}
	}()
}

// Finish stops the early uploads and waits for them.
func (r *Registry) Finish() {
	if r.early.cancel == nil {
		return
	}
	r.early.cancel()
	r.early.wg.Wait()
}

// settleEarly hands Write the early session: its pusher has pinged and
// authenticated against the repositories already. Write starts on the
// blobs the early uploads do not cover (the config, a base's layers)
// while those still run, each blob waiting only for its own early
// upload (settled.wait): waiting for every one first held the config
// and the base's layers, a round trip or two each, until the last large
// layer was in. It waits for them all, as before, where an early step
// failed or a repository of images was not opened: a blob of Write's
// could then join a ping or token exchange of an early upload's, and
// take its failure for Write's own.
func (r *Registry) settleEarly(images []Image) *pushSession {
	e := &r.early
	if e.cancel == nil {
		return nil
	}
	e.opens.Wait()
	if e.err != nil {
		e.wg.Wait()
		return nil
	}
	all := e.uploads.Err() != nil
	for _, im := range images {
		repo, err := r.target(im)
		e.mu.Lock()
		all = all || err != nil || !e.opened[repo.Name()]
		e.mu.Unlock()
	}
	if all {
		e.wg.Wait()
		return e.session
	}
	e.session.settled = e
	return e.session
}

// wait waits for the early upload of blob d to repo, if there is one,
// then takes one of the slots the early uploads share, so that those
// and Write's together send no more than Jobs blobs at once; the
// returned function gives it back.
func (e *early) wait(ctx context.Context, repo name.Repository, d v1.Hash) (func(), error) {
	e.mu.Lock()
	done := e.started[uploadKey(repo, d)]
	e.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	select {
	case e.slots <- struct{}{}:
		return func() { <-e.slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// target is the repository im goes to.
func (r *Registry) target(im Image) (name.Repository, error) {
	if r.ByDigest {
		return r.repository(im)
	}
	tags, err := r.refs(im, strings.HasSuffix(r.Ref, "/"))
	if err != nil {
		return name.Repository{}, err
	}
	if len(tags) == 0 {
		return name.Repository{}, fmt.Errorf("registry:%s: image %s has no tag", r.Ref, im.Repository)
	}
	return tags[0].Context(), nil
}
