// Package lock maintains a recipe's pins, so that nobody types a sha256,
// a commit hash or a go.sum hash by hand: it resolves each download's
// digest (checked against upstream's checksum file where the recipe names
// one), each git tag's commit and each gomod module version's sum (fetched
// as a build fetches it), reports the pins that are missing or no longer
// match, and writes them into pallet.yaml itself, leaving every other
// byte of the file as it was.
package lock

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Options say what to lock and how.
type Options struct {
	// File is the recipe; a symlink is followed and its target written.
	File string
	// Artifacts and Platforms, when set, limit the pins resolved.
	Artifacts, Platforms []string
	// Check resolves every pin and compares, writing nothing.
	Check bool
	// Update re-pins a pin that no longer matches (a moved tag, a
	// re-published download); without it such a pin is reported and the
	// recipe left as it is.
	Update bool
	// Fetcher downloads and asks repositories; artifact.New() when nil.
	Fetcher *artifact.Fetcher
	// Cache, when set, keeps each URL's download, by its sha256, where a
	// build reads url downloads (checking them as it reads), so that the
	// build after lock downloads none of them again; nil keeps nothing.
	Cache *cache.Cache
	// Log receives one line per pin written.
	Log func(format string, args ...any)
}

// Finding is a pin that is missing or stale.
type Finding struct {
	Pos      plan.Pos
	Artifact string
	// Pin names the pin: "sha256 for linux/amd64", "commit of tag v1.2".
	Pin string
	// Source is what was asked: a URL, or a repository.
	Source string
	// Old is the recipe's value ("" when missing), New what Source gives.
	Old, New string
	// Unchecked says New is a download's digest taken from the bytes
	// its URL served and nothing else, no checksum file vouching for
	// them (trust on first use): what a user should review.
	Unchecked bool
}

// Stale says the recipe pins another value than the source now gives.
func (f Finding) Stale() bool { return f.Old != "" }

func (f Finding) String() string {
	// file:line, as recipe errors read: a column misleads more than it helps.
	at := plan.Pos{File: f.Pos.File, Line: f.Pos.Line}
	if f.Stale() {
		return fmt.Sprintf("%s: artifact %s: %s is %s in the recipe, but %s now gives %s", at, f.Artifact, f.Pin, f.Old, f.Source, f.New)
	}
	return fmt.Sprintf("%s: artifact %s: no %s (%s gives %s)", at, f.Artifact, f.Pin, f.Source, f.New)
}

// Report is what a run found and did.
type Report struct {
	// Findings are the pins missing or stale, in recipe order.
	Findings []Finding
	// Current counts the pins that matched their source.
	Current int
	// Written says the recipe was rewritten.
	Written bool
	// Unfillable are pins lock cannot resolve and the build needs: a
	// {{commit}} with no commit (a gomod section's, where the module
	// proxy names none for the version), each at its use.
	Unfillable []error
}

// PinsError lists pins that are missing or stale and were left so.
type PinsError struct {
	Findings []Finding
	// Unfillable are the pins lock cannot resolve (Report.Unfillable).
	Unfillable []error
	// Hint says what to do about them.
	Hint string
}

func (e *PinsError) Error() string {
	var b strings.Builder
	missing, stale := 0, 0
	for _, f := range e.Findings {
		if f.Stale() {
			stale++
		} else {
			missing++
		}
	}
	fmt.Fprintf(&b, "%d pin(s) missing, %d stale:", missing+len(e.Unfillable), stale)
	for _, f := range e.Findings {
		b.WriteString("\n  " + f.String())
	}
	for _, u := range e.Unfillable {
		b.WriteString("\n  " + u.Error())
	}
	if len(e.Unfillable) > 0 {
		b.WriteString("\n" + unfillableHint)
	}
	if e.Hint != "" {
		b.WriteString("\n" + e.Hint)
	}
	return b.String()
}

