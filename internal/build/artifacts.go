package build

import (
	"context"
	"errors"
	"fmt"
	"go/version"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/golicenses"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/sbom"
	"github.com/pallet-dev/pallet/internal/tree"
)

// policy applies the build's rules on what may be shipped.
func (b *builder) policy(a record.Artifact, src *plan.Artifact) error {
	unlicensed := len(a.Licenses) == 0 && !src.NoLicense && !mainModulesLicensed(a.GoBinaries)
	skipped := ""
	if a.Skipped > 0 {
		names := strings.Join(a.SkippedNames, ", ")
		if a.Skipped > len(a.SkippedNames) {
			names += fmt.Sprintf(" and %d more", a.Skipped-len(a.SkippedNames))
		}
		skipped = fmt.Sprintf("the archive holds %d %s pallet does not place, which the image will not have: %s", a.Skipped, plural(a.Skipped, "entry", "entries"), names)
	}
	if all, ok := b.checked(src, unlicensed, skipped); ok {
		if len(all.unlicensed) > 0 && b.opt.RequireLicenses {
			return errors.New(noLicence(src, all.unlicensed) + "; licences are required")
		}
		b.warnNotes(src, all)
	}
	if b.opt.MinGo != "" {
		// Run checked it before any work.
		min, err := MinGo(b.opt.MinGo)
		if err != nil {
			return err
		}
		for _, g := range a.GoBinaries {
			v := goRelease(g.GoVersion)
			if !version.IsValid(v) {
				return fmt.Errorf("%s: %s was built with Go %q, which cannot be ordered against the minimum Go", &src.Request, g.Path, g.GoVersion)
			}
			if version.Compare(v, min) < 0 {
				return fmt.Errorf("%s: %s was built with %s, older than the minimum Go %s", &src.Request, g.Path, g.GoVersion, strings.TrimPrefix(min, "go"))
			}
		}
	}
	return nil
}

// warnNotes warns of what the policy found of the artifact src on the
// platforms n names.
func (b *builder) warnNotes(src *plan.Artifact, n artifactNotes) {
	// At the artifact's line, where licenses: goes, as the error with
	// --require-licenses is said.
	warn := func(msg string) {
		if src.Pos.Line > 0 {
			msg = src.Pos.String() + ": " + msg
		}
		b.opt.Progress.Warn("%s", msg)
	}
	if len(n.unlicensed) > 0 {
		warn(noLicence(src, n.unlicensed))
	}
	for _, s := range n.skipped {
		warn(src.On(s.platforms) + ": " + s.msg)
	}
}

// warnFinished warns, once the fetches have stopped on a failure, of
// what the policy found of each artifact on the platforms checked before
// it, where others were not: the build fails, but what was found is
// still true of the platforms named, and the failure's fix should not
// be needed to learn of it. An artifact whose platforms were all
// checked was warned of then.
func (b *builder) warnFinished() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(b.notes)) {
		n := b.notes[name]
		if n.unchecked > 0 && n.src != nil {
			b.warnNotes(n.src, n.sorted())
		}
	}
}

// noLicence says that the artifact src has no licence file on the
// platforms ps, for the warning and for --require-licenses' refusal.
func noLicence(src *plan.Artifact, ps []platform.Platform) string {
	return src.On(ps) + ": no licence file found; name its licence files, or declare that it has none (licenses: none)"
}

// artifactNotes is what the policy found of an artifact on the platforms
// checked so far, said once all of them are: a message true of several
// platforms names each, in a fixed order. Said per platform, or once for
// whichever was ready first, a multi-platform build's warning changed
// from run to run.
type artifactNotes struct {
	unchecked int
	// src is the artifact on the first platform checked, which names it
	// (nil while none is).
	src        *plan.Artifact
	unlicensed []platform.Platform
	// skipped are the archive's entries left out, one message per
	// distinct list, with the platforms it is true of.
	skipped []skippedNote
}

type skippedNote struct {
	msg       string
	platforms []platform.Platform
}

