package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/regauth"
)

// Registry pushes to a registry. Ref is "REPO[:TAG]" for a recipe with one
// image (its tags are pushed to REPO; a TAG in Ref replaces them), or
// "PREFIX/" to push every image as PREFIX/REPOSITORY:TAG.
type Registry struct {
	Ref     string
	Options []remote.Option
	// ByDigest pushes each image by its digest alone and sets no tag
	// (buildx's push-by-digest): one CI runner's share of an image whose
	// index `pallet index create` assembles later. Ref then names only
	// the repository (or a PREFIX/).
	ByDigest bool
	// Jobs bounds the blobs and manifests of an image sent at once
	// (earlyJobs when 0).
	Jobs int
	// Sources, when set, carries mount hints from one push to the next: it
	// is asked which repository of the registry already holds each blob,
	// and told where the blobs of every complete push went.
	Sources Sources

	early early
}

// Sources is a memory of pushed blobs across builds (the cache's): for a
// registry, blob digest → a repository holding it.
type Sources interface {
	Lookup(registry string) map[string]string
	Remember(registry string, blobs map[string]string) error
}

func (r *Registry) String() string { return "registry:" + r.Ref }

// Write pushes each image. go-containerregistry uploads every blob and
// child manifest before the manifest that carries the tag, so a failed push
// never leaves a tag pointing at a partial image. Further tags are added
// only after the first one is complete.
//
// Blobs the repository already has are skipped (go-containerregistry asks
// with HEAD first), blobs of one image are uploaded in parallel (Jobs at a
// time), and a failed blob upload is
// retried (remote.WithRetryBackoff and remote.WithRetryStatusCodes tune
// that). With a PREFIX/ several images go to several repositories of one
// registry: a blob already pushed for an earlier image is mounted from that
// repository instead of being uploaded again. A registry that stalled
// through the retries of one request gets no further request
// (pushSession.tripped).
func (r *Registry) Write(ctx context.Context, images []Image) error {
	return regauth.Redact(r.write(ctx, images))
}

func (r *Registry) write(ctx context.Context, images []Image) error {
	prefix := strings.HasSuffix(r.Ref, "/")
	if err := r.holds(len(images)); err != nil {
		return err
	}
	pushed := r.settleEarly(images)
	if pushed == nil {
		var err error
		if pushed, err = r.session(ctx); err != nil {
			return err
		}
	}
	pushed.useSources(r)
	defer pushed.save()
	if r.ByDigest {
		return r.writeByDigest(images, pushed)
	}
	// Every image goes in by digest first, tags last: a push that fails
	// half-way moves no tag, whichever image or blob it failed on.
	type tagging struct {
		tags []name.Tag
		what remote.Taggable
	}
	var todo []tagging
	for _, im := range images {
		tags, err := r.refs(im, prefix)
		if err != nil {
			return err
		}
		var (
			what remote.Taggable = im.Image
			d    v1.Hash
		)
		if im.Index != nil {
			what = im.Index
			d, err = im.Index.Digest()
		} else {
			d, err = im.Image.Digest()
		}
		if err != nil {
			return err
		}
		// One image with one tag and no attachments needs no second
		// step: its tag is the last thing the push writes anyway. The
		// attachments go before the tag: one that fails moves no tag.
		direct := len(images) == 1 && len(tags) == 1 && len(im.Referrers) == 0
		var target name.Reference = tags[0].Context().Digest(d.String())
		if direct {
			target = tags[0]
		}
		if err := pushed.push(target, im); err != nil {
			return fmt.Errorf("push %s (%sas %s): %w", tags[0], declared(im), target, regauth.Explain(err))
		}
		// Referrers (SBOMs, provenance) name their subject by digest; the
		// registry lists them through its referrers API, or ggcr keeps the
		// fallback tag for a registry without one.
		for _, ref := range im.Referrers {
			d, err := ref.Digest()
			if err != nil {
				return err
			}
			if err := remote.Write(tags[0].Context().Digest(d.String()), ref, pushed.opts...); err != nil {
				return fmt.Errorf("push an attachment of %s (%s%s): %w", tags[0], declared(im), d, regauth.Explain(err))
			}
		}
		if !direct {
			todo = append(todo, tagging{tags, what})
		}
	}
	var moved []string
	for _, t := range todo {
		for _, tag := range t.tags {
			if err := remote.Tag(tag, t.what, pushed.opts...); err != nil {
				err = fmt.Errorf("tag %s: %w", tag, regauth.Explain(err))
				if len(moved) > 0 {
					err = fmt.Errorf("%w (every image was pushed; these tags already point at this build: %s)", err, strings.Join(moved, ", "))
				}
				return err
			}
			moved = append(moved, tag.String())
		}
	}
	return nil
}

