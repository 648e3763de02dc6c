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

// early is the uploads a Registry started before Write: each layer of the
// build goes to its repository as soon as it is written, so that the
// upload of a layer overlaps the compression of the next ones, and a push
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
	started map[string]bool // repository@digest
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
	e := &r.early
	e.once.Do(func() {
		e.ctx, e.cancel = context.WithCancel(ctx)
		e.uploads, e.stop = context.WithCancel(e.ctx)
		e.session, e.err = r.session(e.ctx)
		e.slots = make(chan struct{}, r.jobs())
		e.started = map[string]bool{}
	})
	if e.err != nil {
		return
	}
	key := repo.Name() + "@" + d.String()
	e.mu.Lock()
	if e.started[key] {
		e.mu.Unlock()
		return
	}
	e.started[key] = true
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		select {
		case e.slots <- struct{}{}:
		case <-e.uploads.Done():
			return
		}
		defer func() { <-e.slots }()
		if e.uploads.Err() != nil {
			return
		}
		if err := remote.WriteLayer(repo, e.session.hints.layer(l), e.session.with(e.uploads)...); err != nil {
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

// settleEarly waits for the early uploads, and hands Write their session:
// its pusher has pinged and authenticated against the repositories
// already.
func (r *Registry) settleEarly() *pushSession {
	e := &r.early
	if e.cancel == nil {
		return nil
	}
	e.wg.Wait()
	if e.err != nil {
		return nil
	}
	return e.session
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