// checked counts src's platform as checked and, once every platform of
// the artifact is, returns what was found on them all, platforms in the
// order of their names.
func (b *builder) checked(src *plan.Artifact, unlicensed bool, skipped string) (artifactNotes, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.notes[src.Name]
	if n.src == nil {
		n.src = src
	}
	if unlicensed {
		n.unlicensed = append(n.unlicensed, src.Platform)
	}
	if skipped != "" {
		i := slices.IndexFunc(n.skipped, func(s skippedNote) bool { return s.msg == skipped })
		if i < 0 {
			i = len(n.skipped)
			n.skipped = append(n.skipped, skippedNote{msg: skipped})
		}
		n.skipped[i].platforms = append(n.skipped[i].platforms, src.Platform)
	}
	if n.unchecked--; n.unchecked > 0 {
		return artifactNotes{}, false
	}
	return n.sorted(), true
}

// sorted is n with its platforms in the order of their names.
func (n *artifactNotes) sorted() artifactNotes {
	byName := func(x, y platform.Platform) int { return strings.Compare(x.String(), y.String()) }
	slices.SortFunc(n.unlicensed, byName)
	for _, s := range n.skipped {
		slices.SortFunc(s.platforms, byName)
	}
	slices.SortFunc(n.skipped, func(x, y skippedNote) int { return byName(x.platforms[0], y.platforms[0]) })
	return *n
}

