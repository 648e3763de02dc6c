package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pallet-dev/pallet/internal/regauth"
)

// The distribution API has no conditional tag update: a manifest PUT to a
// tag replaces whatever is there. Exports to one tag at the same moment
// therefore merge optimistically and check afterwards (see publish).
const (
	// publishAttempts bounds the read-merge-writes of one export. Each
	// lost race costs one more; four exports started together on a test
	// registry need one to three more in all, not each.
	publishAttempts = 10
	// minSettle is the least an export waits, after its write, before it
	// checks its entries are still listed. One export's own read→write is
	// a poor guide to another's on a loaded machine: four exports on a
	// loopback registry under the race detector, on two busy cores,
	// measured anything from 4 to 75 ms, and with a 50 ms floor one run
	// in a hundred lost entries to a peer slower than that. Half a
	// second, once per export, is little next to the uploads before it.
	minSettle = 500 * time.Millisecond
	// settleFactor is how many of its own critical sections an export
	// waits at least, for registries where a round trip is the larger.
	settleFactor = 3
	// minBackoff is the least an export waits before merging again after
	// its write was replaced.
	minBackoff = 20 * time.Millisecond
	// backoffCeiling caps the backoff, unless eight measured critical
	// sections are longer: exports to a slow registry need to be spread
	// further apart to stop overlapping.
	backoffCeiling = 500 * time.Millisecond
)

// publisher writes one export's entries into the cache manifest at a tag,
// merged with the entries already there.
type publisher struct {
	ref  name.Reference
	push *remote.Pusher
	pull *remote.Puller
	// ours is the manifest of this export alone: the cache config and
	// this build's entries, whose blobs are in the repository already.
	ours v1.Manifest
	now  time.Time
	warn func(format string, args ...any)
	// crit is the longest read→write of the tag seen so far: how long
	// another export, if it is like this one, keeps a stale read before
	// writing it.
	crit time.Duration
}

// publish merges this export's entries into the tag, so that no export
// loses another's entries, by optimistic concurrency: read the tag's
// manifest, merge, write it; then read it back and, if another export
// replaced it with a manifest that lacks one of our entries (it read
// before our write), merge again, after a jittered backoff.
//
// Reading back right after the write catches a writer that wrote before
// that read. A writer that read before our write but writes after our
// read-back is caught by a second check, after a settle delay longer than
// the read→write critical section this export measured for itself
// (settleFactor×, at least minSettle, plus jitter). The residual window:
// an export that stalls between its read and its write for longer than
// that delay (a slower link than ours, a paused VM, an overloaded runner)
// can still replace the tag with a manifest that lacks our entries after
// we have stopped looking. Nothing
// is corrupted then, and the lost entries come back with the next export
// that uses them, but until then they are rebuilt by whoever misses them.
//
// Entries are compared by key, not by manifest digest: a manifest another
// export wrote after merging ours is as good as our own, and writing again
// would only prolong the contention.
//
// A write that fails is an error, as before. A read that fails, and a
// tag that never settles within publishAttempts, are warnings: this
// build's images are done, and a cache is only a saving.
func (p *publisher) publish(ctx context.Context) error {
	unreadable := false
	for attempt := 1; attempt <= publishAttempts; attempt++ {
		if attempt > 1 {
			if err := sleep(ctx, p.backoff(attempt-1)); err != nil {
				return p.errorf("%w", err)
			}
		}
		start := time.Now()
		theirs, err := p.read(ctx)
		if err != nil {
			if attempt > 1 {
				p.warn("shared cache %s (writing): this build's entries were written but replaced by another export's, and the tag cannot be read to merge them again, so some may be missing: %v", p.ref, regauth.Explain(err))
				return nil
			}
			// A registry that failed for now (5xx, a timeout) may hold
			// entries other builds need: better no export than one that
			// drops them all.
			if !overwritable(err) {
				p.warn("shared cache %s (writing): not exported, as the entries already there cannot be read now (writing would drop them): %v", p.ref, regauth.Explain(err))
				return nil
			}
			// What cannot be read for good is not kept: some registries
			// answer 401 for a repository that does not exist yet, and
			// the export must still work; a manifest that does not
			// parse holds nothing to merge.
			p.warn("shared cache %s (writing): the entries already there cannot be read, so only this build's are exported: %v", p.ref, regauth.Explain(err))
			unreadable = true
		}
		if err := p.write(ctx, theirs); err != nil {
			return p.errorf("%w", regauth.Explain(err))
		}
		p.crit = max(p.crit, time.Since(start))

		settled, err := p.stands(ctx)
		if err != nil {
			if unreadable {
				return nil // said already
			}
			return p.cannotCheck(err)
		}
		if !settled {
			continue
		}
		if err := sleep(ctx, p.settleDelay()); err != nil {
			return p.errorf("%w", err)
		}
		if settled, err = p.stands(ctx); err != nil {
			return p.cannotCheck(err)
		}
		if settled {
			return nil
		}
	}
	p.warn("shared cache %s (writing): other exports kept replacing the cache manifest; after %d attempts to merge with them, some of this build's entries may be missing from it (the next export that uses them puts them back)", p.ref, publishAttempts)
	return nil
}

func (p *publisher) errorf(format string, args ...any) error {
	return fmt.Errorf("shared cache %s (writing): "+format, append([]any{p.ref}, args...)...)
}