func (r *Registry) jobs() int {
	if r.Jobs > 0 {
		return r.Jobs
	}
	return earlyJobs
}

// declared says where the front end declares im, to begin a
// parenthesis: "image app at pallet.yaml:9; ", or "" when unknown.
func declared(im Image) string {
	if im.Pos == "" {
		return ""
	}
	return "image " + im.Repository + " at " + im.Pos + "; "
}

// holds refuses n images for a Ref that names one repository.
func (r *Registry) holds(n int) error {
	if !strings.HasSuffix(r.Ref, "/") && n != 1 {
		return fmt.Errorf("registry:%s names one repository but the build has %d images; use registry:PREFIX/ to push each under PREFIX", r.Ref, n)
	}
	return nil
}

// Check refuses, before any work, a Ref that Write could not use: with
// ByDigest, one naming a tag.
func (r *Registry) Check() error {
	if !r.ByDigest {
		return nil
	}
	_, err := r.repository(Image{Repository: "image"})
	return err
}

// writeByDigest pushes each image to its repository by digest only.
func (r *Registry) writeByDigest(images []Image, pushed *pushSession) error {
	for _, im := range images {
		ref, err := r.digestRef(im)
		if err != nil {
			return err
		}
		if err := pushed.push(ref, im); err != nil {
			if w := declared(im); w != "" {
				return fmt.Errorf("push %s (%s): %w", ref, strings.TrimSuffix(w, "; "), regauth.Explain(err))
			}
			return fmt.Errorf("push %s: %w", ref, regauth.Explain(err))
		}
	}
	return nil
}

// registry is the registry every image of Ref goes to.
func (r *Registry) registry() (name.Registry, error) {
	if strings.HasSuffix(r.Ref, "/") {
		repo, err := name.NewRepository(r.Ref + "image")
		return repo.Registry, err
	}
	ref, err := name.ParseReference(r.Ref)
	if err != nil {
		return name.Registry{}, err
	}
	return ref.Context().Registry, nil
}

// pushSession is one Write's remote options and mount hints: those
// Sources remembers from earlier pushes to the registry, and those of the
// images this Write has pushed, which it hands back to Sources when done.
type pushSession struct {
	// opts share one pusher, which pings and authenticates once per
	// repository, not once per manifest or tag, and knows which blobs it
	// has put there already: with several tags or attachments, each
	// further tag costs one PUT instead of a ping, a token exchange and
	// the PUT. base are the same without the pusher.
	opts, base []remote.Option
	// ctx bounds the steps of a push; jobs is how many blobs or
	// manifests of one image go up at once.
	ctx     context.Context
	jobs    int
	sources Sources
	reg     name.Registry
	// hints are all the hints (remembered ones overridden by this Write's);
	// pushed are this Write's alone, remembered those Sources gave.
	hints, pushed, remembered mountHints

	// settled, when set, are early uploads Write did not wait for: each
	// blob waits for its own (early.wait).
	settled *early

	// sourcesOnce guards sources, reg, hints and remembered until
	// useSources has set them.
	sourcesOnce sync.Once

	// mu guards stall, stallBlob and sent, which the early uploads set
	// from their goroutines.
	mu sync.Mutex
	// sent are the blobs the registry stored from this Write, uploaded
	// or mounted, as "HOST/REPOSITORY@DIGEST" (regauth.WithStored):
	// go-containerregistry asks with HEAD before it sends a blob, so each
	// is one the repository lacked. See manifest.
	sent map[string]bool
	// stall is the first error of the push, early uploads included,
	// that a stall of the registry ended after go-containerregistry's
	// retries, or that a request's time bound (regauth.TimeoutError)
	// ended; stallBlob the blob that call uploaded (zero for another
	// call). See tripped.
	stall     error
	stallBlob v1.Hash
}

