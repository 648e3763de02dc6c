package build

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/uptodate"
)

// now is the clock the up-to-date check settles stamps against; tests
// move it on instead of sleeping.
var now = time.Now

// upToDate is a build that may be answered from a note of the last one:
// its key, and the stamps of its inputs taken before any of them is read.
type upToDate struct {
	store   uptodate.Store
	key     string
	inputs  []string
	outputs []string
	jobs    int
	taken   uptodate.Snapshot
	// afterWrite holds each output's stamps taken as soon as this build
	// wrote it: the note is kept only if they still hold at its end, so
	// that another build writing the same output meanwhile is not noted
	// as this build's result.
	afterWrite map[string]string
}

// wrote stamps an output this build has just written.
func (u *upToDate) wrote(path string) {
	if s, err := uptodate.Take([]string{path}, u.jobs, time.Time{}); err == nil {
		u.afterWrite[path] = s.Digest
	}
}

// checkUpToDate returns the build's up-to-date check, or nil for a build
// whose result may depend on more than the files it can stamp: the
// network (a registry base by tag, a push, a shared cache), a Go
// toolchain, or outputs it does not own whole.
func checkUpToDate(p *plan.Plan, opt Options) (*upToDate, error) {
	// Provenance with timestamps differs from build to build by design.
	if opt.NoCache || opt.CacheFrom != "" || opt.CacheTo != "" || opt.MetadataFile != "" || opt.Attest.Dir != "" || opt.Attest.Timestamps || len(opt.Outputs) == 0 {
		return nil, nil
	}
	// Notes live in the cache: one in a directory that is not pallet's
	// cache (yet) answers nothing, and is not touched.
	if !cache.Tagged(opt.CacheDir) {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil
	}
	u := &upToDate{jobs: opt.Jobs, inputs: []string{exe}, afterWrite: map[string]string{}}
	// The recipe is in the key through the plan it made, and stamped as
	// well: its bytes, comments included, reach the provenance. The files
	// its artifacts and bases name are stamped.
	for _, key := range p.Keys() {
		switch k := p.Artifacts[key].Kind.(type) {
		case *artifact.Local:
			u.inputs = append(u.inputs, k.Path)
		case *artifact.URL:
			if k.SHA256 == "" {
				return nil, nil
			}
		default:
			return nil, nil
		}
	}
	if p.Source != "" {
		u.inputs = append(u.inputs, p.Source)
	}
	for _, im := range p.Images {
		for _, pi := range im.Platforms {
			for _, ref := range pi.Bases {
				dir, _, layout := image.LayoutRef(ref, p.Dir)
				switch {
				case image.IsBuiltin(ref):
				case layout:
					u.inputs = append(u.inputs, dir)
				case strings.Contains(ref, "@sha256:"):
				default:
					return nil, nil
				}
			}
		}
	}
	for _, t := range opt.Outputs {
		path := outputPath(t)
		if path == "" {
			return nil, nil
		}
		u.outputs = append(u.outputs, path)
	}
	if opt.RecordPath != "" {
		u.outputs = append(u.outputs, opt.RecordPath)
	}
	key, err := buildKey(p, opt)
	if err != nil {
		return nil, err
	}
	u.store = uptodate.Store{Dir: filepath.Join(opt.CacheDir, "uptodate")}
	u.key = key
	return u, nil
}

// outputPath is the file or directory an output writes, "" for one
// that writes elsewhere (a registry, standard output).
func outputPath(t output.Target) string {
	switch t := t.(type) {
	case *output.Layout:
		return t.Dir
	case *output.DockerArchive:
		if t.Writer == nil {
			return t.File
		}
	}
	return ""
}

// buildKey names everything a build of p with opt depends on besides the
// files it stamps: pallet itself, the plan, and the options that change
// what is written.
func buildKey(p *plan.Plan, opt Options) (string, error) {
	info, _ := debug.ReadBuildInfo()
	var self string
	if info != nil {
		self = info.String()
	}
	// Artifact kinds are interfaces: their type goes in beside their
	// fields, which JSON writes without it.
	kinds := map[string]string{}
	for key, a := range p.Artifacts {
		kinds[key] = reflect.TypeOf(a.Kind).String()
	}
	planJSON, err := json.Marshal(struct {
		Plan  *plan.Plan
		Kinds map[string]string
	}{p, kinds})
	if err != nil {
		return "", fmt.Errorf("up-to-date check: %w", err)
	}
	outs := make([]string, len(opt.Outputs))
	for i, t := range opt.Outputs {
		outs[i] = t.String()
	}
	optJSON, err := json.Marshal(struct {
		Compression                                  string
		WindowsZstd, RequireLicenses, ModuleLicenses bool
		Outputs                                      []string
		RecordPath, MinGo                            string
		Attest                                       Attest
		Args                                         map[string]string
		Limits                                       Limits
		Network                                      Network
	}{string(opt.Compression), opt.WindowsZstd, opt.RequireLicenses, opt.ModuleLicenses,
		outs, opt.RecordPath, opt.MinGo, opt.Attest, opt.Args, opt.Limits, opt.Network})
	if err != nil {
		return "", fmt.Errorf("up-to-date check: %w", err)
	}
	return uptodate.Key([]byte("pallet up-to-date 1"), []byte(self), planJSON, optJSON), nil
}

