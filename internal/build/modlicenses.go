package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/golicenses"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// moduleLicenses collects the licence and notice files of every module
// linked into each Go binary of an artifact, proven against the sums the
// binary records, adds them to what is shipped under
// /LICENSES/<artifact>/<module path>/, and records them.
func (b *builder) moduleLicenses(ctx context.Context, pa *plan.Artifact, res *artifact.Result, a *record.Artifact) error {
	g := artifact.GoSettings(pa.Kind)
	if g == nil {
		g = &artifact.Go{} // a downloaded release: the build's own settings
	}
	env := b.fetcher.GoEnv(g, pa.Platform)
	merged := tree.New()
	for _, e := range res.Licenses.Entries() {
		if err := merged.Add(e); err != nil {
			return err
		}
	}
	for i := range a.GoBinaries {
		gb := &a.GoBinaries[i]
		e, ok := res.Tree.Get(gb.Path)
		if !ok {
			continue
		}
		work, err := os.MkdirTemp(b.work, "licences-*")
		if err != nil {
			return err
		}
		opt := golicenses.Options{Work: work, Env: env, Offline: b.fetcher.Offline}
		if local, ok := pa.Kind.(*artifact.Go); ok {
			opt.SourceDir = local.Module
		}
		got, err := golicenses.Collect(ctx, e.Source, opt)
		if err != nil && !errors.Is(err, golicenses.ErrMissing) {
			return fmt.Errorf("licences of the modules in %s: %w", gb.Path, err)
		}
		var missing []string
		for _, m := range got.Modules {
			rm := record.Module{Path: m.Path, Version: m.Version, Sum: m.Sum, Licenses: m.Licenses, Missing: m.Missing}
			for _, f := range m.Files {
				rm.Files = append(rm.Files, m.Path+"/"+f.Name)
			}
			gb.Modules = append(gb.Modules, rm)
			// The main module's licence is the artifact's own, found
			// with it (a build from a checkout has no sum to fetch by).
			if m.Missing && !(m.Main && len(a.Licenses) > 0) {
				missing = append(missing, m.Path+"@"+m.Version)
			}
		}
		t, err := got.Tree()
		if err != nil {
			return err
		}
		for _, le := range t.Entries() {
			// Two binaries linking one module ship its files once.
			if _, dup := merged.Get(le.Path); dup {
				continue
			}
			if err := merged.Add(le); err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			msg := fmt.Sprintf("%s: %s links modules without a licence file: %s", &pa.Request, gb.Path, strings.Join(missing, ", "))
			if b.opt.RequireLicenses {
				return errors.New(msg + "; licences are required")
			}
			b.opt.Progress.Warn("%s", msg)
		}
	}
	res.Licenses = merged
	return nil
}