// trip remembers err if a stall or a request's time bound ended it, the
// call having uploaded blob (zero if none).
func (s *pushSession) trip(err error, blob v1.Hash) {
	var (
		se *regauth.StallError
		te *regauth.TimeoutError
	)
	if !errors.As(err, &se) && !errors.As(err, &te) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall == nil {
		s.stall, s.stallBlob = err, blob
	}
}

// tripped is the error every later step of the push fails with, at
// once, once one call stalled through its retries: a registry that
// stalls one request most likely stalls the next, and each blob or step
// tried again cost another stall timeout per try and the backoff (a
// registry stalling every HEAD held a push 20 s at --stall-timeout 2s,
// over 6 minutes at the default: the early uploads stopped at their
// first failure, then Write tried every blob again; 10 s now). A
// registry that stalls and then answers within the retries, or that is
// merely slow (bytes keep coming), never trips it. A request that took
// the whole of its time bound (a blob's upload, most likely) trips it
// too: Write would send that blob again, and it would take as long
// again, after the early upload's hour another. notes name im's blobs.
func (s *pushSession) tripped(notes map[v1.Hash]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall == nil {
		return nil
	}
	why := "the registry stalled past its retries"
	if errors.As(s.stall, new(*regauth.TimeoutError)) {
		why = "a request to the registry took the whole of its time"
	}
	err := fmt.Errorf("%w (%s; pallet sent it nothing more)", s.stall, why)
	if s.stallBlob.Hex != "" {
		err = fmt.Errorf("upload %s%s: %w", s.stallBlob, about(notes, s.stallBlob), err)
	}
	return err
}

func (r *Registry) session(ctx context.Context) (*pushSession, error) {
	s := &pushSession{base: regauth.Options(ctx, r.Options...), ctx: ctx, jobs: r.jobs(), hints: mountHints{}, pushed: mountHints{}, remembered: mountHints{}}
	if err := s.newPusher(); err != nil {
		return nil, err
	}
	return s, nil
}

// useSources takes, once, the hints r.Sources remembers for the registry,
// before the first blob goes up: a session opened early (Open) starts
// before the build has set Sources.
func (s *pushSession) useSources(r *Registry) {
	s.sourcesOnce.Do(func() {
		if r.Sources == nil {
			return
		}
		reg, err := r.registry()
		if err != nil {
			return // Write reports the bad reference
		}
		s.sources, s.reg = r.Sources, reg
		for d, repo := range r.Sources.Lookup(sourcesKey(reg)) {
			h, err := v1.NewHash(d)
			if err != nil {
				continue
			}
			rp, err := name.NewRepository(reg.Name() + "/" + repo)
			if err != nil {
				continue
			}
			// The registry's options (insecure) come with reg.
			s.remembered[h] = reg.Repo(rp.RepositoryStr()).Digest(h.String())
			s.hints[h] = s.remembered[h]
		}
	})
}

// errOpened is what opening's every method returns.
var errOpened = errors.New("opened")

// opening is no blob: go-containerregistry's pusher readies its writer
// for a repository (ping, token) before it asks a layer anything, and
// stops at opening's first answer.
type opening struct{}

func (opening) Digest() (v1.Hash, error)             { return v1.Hash{}, errOpened }
func (opening) DiffID() (v1.Hash, error)             { return v1.Hash{}, errOpened }
func (opening) Compressed() (io.ReadCloser, error)   { return nil, errOpened }
func (opening) Uncompressed() (io.ReadCloser, error) { return nil, errOpened }
func (opening) Size() (int64, error)                 { return 0, errOpened }
func (opening) MediaType() (types.MediaType, error)  { return "", errOpened }