// cannotCheck is what a failed read-back leaves: the write went through,
// only its outcome under concurrent exports is unknown.
func (p *publisher) cannotCheck(err error) error {
	p.warn("shared cache %s (writing): written, but it cannot be read back to check that no export at the same moment replaced it: %v", p.ref, regauth.Explain(err))
	return nil
}

// read returns the manifest at the tag; nil if there is none yet.
func (p *publisher) read(ctx context.Context) (*v1.Manifest, error) {
	desc, err := p.pull.Get(ctx, p.ref)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && te.StatusCode == 404 {
			return nil, nil
		}
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w: %w", desc.Digest, errUnparsable, err)
	}
	return m, nil
}

// errUnparsable marks a cache manifest that is there but is no manifest.
var errUnparsable = errors.New("not a manifest")

// overwritable says whether a tag that could not be read may be written
// over without merging: refused for good (401 or 403, as for a repository
// not created yet), or holding no manifest. A failure that may pass (a
// 5xx, a timeout) may hide entries that writing would drop.
func overwritable(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode == 401 || te.StatusCode == 403
	}
	return errors.Is(err, errUnparsable)
}

// write puts the manifest of our entries merged with theirs at the tag.
func (p *publisher) write(ctx context.Context, theirs *v1.Manifest) error {
	m := p.ours
	var had []v1.Descriptor
	if theirs != nil {
		had = theirs.Layers
	}
	m.Layers = mergeEntries(p.ours.Layers, had, p.now)
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return p.push.Put(ctx, p.ref, rawManifest{raw: raw, mediaType: m.MediaType})
}

// stands reports whether the tag lists every entry this export wrote, by
// key: under our blob or, for a key another export wrote too, under the
// one the merge rule keeps.
func (p *publisher) stands(ctx context.Context) (bool, error) {
	m, err := p.read(ctx)
	if err != nil || m == nil {
		return false, err
	}
	// Our key listed is not enough: an export that read before our
	// write may have put back the entry ours replaced. What stands under
	// the key must be ours, or one the merge prefers to ours.
	listed := map[string]v1.Descriptor{}
	for _, d := range m.Layers {
		listed[entryID(d)] = d
	}
	for _, d := range p.ours.Layers {
		got, ok := listed[entryID(d)]
		if !ok || (got.Digest != d.Digest && !preferred(got, d)) {
			return false, nil
		}
	}
	return true, nil
}

// settleDelay is how long to wait before the last check: longer than
// another export like this one keeps a stale read, jittered upwards so
// that exports checking together do not also write together.
func (p *publisher) settleDelay() time.Duration {
	d := max(settleFactor*p.crit, minSettle)
	return d + rand.N(d/2+1)
}

// backoff is the wait before the n-th merge again: exponential from the
// critical section up to a ceiling, drawn from [d/2, 3d/2) so that
// exports that collided once do not collide the same way again.
func (p *publisher) backoff(n int) time.Duration {
	base := max(p.crit, minBackoff)
	ceiling := max(backoffCeiling, 8*p.crit)
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	return d/2 + rand.N(d)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// entryID names a cache entry by its kind and key; "" for an entry that
// has neither key (not one pallet writes).
func entryID(d v1.Descriptor) string {
	if k := d.Annotations[annArtifact]; k != "" {
		return annArtifact + "=" + k
	}
	if k := d.Annotations[annLayer]; k != "" {
		return annLayer + "=" + k
	}
	return ""
}

// mergeEntries is the cache manifest's entries after an export: ours,
// and theirs younger than keepFor. A key both have keeps one entry, the
// same whoever merges: the one exported later, then the one with the
// smaller digest. So an export replaces an older entry under its key (a
// broken one, say), and exports of one key at the same moment, each
// merging the others', agree on the entry instead of replacing each
// other's in turn. The result is sorted, so equal merges write equal
// manifests.
func mergeEntries(ours, theirs []v1.Descriptor, now time.Time) []v1.Descriptor {
	byID := map[string]v1.Descriptor{}
	var keyless []v1.Descriptor
	add := func(d v1.Descriptor) {
		id := entryID(d)
		if id == "" {
			keyless = append(keyless, d)
			return
		}
		if cur, ok := byID[id]; !ok || preferred(d, cur) {
			byID[id] = d
		}
	}
	for _, d := range theirs {
		when, err := time.Parse(time.RFC3339, d.Annotations[annExported])
		// A date well in the future is not trusted either: a runner
		// whose clock runs ahead would otherwise win every merge of its
		// keys, and outlive the expiry, until the clocks caught up.
		if err != nil || now.Sub(when) > keepFor || when.Sub(now) > maxClockSkew {
			continue
		}
		add(d)
	}
	for _, d := range ours {
		add(d)
	}
	out := append(make([]v1.Descriptor, 0, len(byID)+len(keyless)), keyless...)
	for _, d := range byID {
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := entryID(out[i]), entryID(out[j])
		if a != b {
			return a < b
		}
		return out[i].Digest.String() < out[j].Digest.String()
	})
	return out
}

// preferred reports whether entry a wins over b under the same key.
func preferred(a, b v1.Descriptor) bool {
	ta, _ := time.Parse(time.RFC3339, a.Annotations[annExported])
	tb, _ := time.Parse(time.RFC3339, b.Annotations[annExported])
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Digest.String() < b.Digest.String()
}

// rawManifest is a manifest as bytes, for a PUT that writes nothing else.
type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }
