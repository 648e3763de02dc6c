package build

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/golicenses"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// Mirror copies into dir what building reqs offline needs: downloads,
// repositories, Go modules and toolchains (pallet fetch), and the modules
// whose licences the Go binaries of downloaded releases and local files
// ship (--module-licenses, the default). It downloads and unpacks within
// the bounds a build of the same input would: opt's, a zero field taking
// the input's (in, its limits section).
func Mirror(ctx context.Context, arts []*plan.Artifact, in Limits, dir string, n Network, opt Limits, log func(string, ...any)) error {
	reqs := make([]*artifact.Request, len(arts))
	for i, a := range arts {
		reqs[i] = &a.Request
	}
	// A failure is said where its artifact was written, as a build says
	// it: a tag that moved at the tag's line.
	at := func(err error) error {
		var re *artifact.RequestError
		if errors.As(err, &re) {
			for i, r := range reqs {
				if r == re.Request {
					return located(arts[i], err)
				}
			}
		}
		return err
	}
	// The go command refuses a relative GOMODCACHE, and the mirror's is
	// one.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Two fetches into one mirror would each prune the module trees the
	// other's go command is reading.
	lock, err := tempfile.NewLock(filepath.Join(dir, ".pallet-fetch.lock"), os.O_CREATE|os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("lock the mirror %s: %w", dir, err)
	}
	if ok, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil || !ok {
		return fmt.Errorf("lock the mirror %s: %w", dir, cmp.Or(err, ctx.Err()))
	}
	defer lock.Unlock()
	if err := artifact.SweepMirrorDownloads(dir); err != nil {
		return fmt.Errorf("the mirror %s: %w", dir, err)
	}
	f, err := n.fetcher()
	if err != nil {
		return err
	}
	defer f.Close()
	f.Log = log
	f.Limits = fetcherLimits(limits(opt, in))
	if err := f.MirrorTo(ctx, dir, reqs); err != nil {
		return at(err)
	}
	if err := mirrorLinkedModules(ctx, f, reqs, dir); err != nil {
		return at(err)
	}
	// What the licences of linked modules unpacked, as MirrorTo prunes
	// what the builds did.
	return artifact.PruneModuleCache(dir)
}

// mirrorLinkedModules puts in the mirror's module cache every module the
// Go binaries of reqs' releases and local files link: what a build's
// module licences read, and which no go.mod of the recipe's names. Each
// artifact is unpacked from the mirror just filled, offline, as the
// build will unpack it; the modules are proven against the sums the
// binaries record as they are fetched.
func mirrorLinkedModules(ctx context.Context, network *artifact.Fetcher, reqs []*artifact.Request, dir string) error {
	f := artifact.New()
	f.Log = network.Log
	// Each archive is unpacked as the build will, within its limits.
	f.Limits = network.Limits
	f.Mirror, f.Offline = dir, true
	tmp, err := os.MkdirTemp("", "pallet-fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	defer artifact.ForgetToolchainEnv(tmp)
	for i, r := range reqs {
		if artifact.GoSettings(r.Kind) != nil {
			continue // its go.mod's modules are mirrored with it
		}
		work := filepath.Join(tmp, strconv.Itoa(i))
		res, err := f.Fetch(ctx, r, work)
		if err != nil {
			return err // a RequestError, naming r
		}
		rec, err := record.Scan(res, record.NoMemo)
		if err != nil {
			return &artifact.RequestError{Request: r, Err: err}
		}
		if len(rec.GoBinaries) == 0 {
			continue
		}
		env, err := network.MirrorGoEnv(&artifact.Go{}, r.Platform, dir)
		if err != nil {
			return err
		}
		for j, gb := range rec.GoBinaries {
			e, ok := res.Tree.Get(gb.Path)
			if !ok {
				continue
			}
			opt := golicenses.Options{Work: filepath.Join(work, "licences-"+strconv.Itoa(j)), Env: env}
			if _, err := golicenses.Collect(ctx, e.Source, opt); err != nil {
				return &artifact.RequestError{Request: r, Err: fmt.Errorf("modules of %s: %w", gb.Path, err)}
			}
		}
		bins := "Go binaries"
		if len(rec.GoBinaries) == 1 {
			bins = "Go binary"
		}
		network.Log("mirrored the modules the %d %s of %s link", len(rec.GoBinaries), bins, r)
	}
	return nil
}