// open pings repo's registry and authenticates for a push to repo, as the
// pusher does before its first upload there, with the same options (its
// retries, the bounds, the credentials); the pusher keeps its writer for
// repo, so no later call pings again.
func (s *pushSession) open(ctx context.Context, repo name.Repository) error {
	err := remote.WriteLayer(repo, opening{}, append(slices.Clip(s.opts), remote.WithContext(ctx))...)
	if err == nil || errors.Is(err, errOpened) {
		return nil
	}
	return err
}

// sourcesKey names reg in Sources: host names are not case-sensitive.
func sourcesKey(reg name.Registry) string { return strings.ToLower(reg.Name()) }

func (s *pushSession) newPusher() error {
	p, err := remote.NewPusher(s.base...)
	if err != nil {
		return err
	}
	s.opts = append(slices.Clip(s.base), remote.Reuse(p))
	return nil
}

// push writes im to ref, mounting the blobs the hints place in another
// repository. A token server may refuse a pull scope on a remembered
// repository (it was deleted, or these credentials cannot read it)
// outright, with any status, rather than leave the scope out of the
// token; go-containerregistry then fails the push instead of uploading.
// A push that used a remembered repository and failed is tried again with
// this Write's own hints only, and a new pusher, since the old one would
// ask for the refused scope again whenever it renews a token; one that
// used none is not, so wrong credentials are not tried twice, nor is one
// that stalled (tripped).
func (s *pushSession) push(ref name.Reference, im Image) error {
	if err := s.tripped(im.About); err != nil {
		return err
	}
	err := s.write(ref, im, s.hints)
	s.trip(err, v1.Hash{})
	if err != nil && s.tripped(nil) == nil && s.usesRemembered(im) {
		s.hints, s.remembered = maps.Clone(s.pushed), mountHints{}
		if perr := s.newPusher(); perr != nil {
			return perr
		}
		err = s.write(ref, im, s.hints)
	}
	if err != nil {
		return err
	}
	// This Write's own hints replace remembered ones: they are certain.
	s.pushed.remember(ref, im)
	for d, r := range s.pushed {
		s.hints[d] = r
	}
	return nil
}