// noted is what a note keeps of a build's result.
type noted struct {
	Results    []record.Result `json:"results"`
	Written    [][]string      `json:"written"`
	RecordPath string          `json:"recordPath"`
	Recipe     string          `json:"recipe"`
	Epoch      int64           `json:"epoch"`
}

// answer takes the inputs' stamps and, when they and the outputs' are
// what the note of the last build says, returns that build's result;
// otherwise it says why not.
func (u *upToDate) answer(rep progress.Reporter) (*Result, string) {
	t := now()
	var err error
	if u.taken, err = uptodate.Take(u.inputs, u.jobs, t); err != nil {
		// Not stampable here: the build reads what it needs itself and
		// reports what is missing with the recipe's line.
		u.taken = uptodate.Snapshot{}
		return nil, "inputs not stamped: " + err.Error()
	}
	n := u.store.Get(u.key)
	switch {
	case n == nil:
		return nil, "no note of an earlier build with this recipe, these arguments and options"
	case n.Inputs != u.taken.Digest:
		return nil, "inputs changed"
	}
	if _, outs, err := u.stampOutputs(); err != nil || outs != n.Outputs {
		return nil, "outputs changed"
	}
	var r noted
	if json.Unmarshal(n.Result, &r) != nil {
		return nil, "the note is damaged"
	}
	for _, w := range n.Warnings {
		rep.Warn("%s", w)
	}
	// A note in use is not pruned as unused.
	u.store.Touch(u.key, t)
	return &Result{Record: &record.Build{Recipe: r.Recipe, Epoch: r.Epoch, Results: r.Results},
		RecordPath: r.RecordPath, Written: r.Written, UpToDate: true}, "up to date"
}

// stampOutputs stamps each output, and gives the digest of them all.
func (u *upToDate) stampOutputs() (each []string, all string, err error) {
	parts := make([][]byte, len(u.outputs))
	for i, path := range u.outputs {
		s, err := uptodate.Take([]string{path}, u.jobs, time.Time{})
		if err != nil {
			return nil, "", err
		}
		each = append(each, s.Digest)
		parts[i] = []byte(s.Digest)
	}
	return each, uptodate.Key(parts...), nil
}

// note keeps what the finished build wrote for the next one, when the
// inputs had all settled before it began.
func (u *upToDate) note(res *Result, warnings []string, rep progress.Reporter) {
	if u.taken.Digest == "" || u.taken.Unsettled != "" {
		return
	}
	each, outs, err := u.stampOutputs()
	if err != nil {
		rep.Warn("noting the outputs for the next build: %v", err)
		return
	}
	for i, path := range u.outputs {
		if each[i] != u.afterWrite[path] {
			return // changed since this build wrote it: not this build's
		}
	}
	r, err := json.Marshal(noted{Results: res.Record.Results, Written: res.Written, RecordPath: res.RecordPath,
		Recipe: res.Record.Recipe, Epoch: res.Record.Epoch})
	if err != nil {
		return
	}
	if err := u.store.Put(u.key, &uptodate.Note{Inputs: u.taken.Digest, Outputs: outs, Result: r, Warnings: warnings}); err != nil {
		rep.Warn("noting the outputs for the next build: %v", err)
	}
	if err := u.store.Prune(noteMaxAge, now()); err != nil {
		rep.Warn("pruning up-to-date notes: %v", err)
	}
}

// noteMaxAge is how long a note no build has written is kept.
const noteMaxAge = 30 * 24 * time.Hour

// warnings passes a reporter's messages on and keeps its warnings, for
// the note of the build.
type warnings struct {
	progress.Reporter
	mu   sync.Mutex
	said []string
}

// sorted is what was said, in a fixed order (artifacts are made ready
// concurrently).
func (w *warnings) sorted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(slices.Values(w.said))
}

func (w *warnings) Warn(format string, args ...any) {
	w.mu.Lock()
	w.said = append(w.said, fmt.Sprintf(format, args...))
	w.mu.Unlock()
	w.Reporter.Warn(format, args...)
}