// mainModulesLicensed says whether the artifact's placed files are Go
// binaries whose main modules' licence files were found (a release binary
// stamped with its module version, whose licence comes from the module
// proxy, proven by its sum): their licences are the artifact's, shipped
// under the module's path.
func mainModulesLicensed(bins []record.GoBinary) bool {
	if len(bins) == 0 {
		return false
	}
	for _, g := range bins {
		found := false
		for _, m := range g.Modules {
			if m.Path == g.MainModule && !m.Missing && len(m.Files) > 0 {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// goRelease is the release a binary's recorded Go version belongs to:
// "go1.22.0 X:boringcrypto" is go1.22.0 with an experiment, and a toolchain
// built from the development branch, "devel go1.27-abc123 ...", is counted
// as go1.27, ahead of every go1.26 point release and behind go1.27.0.
func goRelease(v string) string {
	v = strings.TrimPrefix(v, "devel ")
	if i := strings.IndexAny(v, " -"); i >= 0 {
		v = v[:i]
	}
	return v
}

// ready is an artifact being made ready for placing: fetched, scanned
// for the record, its module licences found, the build's rules applied
// and, with SBOMs, described. done closes once it is, or has failed.
type ready struct {
	done      chan struct{}
	err       error
	res       *artifact.Result
	record    record.Artifact
	described *sbom.Artifact
	// paths are the names its placements' paths written with a '\' take
	// (takenPaths).
	paths map[string]string
}

// errNotReady is what a layer waiting for a failed artifact gets; the
// artifact's own error is the build's.
var errNotReady = errors.New("an artifact it places failed or was stopped")

// await waits until the artifact under key is ready.
func (b *builder) await(ctx context.Context, key string) (*artifact.Result, error) {
	r := b.ready[key]
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, errNotReady
	}
	return r.res, nil
}

// sharedWork is the work several requests of a build share, the same on
// every platform they are for (artifact.Request.SameWork): the first by
// key, its leader, fetches; the others take copies of its result. done
// closes once res or err is set.
type sharedWork struct {
	leader string
	// keys are the group's, the leader's first; platforms theirs.
	keys      []string
	platforms []platform.Platform
	done      chan struct{}
	once      sync.Once
	// res are the results of the others, by key, made from the leader's
	// before anything reads it: a layer may empty the leader's tree.
	res map[string]*artifact.Result
	err error
}

// sharedWorks groups the keys of the plan's artifacts whose work is the
// same by SameWork: each key of a group of two or more maps to it.
func sharedWorks(p *plan.Plan, keys []string) map[string]*sharedWork {
	byWork := map[string]*sharedWork{}
	of := map[string]*sharedWork{}
	for _, key := range keys {
		a := p.Artifacts[key]
		w := a.SameWork()
		if w == "" {
			continue
		}
		sw := byWork[w]
		if sw == nil {
			sw = &sharedWork{leader: key, done: make(chan struct{}), res: map[string]*artifact.Result{}}
			byWork[w] = sw
		}
		sw.keys = append(sw.keys, key)
		sw.platforms = append(sw.platforms, a.Platform)
		of[key] = sw
	}
	for key, sw := range of {
		if len(sw.platforms) < 2 {
			delete(of, key)
		}
	}
	return of
}

// fetchAll makes every artifact ready, Jobs at a time, and stops at the
// first failure: the artifacts not started then fail as not ready.
func (b *builder) fetchAll(ctx context.Context) error {
	defer close(b.allReady)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(b.opt.Jobs)
	b.notes = map[string]*artifactNotes{}
	for _, a := range b.plan.Artifacts {
		if b.notes[a.Name] == nil {
			b.notes[a.Name] = &artifactNotes{}
		}
		b.notes[a.Name].unchecked++
	}
	keys := slices.Sorted(maps.Keys(b.plan.Artifacts))
	// A request that waits for another's work starts in its turn by
	// key, holding one of the Jobs while it waits, as it held one while
	// it did the work again: started after all others, with --jobs 1 it
	// was not checked before a later artifact failed, and its policy's
	// findings were said for fewer platforms (warnFinished).
	shared := sharedWorks(b.plan, keys)
	for _, key := range keys {
		a := b.plan.Artifacts[key]
		r := b.ready[key]
		sw := shared[key]
		b.warnLevel(a)
		g.Go(func() error {
			defer close(r.done)
			if sw != nil && sw.leader == key {
				// However the leader ends, the others stop waiting.
				defer func() { sw.end(r.err) }()
			}
			r.err = ctx.Err()
			if r.err == nil {
				r.err = b.makeReady(ctx, key, a, r, sw)
			}
			return r.err
		})
	}
	err := g.Wait()
	if err != nil {
		b.warnFinished()
	}
	return err
}

// warnLevel warns of a Go build whose environment raises GOAMD64 above
// the level of the platform the image says it runs on.
func (b *builder) warnLevel(a *plan.Artifact) {
	g := artifact.GoSettings(a.Kind)
	if g == nil {
		return
	}
	if level := a.Platform.NeedsMore(g.Env); level != "" {
		b.opt.Progress.Warn("%s: %s: its env sets GOAMD64=%s, so its binaries stop at start on an amd64 machine below %s, which the image's platform %s says it runs on; name the platform %s/%s instead (the image says so, and the build gets the level)", a.Pos, &a.Request, level, level, a.Platform, a.Platform.OS+"/"+a.Platform.Arch, level)
	}
}

// end ends the leader's part in sw, once: the others take their
// results, or the failure of its fetch, err, which is theirs too. What
// fails after the fetch (the record, the policy) is the leader's own:
// the others go on with theirs.
func (sw *sharedWork) end(err error) {
	sw.once.Do(func() {
		sw.err = err
		if err == nil && len(sw.res) < len(sw.keys)-1 {
			sw.err = errNotReady
		}
		close(sw.done)
	})
}

// fetch fetches a, the leader of sw if sw is not nil: its failure is
// said for the platforms of them all, and the others' results are made
// from its result.
func (b *builder) fetch(ctx context.Context, a *plan.Artifact, sw *sharedWork) (*artifact.Result, error) {
	res, err := b.fetchIn(ctx, a, sw)
	if sw != nil {
		sw.end(err)
	}
	return res, err
}

func (b *builder) fetchIn(ctx context.Context, a *plan.Artifact, sw *sharedWork) (*artifact.Result, error) {
	work, err := os.MkdirTemp(b.work, "artifact-*")
	if err != nil {
		return nil, err
	}
	done := b.opt.Progress.Start(fmt.Sprintf("artifact %s (%s)", a.Name, a.Platform))
	res, err := b.fetcher.Fetch(ctx, &a.Request, work)
	var re *artifact.RequestError
	if sw != nil && errors.As(err, &re) {
		re.On = sw.platforms
	}
	if err != nil {
		done("", shown(ctx, err))
		return nil, located(a, err)
	}
	if res.InCache {
		// What the fetch left in its work directory (go's GOTMPDIR, the
		// emptied output directory, a download) is no longer needed.
		// Removed now, beside the layers' compression, rather than with
		// the build's work directory at its end, when the build waits
		// for it: on the bench machine's ext4 (mounted with discard) a
		// directory's removal waits for the journal while it commits,
		// 2-4 ms, up to 15 ms for the whole work directory at the end
		// of a Go build, whose artifact directory holds three.
		b.cleanup.Go(func() { os.RemoveAll(work) })
	} else {
		// A result outside the cache may be made of what the fetch put
		// here (an unpacked local archive, a Go build's output), which
		// the layers read: only a directory the fetch left empty (a
		// local file or directory taken as it is) goes now, for the
		// same reason; os.Remove takes no other.
		b.cleanup.Go(func() { os.Remove(work) })
	}
	how := a.How()
	if res.Cached {
		how += ", cached"
	}
	done(how, nil)
	if sw != nil {
		for _, key := range sw.keys[1:] {
			c, err := res.For(&b.plan.Artifacts[key].Request)
			if err != nil {
				return nil, plan.Wrap(a.Pos, err)
			}
			sw.res[key] = c
		}
	}
	return res, nil
}

// awaitShared waits for the leader of sw to fetch a's work, and takes
// its result for key.
func (b *builder) awaitShared(ctx context.Context, key string, a *plan.Artifact, sw *sharedWork) (*artifact.Result, error) {
	select {
	case <-sw.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if sw.err != nil {
		// The leader's failure, said for every platform: the build
		// reports whichever comes first.
		return nil, sw.err
	}
	// Said as any other artifact is, with where its work was done.
	done := b.opt.Progress.Start(fmt.Sprintf("artifact %s (%s)", a.Name, a.Platform))
	done(fmt.Sprintf("%s, shared with %s", a.How(), b.plan.Artifacts[sw.leader].Platform), nil)
	return sw.res[key], nil
}

func (b *builder) makeReady(ctx context.Context, key string, a *plan.Artifact, r *ready, sw *sharedWork) error {
	if local, ok := a.Kind.(*artifact.Go); ok && b.opt.ModuleLicenses {
		// The licence classifier, if moduleLicenses will need it for
		// the module's own licence files, loads while go build runs
		// rather than after it: about a second. Finding out walks the
		// module, which need not hold up go build's start either; it is
		// over before this artifact is, so nothing touches the cache
		// after the build.
		prepared := make(chan struct{})
		go func() {
			defer close(prepared)
			golicenses.Prepare(golicenses.Options{SourceDir: local.Module, Remember: b.rememberLicence})
		}()
		defer func() { <-prepared }()
	}
	if g := artifact.GoSettings(a.Kind); g != nil && b.opt.ModuleLicenses && !requiresNothing(a.Kind) {
		// moduleLicenses asks the go command where its module cache is:
		// asked now, the answer (5-30 ms, with the machine's load) comes
		// while go build runs. A
		// module that requires no other links none: its licences never
		// need the cache, and a go command run beside go build would only
		// take a core from it.
		asked := make(chan struct{})
		go func() {
			defer close(asked)
			_, _ = b.moduleCache(ctx, b.fetcher.GoEnv(g, a.Platform))
		}()
		defer func() { <-asked }()
	}
	var (
		res *artifact.Result
		err error
	)
	if sw != nil && sw.leader != key {
		res, err = b.awaitShared(ctx, key, a, sw)
	} else {
		res, err = b.fetch(ctx, a, sw)
	}
	if err != nil {
		return err
	}
	rec, err := record.Scan(res, b.memo)
	if err != nil {
		return err
	}
	rec.GoBinaries = placedGoBinaries(b.plan, key, rec.GoBinaries)
	placedSkipped(b.plan, key, &rec)
	// The artifact's own licence files, before those of the modules its
	// programs link join them: what the artifact declares.
	own := res.Licenses
	if b.opt.ModuleLicenses && len(rec.GoBinaries) > 0 {
		// A step of its own: for a binary linking a hundred modules,
		// proving their sources can take longer than the build did.
		done := b.opt.Progress.Start(fmt.Sprintf("module licences %s (%s)", a.Name, a.Platform))
		err := b.moduleLicenses(ctx, a, res, &rec)
		if err == nil {
			err = b.cLicenses(a, res, &rec)
		}
		n := linkedModules(rec.GoBinaries)
		done(fmt.Sprintf("%d module%s", n, map[bool]string{true: "s"}[n != 1]), shown(ctx, err))
		if err != nil {
			return plan.Wrap(a.Pos, err)
		}
	}
	// What a cgo build linked is said per binary, by cLicenses, with the
	// licences shipped; not otherwise.
	rec.CLinked = nil
	if err := b.policy(rec, a); err != nil {
		return plan.Wrap(a.Pos, err)
	}
	if b.opt.Attest.any() {
		// Described from the tree, which goes once the layers placed it.
		d, err := sbom.Describe(rec, res, b.memo)
		if err != nil {
			return err
		}
		if d.License, err = b.declaredLicense(own); err != nil {
			return plan.Wrap(a.Pos, fmt.Errorf("artifact %s: %w", a.Name, err))
		}
		pinnedMainVersion(a, &d)
		r.described = &d
	}
	r.res, r.record = res, rec
	r.paths = takenPaths(b.plan, key, res.Tree)
	return nil
}

// takenPaths are the names in t, the tree of the artifact under key, that
// its placements' paths written with a '\' take, by the path as written:
// which of the two it may be (tree.UserPathNames) is known once the tree
// is, and the record names the one placed (takenPath). A path that
// names neither, or both, is left out: placing it fails, saying so.
func takenPaths(p *plan.Plan, key string, t *tree.Tree) map[string]string {
	var paths map[string]string
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					if _, done := paths[pm.Path]; done || pm.Artifact != key || len(tree.UserPathNames(pm.Path)) < 2 {
						continue
					}
					name, err := t.Taken(pm.Path)
					if err != nil {
						continue
					}
					if paths == nil {
						paths = map[string]string{}
					}
					paths[pm.Path] = name
				}
			}
		}
	}
	return paths
}