// locker is one run.
type locker struct {
	opt    Options
	f      *artifact.Fetcher
	r      *recipe.Recipe
	doc    *doc
	rep    *Report
	hashes map[string]string
	sums   map[string]string
	// want is what each written pin must read as once the file is
	// re-parsed: artifact@platform → sha256, artifact → commit,
	// gomodKey(artifact) → sum, gomodCommitKey(artifact) → commit.
	want map[string]string
	work string
	// keep is where downloads are written for Options.Cache, a directory
	// of the cache's own so that keeping one is a rename ("" keeps none),
	// and kept the file each URL's download is in until it is kept.
	keep string
	kept map[string]string
}

// Run resolves the pins of opt.File and, unless it only checks, writes
// those missing (and with Update those stale) into it. Pins missing or
// stale and left so are returned as a *PinsError along with the report.
func Run(ctx context.Context, opt Options) (*Report, error) {
	l := &locker{opt: opt, f: opt.Fetcher, rep: &Report{}, hashes: map[string]string{}, sums: map[string]string{}, want: map[string]string{}}
	if l.f == nil {
		l.f = artifact.New()
		defer l.f.Close()
	}
	if l.opt.Log == nil {
		l.opt.Log = func(string, ...any) {}
	}
	target, err := filepath.EvalSymlinks(opt.File)
	if err != nil {
		return nil, err
	}
	// The file as found, to tell at the end whether it is still the one
	// read: replaced meanwhile (by a symlink, say), it is not lock's to
	// overwrite.
	found, err := os.Lstat(target)
	if err != nil {
		return nil, err
	}
	data, err := recipe.ReadFile(target)
	if err != nil {
		return nil, err
	}
	if l.r, err = recipe.ParseUnpinned(opt.File, data); err != nil {
		return nil, err
	}
	if l.doc, err = parseDoc(data); err != nil {
		return nil, fmt.Errorf("%s: %w", opt.File, err)
	}
	lim, err := l.r.PlanLimits()
	if err != nil {
		return nil, err
	}
	// The recipe's limits, unless the caller set its own.
	if l.f.Limits.MaxBytes == 0 {
		l.f.Limits.MaxBytes = lim.MaxDownload
	}
	if l.f.Limits.Stall == 0 {
		l.f.Limits.Stall = lim.Stall
	}
	if l.f.Limits.DownloadTimeout == 0 {
		l.f.Limits.DownloadTimeout = lim.DownloadTimeout
	}
	if l.work, err = os.MkdirTemp("", "pallet-lock-*"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(l.work)
	if opt.Cache != nil {
		dir, release, err := opt.Cache.TempDir()
		if err != nil {
			return nil, err
		}
		// What was not kept (a download its checksum file disputes)
		// goes with the directory.
		defer release()
		defer os.RemoveAll(dir)
		l.keep, l.kept = dir, map[string]string{}
	}

	sel := recipe.PinSelection{Platforms: opt.Platforms, Artifacts: opt.Artifacts, Commits: map[string]string{}}
	gits, err := l.r.GitPins(sel)
	if err != nil {
		return nil, err
	}
	for _, g := range gits {
		if err := l.git(ctx, g, sel.Commits); err != nil {
			return nil, err
		}
	}
	downloads, err := l.r.Downloads(sel)
	if err != nil {
		return nil, err
	}
	for _, d := range downloads {
		if err := l.download(ctx, d); err != nil {
			return nil, err
		}
	}
	mods, err := l.r.GoModPins(sel)
	if err != nil {
		return nil, err
	}
	// The gomod sections without commit whose {{commit}} the recipe
	// uses: lock fills the commit from the module proxy where it names
	// one, and leaves the rest to their author, each at the use.
	gaps := map[string][]*recipe.Error{}
	for _, m := range mods {
		if m.Commit != "" {
			continue
		}
		one := recipe.PinSelection{Platforms: opt.Platforms, Artifacts: []string{m.Artifact}, Commits: map[string]string{}}
		if gaps[m.Artifact], err = l.r.CommitGaps(one); err != nil {
			return nil, err
		}
	}
	for _, m := range mods {
		if err := l.gomod(ctx, m, gaps); err != nil {
			return nil, err
		}
	}
	rep := l.rep
	for _, m := range mods {
		for _, g := range gaps[m.Artifact] {
			rep.Unfillable = append(rep.Unfillable, g)
		}
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int { return a.Pos.Line - b.Pos.Line })

	var stale []Finding
	for _, f := range rep.Findings {
		if f.Stale() {
			stale = append(stale, f)
		}
	}
	switch {
	case opt.Check && len(rep.Findings)+len(rep.Unfillable) > 0:
		hint := ""
		if len(rep.Findings) > 0 {
			hint = "pallet lock writes the missing pins; pallet lock --update re-pins the stale ones"
		}
		return rep, &PinsError{Findings: rep.Findings, Unfillable: rep.Unfillable, Hint: hint}
	case opt.Check:
		return rep, nil
	case len(stale) > 0 && !opt.Update:
		// All or nothing: a recipe half locked while a pin it holds is
		// disputed would be committed as if it were settled.
		return rep, &PinsError{Findings: rep.Findings, Unfillable: rep.Unfillable, Hint: "nothing was written: a moved tag or a changed download may be an attack or a mistake upstream; check it, then re-pin with pallet lock --update"}
	case len(l.doc.edits) == 0:
		return rep, unfilled(rep)
	}
	out, err := l.doc.apply()
	if err != nil {
		return nil, err
	}
	if err := l.verify(out, sel); err != nil {
		return nil, fmt.Errorf("%s: the pins written do not read back as resolved (%w); the recipe is left as it was", opt.File, err)
	}
	if err := writeFile(target, found, data, out); err != nil {
		return nil, err
	}
	rep.Written = true
	unchecked := 0
	for _, f := range rep.Findings {
		verb := "pinned"
		if f.Stale() {
			verb = "re-pinned (was " + f.Old + ")"
		}
		from := ""
		if f.Unchecked {
			unchecked++
			from = ", from the bytes " + f.Source + " served alone (no checksum file to check them against)"
		}
		l.opt.Log("%s: artifact %s: %s %s %s%s", plan.Pos{File: f.Pos.File, Line: f.Pos.Line}, f.Artifact, f.Pin, verb, f.New, from)
	}
	if unchecked > 0 {
		// Nothing upstream vouched for these: whatever the server sent
		// the day lock ran is what every build will insist on.
		l.opt.Log("%d pin(s) above were taken from what their URL served, checked against no checksum file: review them, or give each url the checksums: file upstream publishes", unchecked)
	}
	return rep, unfilled(rep)
}

const unfillableHint = "lock cannot resolve a {{commit}} with no commit (the module proxy gives none): write upstream's commit by hand as gomod.commit"

// unfilled is the error of a run that wrote what it could but left pins
// only an author can give: the recipe still does not build, so lock
// fails as --check would, after keeping the pins it resolved.
func unfilled(rep *Report) error {
	if len(rep.Unfillable) == 0 {
		return nil
	}
	return &PinsError{Unfillable: rep.Unfillable}
}

// git resolves g's tag and records the commit {{commit}} stands for.
func (l *locker) git(ctx context.Context, g *recipe.GitPin, commits map[string]string) error {
	at := recipe.Path(g.Keys...)
	commit, err := l.f.ResolveTag(ctx, g.Repo, g.Tag)
	if err != nil {
		return plan.Errorf(l.r.Pos(at+".tag"), "artifact %s: %v", g.Artifact, err)
	}
	// A tag may name a tree or a blob: pinned as the commit, it would
	// fail only at the build's checkout, far from the tag that is wrong.
	// Asked of a pin lock would write or report (a fetch of the tag's
	// object, costly where the server cannot filter), not of one the
	// recipe already holds: the build says what that one names.
	if commit != g.Commit {
		typ, err := l.f.TagObjectType(ctx, g.Repo, g.Tag, commit)
		if err != nil {
			return plan.Errorf(l.r.Pos(at+".tag"), "artifact %s: %v", g.Artifact, err)
		}
		if typ != "commit" {
			return plan.Errorf(l.r.Pos(at+".tag"), "artifact %s: tag %s of %s names a %s (%s), not a commit, which is what a git artifact checks out; name a tag of a commit, or pin the commit as commit: without a tag", g.Artifact, g.Tag, artifact.ShownURL(g.Repo), typ, commit)
		}
	}
	pinned, err := l.pinScalar(Finding{Pos: l.r.Pos(at + ".commit"), Artifact: g.Artifact,
		Pin: "commit of tag " + g.Tag, Source: artifact.ShownURL(g.Repo), Old: g.Commit, New: commit}, g.Keys, "commit", "repo", g.Artifact)
	if pinned {
		commits[g.Artifact] = commit
	}
	return err
}

// gomodKey is the key of want for the sum of artifact's gomod section,
// gomodCommitKey for its commit.
func gomodKey(artifact string) string       { return "gomod\x00" + artifact }
func gomodCommitKey(artifact string) string { return "gomod-commit\x00" + artifact }

// gomod resolves m's module version with the module proxy, as a build
// fetches it, and plans the edits that pin its sum, and its commit where
// the proxy names one, when missing (or stale, with Update). A commit is
// added only where the section has none and the recipe needs one (a
// {{commit}} in its fields, listed in gaps, which it takes the
// artifact out of once pinned): elsewhere the record would carry a
// pin nothing asked for. Where the proxy names no commit, a section's is
// left as written, as a build leaves it unchecked.
func (l *locker) gomod(ctx context.Context, m *recipe.GoModPin, gaps map[string][]*recipe.Error) error {
	at := recipe.Path(m.Keys...)
	sum, commit, err := l.f.ModuleSum(ctx, m.Module, m.Version, m.Env, m.Platform)
	if err != nil {
		return plan.Errorf(l.r.Pos(at+".version"), "artifact %s: %v", m.Artifact, err)
	}
	ref := m.Module + "@" + m.Version
	if _, err = l.pinScalar(Finding{Pos: l.r.Pos(at + ".sum"), Artifact: m.Artifact,
		Pin: "sum of " + ref, Source: "the module proxy", Old: m.Sum, New: sum}, m.Keys, "sum", "version", gomodKey(m.Artifact)); err != nil {
		return err
	}
	if commit == "" || (m.Commit == "" && len(gaps[m.Artifact]) == 0) {
		return nil
	}
	// After the sum, which a missing one is written before (edits at one
	// place keep their order); a section lacking it has it after version.
	after := "sum"
	if m.Sum == "" {
		after = "version"
	}
	pinned, err := l.pinScalar(Finding{Pos: l.r.Pos(at + ".commit"), Artifact: m.Artifact,
		Pin: "commit of " + ref, Source: "the module proxy", Old: m.Commit, New: commit}, m.Keys, "commit", after, gomodCommitKey(m.Artifact))
	if pinned && m.Commit == "" {
		delete(gaps, m.Artifact)
	}
	return err
}

// pinScalar settles the pin f is about, the scalar key of the mapping at
// keys: current when it reads f.New already; otherwise a finding, and,
// when it is missing or Update re-pins it, the pin verify reads back
// (under wantKey) and, unless lock only checks, the edit that writes it
// (added after the key after when the mapping lacks it). pinned says
// the pin is to be f.New.
func (l *locker) pinScalar(f Finding, keys []string, key, after, wantKey string) (pinned bool, err error) {
	if f.Old == f.New {
		l.rep.Current++
		return false, nil
	}
	l.rep.Findings = append(l.rep.Findings, f)
	if f.Old != "" && !l.opt.Update {
		return false, nil
	}
	l.want[wantKey] = f.New
	if l.opt.Check {
		// Nothing is written: a pin lock could not write (through an
		// alias, say) is still reported as missing, not as an error.
		return true, nil
	}
	loc, parent, err := l.doc.find(append(slices.Clone(keys), key))
	if err == nil {
		if loc.key != nil {
			err = l.doc.setScalar(loc, f.New)
		} else {
			err = l.doc.add(parent, after, []entry{{key: key, value: f.New}})
		}
	}
	if err != nil {
		return true, plan.Errorf(l.r.Pos(recipe.Path(keys...)), "artifact %s: writing the %s: %v", f.Artifact, key, err)
	}
	return true, nil
}

// pinned is a target with the digest its URL gives.
type pinned struct {
	t      *recipe.Target
	digest string
}

// download resolves the selected platforms of d, and plans the edits
// that pin those missing (and stale, with Update).
func (l *locker) download(ctx context.Context, d *recipe.Download) error {
	at := recipe.Path(d.Keys...)
	// One digest pins a URL the same on every platform: one finding
	// says so, not one per platform.
	_, scalar := d.SHA256[""]
	oneDigest := !d.PerPlatform && (len(d.SHA256) == 0 || scalar)
	var write []pinned
	for _, t := range d.Targets {
		if !t.Selected {
			continue
		}
		sum, err := l.resolve(ctx, d, t)
		if err != nil {
			return err
		}
		pos := l.r.Pos(at + ".sha256")
		if t.Keyed && t.Selector != "" {
			pos = l.r.Pos(at + ".sha256." + t.Selector)
		}
		f := Finding{Pos: pos, Artifact: d.Artifact, Pin: "sha256 for " + t.Platform.String(), Source: t.URL, Old: t.Pin, New: sum, Unchecked: t.Checksums == ""}
		if oneDigest {
			f.Pin = "sha256"
		}
		if t.Pinned && t.Pin == sum {
			l.rep.Current++
			continue
		}
		if n := len(l.rep.Findings); !oneDigest || n == 0 || l.rep.Findings[n-1] != f {
			l.rep.Findings = append(l.rep.Findings, f)
		}
		if t.Pinned && !l.opt.Update {
			continue
		}
		write = append(write, pinned{t, sum})
		l.want[plan.Key(d.Artifact, t.Platform)] = sum
	}
	if len(write) == 0 || l.opt.Check {
		return nil
	}
	if err := l.writeDigests(d, write); err != nil {
		return plan.Errorf(l.r.Pos(at), "artifact %s: writing sha256: %v", d.Artifact, err)
	}
	return nil
}

// writeDigests plans the edits that pin write. It keeps the recipe's
// form: a single digest stays one while it holds for every platform, a
// map gets an entry per platform, and an entry for an OS is replaced
// only when every platform it covers was resolved to one digest;
// otherwise the platforms resolved get entries of their own, which win
// over the OS's.
func (l *locker) writeDigests(d *recipe.Download, write []pinned) error {
	loc, section, err := l.doc.find(append(slices.Clone(d.Keys), "sha256"))
	if err != nil {
		return err
	}
	entries := func(ps []pinned) []entry {
		var out []entry
		for _, p := range ps {
			out = append(out, entry{key: p.t.Platform.String(), value: p.digest})
		}
		slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.key, b.key) })
		return out
	}
	// one returns the digest every target of ts is pinned to by write,
	// if they all are, to the same.
	one := func(ts []*recipe.Target) (string, bool) {
		got := ""
		for _, t := range ts {
			i := slices.IndexFunc(write, func(p pinned) bool { return p.t == t })
			if i < 0 || (got != "" && write[i].digest != got) {
				return "", false
			}
			got = write[i].digest
		}
		return got, got != ""
	}
	// A URL the same on every platform has one digest, whichever
	// platforms were selected: it pins them all.
	sum, single := one(d.Targets)
	if !d.PerPlatform {
		sum, single = write[0].digest, true
	}
	scalar := func() error {
		for _, t := range d.Targets {
			l.want[plan.Key(d.Artifact, t.Platform)] = sum
		}
		return l.doc.setScalar(loc, sum)
	}
	switch {
	case loc.key == nil || (loc.val.Kind == yaml.ScalarNode && loc.val.Value == ""):
		// No digest yet.
		if single && !d.PerPlatform {
			if loc.key == nil {
				for _, t := range d.Targets {
					l.want[plan.Key(d.Artifact, t.Platform)] = sum
				}
				return l.doc.add(section, "url", []entry{{key: "sha256", value: sum}})
			}
			return scalar()
		}
		if loc.key == nil {
			return l.doc.add(section, "url", []entry{{key: "sha256", sub: entries(write)}})
		}
		return l.doc.setMap(loc, entries(write))
	case loc.val.Kind == yaml.ScalarNode: // one digest for every platform
		if single {
			return scalar()
		}
		// Platforms not resolved keep the digest they had.
		all := slices.Clone(write)
		for _, t := range d.Targets {
			if !slices.ContainsFunc(write, func(p pinned) bool { return p.t == t }) {
				all = append(all, pinned{t, t.Pin})
			}
		}
		return l.doc.setMap(loc, entries(all))
	}
	var add []pinned
	done := map[string]bool{}
	for _, p := range write {
		t := p.t
		switch {
		case t.Keyed && t.Selector == t.Platform.String():
			if err := l.setEntry(d, t.Selector, p.digest); err != nil {
				return err
			}
		case t.Keyed:
			var covered []*recipe.Target
			for _, u := range d.Targets {
				if u.Keyed && u.Selector == t.Selector {
					covered = append(covered, u)
				}
			}
			if sum, ok := one(covered); ok {
				if !done[t.Selector] {
					done[t.Selector] = true
					if err := l.setEntry(d, t.Selector, sum); err != nil {
						return err
					}
				}
				continue
			}
			add = append(add, p)
		default:
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return l.doc.add(loc, "", entries(add))
}

// setEntry sets the value of sha256's entry for selector.
func (l *locker) setEntry(d *recipe.Download, selector, sum string) error {
	loc, _, err := l.doc.find(append(slices.Clone(d.Keys), "sha256", selector))
	if err != nil {
		return err
	}
	if loc.key == nil {
		return fmt.Errorf("no sha256 entry %s", selector)
	}
	return l.doc.setScalar(loc, sum)
}

// resolve downloads t's URL and returns its sha256, checked against the
// checksum file when the recipe names one. Each URL is fetched once per
// run, however many platforms share it.
func (l *locker) resolve(ctx context.Context, d *recipe.Download, t *recipe.Target) (string, error) {
	at := recipe.Path(d.Keys...)
	sum, ok := l.hashes[t.URL]
	if !ok {
		// Without a cache the body is hashed as it streams and kept
		// nowhere, so a large release costs no disk.
		file := ""
		if l.keep != "" {
			file = filepath.Join(l.keep, strconv.Itoa(len(l.hashes)))
		}
		var err error
		if sum, err = l.f.DownloadUnpinned(ctx, t.URL, file, l.f.Limits.Limits); err != nil {
			return "", plan.Errorf(l.r.Pos(at+".url"), "artifact %s (%s): %v", d.Artifact, t.Platform, err)
		}
		l.hashes[t.URL] = sum
		if file != "" {
			l.kept[t.URL] = file
		}
	}
	if t.Checksums == "" {
		l.keepDownload(t.URL, sum)
		return sum, nil
	}
	file, err := urlFile(t.URL)
	if err != nil {
		return "", plan.Errorf(l.r.Pos(at+".url"), "artifact %s: %v", d.Artifact, err)
	}
	name := path.Base(file)
	listed, err := l.checksum(ctx, t.Checksums, file)
	if err != nil {
		return "", plan.Errorf(l.r.Pos(at+".checksums"), "artifact %s (%s): checksum file %s: %v", d.Artifact, t.Platform, t.Checksums, err)
	}
	if listed != sum {
		// Said as what this run did: --check never pins, and the
		// recipe's pin is compared with neither digest.
		outcome := "nothing was written"
		if l.opt.Check {
			outcome = "neither is taken as the digest to check the recipe's pin against"
		}
		return "", plan.Errorf(l.r.Pos(at+".checksums"), "artifact %s (%s): %s has sha256 %s, but the checksum file %s gives %s for %s; %s", d.Artifact, t.Platform, t.URL, sum, t.Checksums, listed, name, outcome)
	}
	l.keepDownload(t.URL, sum)
	return sum, nil
}

// keepDownload moves the download of rawURL, whose sha256 is sum, into
// the cache (Options.Cache), once its checksum file, where the recipe
// names one, agreed. The blob is named by the digest of its own bytes,
// whichever pin the recipe ends up with, and a build checks it as it
// reads it: keeping it can make no build wrong, and failing to only
// costs that build the download, so it is said and lock goes on.
func (l *locker) keepDownload(rawURL, sum string) {
	file, ok := l.kept[rawURL]
	if !ok {
		return
	}
	delete(l.kept, rawURL)
	if _, err := l.opt.Cache.PutBlob(sum, file); err != nil {
		l.opt.Log("%v; the build downloads %s again", err, rawURL)
	}
}

// maxChecksumFile bounds a checksum file: a list of names and hashes,
// kilobytes for the largest projects.
const maxChecksumFile = 16 << 20

// checksum fetches the checksum file at u (once per run) and looks up
// the download at file, its URL's path.
func (l *locker) checksum(ctx context.Context, u, file string) (string, error) {
	key := u + "\x00" + file
	if s, ok := l.sums[key]; ok {
		return s, nil
	}
	list := filepath.Join(l.work, fmt.Sprintf("checksums-%d", len(l.sums)))
	lim := l.f.Limits.Limits
	if lim.MaxBytes <= 0 || lim.MaxBytes > maxChecksumFile {
		lim.MaxBytes = maxChecksumFile
	}
	if _, err := l.f.DownloadUnpinned(ctx, u, list, lim); err != nil {
		return "", err
	}
	defer os.Remove(list)
	fh, err := os.Open(list)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	s, err := lookupChecksum(fh, file)
	if err != nil {
		return "", err
	}
	l.sums[key] = s
	return s, nil
}

// urlFile is the path of raw, the file a checksum file lists under its
// last element (and, in some, under a directory or two of it).
func urlFile(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	name := path.Base(u.Path)
	if name == "/" || name == "." {
		return "", fmt.Errorf("%s: no file name in the URL to look up in the checksum file", raw)
	}
	return u.Path, nil
}

// verify re-reads out as a recipe and checks that each pin reads as
// intended: those written as resolved, every other as it was.
func (l *locker) verify(out []byte, sel recipe.PinSelection) error {
	r2, err := recipe.ParseUnpinned(l.opt.File, out)
	if err != nil {
		return err
	}
	// Every pin of the file, not only the selected ones, when they can
	// all be read: a value YAML shares between artifacts (an anchor
	// taken in with a merge key) changes a pin lock was not asked to.
	asked, whole := sel, false
	all := recipe.PinSelection{Commits: sel.Commits}
	before, old, err := pinsOf(l.r, all)
	if err == nil {
		sel, whole = all, true
	} else if before, old, err = pinsOf(l.r, sel); err != nil {
		return err
	}
	after, err := r2.Downloads(sel)
	if err != nil {
		return err
	}
	if len(before) != len(after) {
		return fmt.Errorf("%d downloads, %d before", len(after), len(before))
	}
	for i, d := range after {
		for j, t := range d.Targets {
			want, ok := l.want[plan.Key(d.Artifact, t.Platform)]
			if !ok {
				want = before[i].Targets[j].Pin
			}
			if t.Pin != want {
				return fmt.Errorf("artifact %s: sha256 for %s reads %q, want %q", d.Artifact, t.Platform, t.Pin, want)
			}
		}
	}
	gits, err := r2.GitPins(sel)
	if err != nil {
		return err
	}
	for i, g := range gits {
		want, ok := l.want[g.Artifact]
		if !ok {
			want = old[i].Commit
		}
		if g.Commit != want {
			return fmt.Errorf("artifact %s: commit reads %q, want %q", g.Artifact, g.Commit, want)
		}
	}
	// A gomod section whose version differs on platforms lock was not
	// asked about cannot be listed whole; it is checked where asked.
	oldMods, err := l.r.GoModPins(sel)
	if err != nil && whole {
		sel = asked
		oldMods, err = l.r.GoModPins(sel)
	}
	if err != nil {
		return err
	}
	mods, err := r2.GoModPins(sel)
	if err != nil {
		return err
	}
	if len(mods) != len(oldMods) {
		return fmt.Errorf("%d gomod sections, %d before", len(mods), len(oldMods))
	}
	for i, m := range mods {
		want, ok := l.want[gomodKey(m.Artifact)]
		if !ok {
			want = oldMods[i].Sum
		}
		if m.Sum != want {
			return fmt.Errorf("artifact %s: gomod.sum reads %q, want %q", m.Artifact, m.Sum, want)
		}
		want, ok = l.want[gomodCommitKey(m.Artifact)]
		if !ok {
			want = oldMods[i].Commit
		}
		if m.Commit != want {
			return fmt.Errorf("artifact %s: gomod.commit reads %q, want %q", m.Artifact, m.Commit, want)
		}
	}
	return nil
}

// pinsOf lists r's downloads and git pins that sel selects.
func pinsOf(r *recipe.Recipe, sel recipe.PinSelection) ([]*recipe.Download, []*recipe.GitPin, error) {
	downloads, err := r.Downloads(sel)
	if err != nil {
		return nil, nil, err
	}
	gits, err := r.GitPins(sel)
	return downloads, gits, err
}

// writeFile replaces file's content with data as one step: a temporary
// file beside it (tempfile.Beside), with its mode, renamed over it. It must still be the
// file found (an Lstat taken before it was read) and hold before, what
// was read: an edit made meanwhile, or a link or another file put in its
// place, is not overwritten. Nor is a read-only file: the rename would
// replace it all the same, past the permission its owner took away.
func writeFile(file string, found fs.FileInfo, before, data []byte) error {
	if err := unchanged(file, found); err != nil {
		return err
	}
	// A lock killed before its rename left its temporary beside the
	// recipe, in the user's checkout, for a commit to take along: the
	// next one removes it, as soon as no process holds its lock.
	tempfile.SweepBeside(file)
	tmp, release, err := tempfile.CreateLocked(filepath.Dir(file), tempfile.Beside(file))
	if err != nil {
		return err
	}
	defer release()
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		// Before the mode: a chown may clear set-id bits.
		err = keepOwner(tmp, found)
	}
	if err == nil {
		err = tmp.Chmod(found.Mode().Perm())
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := unchanged(file, found); err != nil {
		return err
	}
	content, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if !bytes.Equal(content, before) {
		return fmt.Errorf("%s changed while pallet lock ran; nothing written, run it again", file)
	}
	return os.Rename(tmp.Name(), file)
}

// unchanged refuses to replace file unless it is still the one found,
// and a file lock may rename another over: not a named pipe the recipe
// was read from, nor one read-only, nor one with other names (hard
// links), which the rename would part from it, still holding the recipe
// unpinned.
func unchanged(file string, found fs.FileInfo) error {
	now, err := os.Lstat(file)
	if err != nil {
		return err
	}
	switch m := now.Mode(); {
	case !os.SameFile(found, now):
		return fmt.Errorf("%s was replaced while pallet lock ran; nothing written, run it again", file)
	case !m.IsRegular():
		return fmt.Errorf("%s is %s, not a file pallet lock rewrites; nothing written", file, bounded.TypeName(m))
	case m.Perm()&0o222 == 0:
		return fmt.Errorf("%s is read-only (mode %04o); nothing written: make it writable for pallet lock to pin it", file, m.Perm())
	case links(now) > 1:
		return fmt.Errorf("%s has %d names (hard links), which a rewrite would part, leaving the others unpinned; nothing written: remove the other names, or lock a copy", file, links(now))
	}
	return nil
}