// write pushes im to ref in steps, each of which names what it failed
// on: the blobs of every image (layers and configs), then, for an index,
// each image's manifest by digest, and last the manifest ref names.
// go-containerregistry would do the same in one call, but its error names
// only the request that failed, and an upload's PATCH does not carry the
// blob's digest. The pusher remembers what each step put, so the next one
// sends none of it again.
func (s *pushSession) write(ref name.Reference, im Image, h mountHints) error {
	repo := ref.Context()
	if im.Index == nil {
		img := h.image(im.Image)
		if err := s.blobs(repo, []v1.Image{img}, im.About); err != nil {
			return err
		}
		return s.manifest(ref, img, s.lacked(repo, img), s.opts)
	}
	idx := h.index(im.Index)
	children, err := partial.Manifests(idx)
	if err != nil {
		return err
	}
	var imgs []v1.Image
	for _, c := range children {
		if img, ok := c.(v1.Image); ok {
			imgs = append(imgs, img)
		}
	}
	if err := s.blobs(repo, imgs, im.About); err != nil {
		return err
	}
	// The index is new where one of its images is, unless it has
	// children that are not images, which WriteIndex alone puts.
	var lackedAny atomic.Bool
	g, ctx := errgroup.WithContext(s.ctx)
	g.SetLimit(s.jobs)
	for _, img := range imgs {
		g.Go(func() error {
			d, err := img.Digest()
			if err != nil {
				return err
			}
			lacked := s.lacked(repo, img)
			if lacked {
				lackedAny.Store(true)
			}
			if err := s.manifest(repo.Digest(d.String()), img, lacked, s.with(ctx)); err != nil {
				return fmt.Errorf("manifest %s%s: %w", d, about(im.About, d), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return s.manifest(ref, idx, lackedAny.Load() && len(imgs) == len(children), s.opts)
}

// blobs uploads what imgs are made of and the repository lacks, s.jobs
// at a time; the first that fails stops the others, and is named.
func (s *pushSession) blobs(repo name.Repository, imgs []v1.Image, notes map[v1.Hash]string) error {
	var todo []v1.Layer
	seen := map[v1.Hash]bool{}
	for _, img := range imgs {
		ls, err := img.Layers()
		if err != nil {
			return err
		}
		cl, err := partial.ConfigLayer(img)
		if err != nil {
			return err
		}
		for _, l := range append(ls, cl) {
			mt, err := l.MediaType()
			if err != nil {
				return err
			}
			if !mt.IsDistributable() {
				continue // a foreign layer stays where its URLs say
			}
			d, err := l.Digest()
			if err != nil {
				return err
			}
			if !seen[d] {
				seen[d] = true
				todo = append(todo, l)
			}
		}
	}
	g, ctx := errgroup.WithContext(s.ctx)
	g.SetLimit(s.jobs)
	for _, l := range todo {
		g.Go(func() error {
			d, err := l.Digest()
			if err != nil {
				return err
			}
			if s.settled != nil {
				release, err := s.settled.wait(ctx, repo, d)
				if err != nil {
					return err
				}
				defer release()
				// An early upload that stalled ends the push, as
				// when Write waited for all of them first.
				if err := s.tripped(notes); err != nil {
					return err
				}
			}
			if err := remote.WriteLayer(repo, l, s.with(ctx)...); err != nil {
				return fmt.Errorf("upload %s%s: %w", d, about(notes, d), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// with is s.opts bound to ctx, for the blobs: the registry's word that
// it stored one is noted in sent.
func (s *pushSession) with(ctx context.Context) []remote.Option {
	return append(slices.Clip(s.opts), remote.WithContext(regauth.WithStored(ctx, s.stored)))
}

// stored notes blob d stored in repository (HOST/PATH) by this Write.
func (s *pushSession) stored(repository, d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil {
		s.sent = map[string]bool{}
	}
	s.sent[repository+"@"+d] = true
}

// lacked says whether repo lacked a blob of img before this Write.
// Registries refuse a manifest whose blobs the repository does not hold,
// so then img's manifest is not in repo either.
func (s *pushSession) lacked(repo name.Repository, img v1.Image) bool {
	m, err := img.Manifest()
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := repo.RegistryStr() + "/" + repo.RepositoryStr() + "@"
	if s.sent[at+m.Config.Digest.String()] {
		return true
	}
	for _, l := range m.Layers {
		if s.sent[at+l.Digest.String()] {
			return true
		}
	}
	return false
}

// manifest puts t's manifest at ref once what it names is in the
// repository. go-containerregistry asks first (HEAD) whether ref names
// it already, and then puts nothing: a registry whose tags are immutable
// refuses a PUT to an existing tag even of the same manifest, so a build
// pushed again would fail there. When the repository lacked a blob of
// t (new, it holds no manifest of t), the question is a round trip
// after the last blob for nothing, and the PUT goes alone.
func (s *pushSession) manifest(ref name.Reference, t remote.Taggable, lacked bool, opts []remote.Option) error {
	if lacked {
		return remote.Put(ref, t, opts...)
	}
	switch t := t.(type) {
	case v1.ImageIndex:
		return remote.WriteIndex(ref, t, opts...)
	case v1.Image:
		return remote.Write(ref, t, opts...)
	}
	return fmt.Errorf("push %s: %T is neither an image nor an index", ref, t)
}

// about says, for an error, what blob or manifest d is, when notes know.
func about(notes map[v1.Hash]string, d v1.Hash) string {
	if n := notes[d]; n != "" {
		return " (" + n + ")"
	}
	return ""
}

// usesRemembered says whether a blob of im was to be mounted from a
// repository only Sources named.
func (s *pushSession) usesRemembered(im Image) bool {
	if len(s.remembered) == 0 {
		return false
	}
	blobs := mountHints{}
	blobs.remember(nil, im)
	for d := range blobs {
		if _, ok := s.pushed[d]; !ok {
			if _, ok := s.remembered[d]; ok {
				return true
			}
		}
	}
	return false
}

// save hands the blobs of every image pushed completely to Sources. It is
// best effort: a hint not saved costs the next push an upload.
func (s *pushSession) save() {
	if s.sources == nil || len(s.pushed) == 0 {
		return
	}
	blobs := make(map[string]string, len(s.pushed))
	for d, ref := range s.pushed {
		if ref.Context().Registry.Name() == s.reg.Name() {
			blobs[d.String()] = ref.Context().RepositoryStr()
		}
	}
	_ = s.sources.Remember(sourcesKey(s.reg), blobs)
}

// digestRef is where ByDigest pushes im: REPO@DIGEST.
func (r *Registry) digestRef(im Image) (name.Digest, error) {
	repo, err := r.repository(im)
	if err != nil {
		return name.Digest{}, err
	}
	d, err := im.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return repo.Digest(d.String()), nil
}

// repository is the repository im goes to, for a push by digest.
func (r *Registry) repository(im Image) (name.Repository, error) {
	if strings.HasSuffix(r.Ref, "/") {
		repo, err := name.NewRepository(r.Ref + im.Repository)
		if err != nil {
			return name.Repository{}, fmt.Errorf("registry:%s: %w", r.Ref, err)
		}
		return repo, nil
	}
	ref, err := name.ParseReference(r.Ref)
	if err != nil {
		return name.Repository{}, fmt.Errorf("registry:%s: %w", r.Ref, err)
	}
	if _, ok := ref.(name.Tag); !ok || strings.LastIndex(r.Ref, ":") > strings.LastIndex(r.Ref, "/") {
		return name.Repository{}, fmt.Errorf("registry:%s: a push by digest sets no tag; name the repository alone (registry:%s)", r.Ref, ref.Context())
	}
	return ref.Context(), nil
}

func (r *Registry) refs(im Image, prefix bool) ([]name.Tag, error) {
	var repo string
	tags := im.Tags
	if prefix {
		repo = r.Ref + im.Repository
	} else {
		ref, err := name.ParseReference(r.Ref)
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %w", r.Ref, err)
		}
		t, ok := ref.(name.Tag)
		if !ok {
			return nil, fmt.Errorf("registry:%s: push to a tag, not a digest", r.Ref)
		}
		repo = ref.Context().Name()
		// name.ParseReference defaults the tag to "latest"; only a tag
		// actually written in Ref replaces the recipe's tags.
		if strings.LastIndex(r.Ref, ":") > strings.LastIndex(r.Ref, "/") {
			tags = []string{t.TagStr()}
		}
	}
	out := make([]name.Tag, 0, len(tags))
	for _, tag := range tags {
		t, err := name.NewTag(repo + ":" + tag)
		if err != nil {
			return nil, fmt.Errorf("registry:%s: %w", r.Ref, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// mountHints maps each blob pushed so far by one Write to a reference in
// the repository that now holds it. go-containerregistry mounts a blob
// from another repository only for a remote.MountableLayer (a layer read
// from a registry); layers built locally are not, so an image pushed under
// PREFIX/b would upload again every blob it shares with the image just
// pushed under PREFIX/a. Wrapping those layers as MountableLayers naming
// PREFIX/a makes the push ask the registry to mount them; a registry that
// cannot mount answers with a normal upload, so a hint costs one request.
type mountHints map[v1.Hash]name.Reference

// remember records the blobs of an image that was pushed completely to ref.
// Hints are only an optimization, so an image whose manifests cannot be
// read (which the successful push makes unlikely) is simply not recorded.
func (h mountHints) remember(ref name.Reference, im Image) {
	if im.Index != nil {
		h.rememberIndex(ref, im.Index)
	} else {
		h.rememberImage(ref, im.Image)
	}
}

func (h mountHints) rememberIndex(ref name.Reference, idx v1.ImageIndex) {
	m, err := idx.IndexManifest()
	if err != nil {
		return
	}
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			if child, err := idx.ImageIndex(d.Digest); err == nil {
				h.rememberIndex(ref, child)
			}
		case d.MediaType.IsImage():
			if child, err := idx.Image(d.Digest); err == nil {
				h.rememberImage(ref, child)
			}
		}
	}
}

func (h mountHints) rememberImage(ref name.Reference, img v1.Image) {
	m, err := img.Manifest()
	if err != nil {
		return
	}
	h.add(m.Config.Digest, ref)
	for _, l := range m.Layers {
		// Foreign layers are not in the registry (and not pushed).
		if l.MediaType.IsDistributable() {
			h.add(l.Digest, ref)
		}
	}
}

// add keeps the first repository a blob went to: any would do, and every
// later image then mounts from the same one.
func (h mountHints) add(d v1.Hash, ref name.Reference) {
	if _, ok := h[d]; !ok {
		h[d] = ref
	}
}

func (h mountHints) layer(l v1.Layer) v1.Layer {
	d, err := l.Digest()
	if err != nil {
		return l // a streamed layer: its digest is known only once uploaded
	}
	ref, ok := h[d]
	if !ok {
		return l
	}
	return &remote.MountableLayer{Layer: l, Reference: ref}
}

// image returns img with its known blobs wrapped for mounting. The first
// image of a Write goes through unchanged.
func (h mountHints) image(img v1.Image) v1.Image {
	if len(h) == 0 {
		return img
	}
	return &mountingImage{Image: img, hints: h}
}

func (h mountHints) index(idx v1.ImageIndex) v1.ImageIndex {
	if len(h) == 0 {
		return idx
	}
	return &mountingIndex{baseIndex: idx, hints: h}
}

// mountingImage is an image whose layers and config carry mount hints. The
// manifest and config are the embedded image's, byte for byte: only what
// the pusher uploads changes.
type mountingImage struct {
	v1.Image
	hints mountHints
}

func (i *mountingImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for n, l := range ls {
		out[n] = i.hints.layer(l)
	}
	return out, nil
}

// ConfigLayer is how the pusher gets the config blob (partial.ConfigLayer
// looks for this method).
func (i *mountingImage) ConfigLayer() (v1.Layer, error) {
	l, err := partial.ConfigLayer(i.Image)
	if err != nil {
		return nil, err
	}
	return i.hints.layer(l), nil
}

// Descriptor keeps the descriptor (platform, annotations) the embedded
// image may carry from its index.
func (i *mountingImage) Descriptor() (*v1.Descriptor, error) {
	return partial.Descriptor(i.Image)
}

// mountingIndex wraps the children of an index like mountingImage.
type mountingIndex struct {
	baseIndex
	hints mountHints
}

// baseIndex names the embedded index so that its field does not clash with
// the ImageIndex method mountingIndex overrides.
type baseIndex = v1.ImageIndex

// Manifests is what the pusher walks to upload the children (through
// partial.Manifests); it starts from the embedded index's own children so
// that whatever that index does for them (e.g. layers as children) holds.
func (x *mountingIndex) Manifests() ([]partial.Describable, error) {
	ms, err := partial.Manifests(x.baseIndex)
	if err != nil {
		return nil, err
	}
	out := make([]partial.Describable, len(ms))
	for n, m := range ms {
		switch c := m.(type) {
		case v1.ImageIndex:
			out[n] = &mountingIndex{baseIndex: c, hints: x.hints}
		case v1.Image:
			out[n] = &mountingImage{Image: c, hints: x.hints}
		case v1.Layer:
			out[n] = x.hints.layer(c)
		default:
			out[n] = m
		}
	}
	return out, nil
}

func (x *mountingIndex) Image(h v1.Hash) (v1.Image, error) {
	img, err := x.baseIndex.Image(h)
	if err != nil {
		return nil, err
	}
	return &mountingImage{Image: img, hints: x.hints}, nil
}

func (x *mountingIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	idx, err := x.baseIndex.ImageIndex(h)
	if err != nil {
		return nil, err
	}
	return &mountingIndex{baseIndex: idx, hints: x.hints}, nil
}