// shown is the error a step's progress says: a step stopped because
// another failed says so, not what its killed command said ("go mod
// download: signal: killed"), which would read as a failure of its own.
func shown(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// placedFrom is what of the artifact under key the plan's images place:
// the paths its placements take, or nil when one takes it whole (or none
// names a path). A path written with '\' stands for both the names it
// may be (tree.UserPath picks one when the artifact's tree is read, and
// a build fails where both are there): split always, a placed binary or
// entry whose own name holds the '\' was taken for one left out, its
// modules' licences not shipped and its Go not held to --min-go.
func placedFrom(p *plan.Plan, key string) []string {
	var from []string
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					if pm.Artifact != key {
						continue
					}
					if placedPath(&pm) == "" {
						return nil
					}
					from = append(from, tree.UserPathNames(pm.Path)...)
				}
			}
		}
	}
	return from
}

// placesAny says whether a placement taking one of from places p.
func placesAny(from []string, p string) bool {
	if from == nil {
		return true
	}
	for _, f := range from {
		if record.PlacesPath(f, p) {
			return true
		}
	}
	return false
}

// placedGoBinaries keeps the Go binaries of the artifact under key that
// the plan's images place: a placement with a path takes only that file
// or directory of it. What links a binary left out (win-bridge.exe in a
// CNI plugins archive of which only host-local.exe is placed) is not in
// the image, so its modules' licences are not shipped nor fetched, its
// Go is not held against --min-go, and the SBOM does not list them.
func placedGoBinaries(p *plan.Plan, key string, bins []record.GoBinary) []record.GoBinary {
	from := placedFrom(p, key)
	if from == nil {
		return bins
	}
	var kept []record.GoBinary
	for _, gb := range bins {
		if placesAny(from, gb.Path) {
			kept = append(kept, gb)
		}
	}
	return kept
}

// placedSkipped keeps, of the archive entries the record says were not
// placed, those the plan's placements would have taken: a device node
// under /dev of a root file system of which only /usr/bin is placed is
// nothing the image misses. The record keeps only the first names, so
// while some are unnamed the count stands.
func placedSkipped(p *plan.Plan, key string, rec *record.Artifact) {
	if rec.Skipped == 0 || rec.Skipped > len(rec.SkippedNames) {
		return
	}
	from := placedFrom(p, key)
	var kept []string
	for _, n := range rec.SkippedNames {
		if placesAny(from, artifact.SkippedPath(n)) {
			kept = append(kept, n)
		}
	}
	rec.Skipped, rec.SkippedNames = len(kept), kept
}

// linkedModules counts the distinct modules the binaries link.
func linkedModules(bins []record.GoBinary) int {
	seen := map[string]bool{}
	for _, gb := range bins {
		for _, m := range gb.Modules {
			seen[m.Path+"@"+m.Version] = true
		}
	}
	return len(seen)
}

// describedAll is the SBOMs' view of every artifact, in the plan's
// order, once all are ready.
func (b *builder) describedAll(ctx context.Context) ([]sbom.Artifact, error) {
	select {
	case <-b.allReady:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var all []sbom.Artifact
	for _, key := range b.plan.Keys() {
		r := b.ready[key]
		if r.err != nil {
			return nil, errNotReady
		}
		if r.described != nil {
			all = append(all, *r.described)
		}
	}
	return all, nil
}
