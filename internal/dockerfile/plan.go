package dockerfile

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/buildkit/util/system"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
)

// Options parameterize the plan of a Dockerfile, as docker build's flags
// do. The zero value builds the last stage for linux/amd64 (or the
// platform its FROM --platform names) from the Dockerfile's directory.
type Options struct {
	// Args override ARG defaults (--build-arg); each must be declared by
	// an ARG of the Dockerfile, except SOURCE_DATE_EPOCH.
	Args map[string]string
	// Platforms are the target platforms (--platform); one image per
	// platform, gathered in an index.
	Platforms []string
	// Target is the stage to build (--target); the last one by default.
	Target string
	// Context is the build context directory; the Dockerfile's by default.
	Context string
	// Epoch overrides the timestamps; else SOURCE_DATE_EPOCH from Args,
	// then from the environment, then 0.
	Epoch *int64
	// Repository names the image in outputs: the target stage's name
	// when it was chosen, else the Dockerfile directory's name.
	Repository string
	// Tags default to latest.
	Tags []string
	// BuildPlatform is BUILDPLATFORM; the host's by default.
	BuildPlatform string
	// ReadBase, when set, reads the config of a registry or oci: base for
	// a platform, as BuildKit's MetaResolver does before it expands
	// anything. It is asked only for a base whose environment or working
	// directory a word needs (a variable this Dockerfile does not set, a
	// relative WORKDIR or destination); without it such a word is
	// refused, as pallet cannot tell what BuildKit would make of it.
	ReadBase func(ref string, p platform.Platform) (BaseMeta, error)
}

// BaseMeta is what the front end reads of a base image.
type BaseMeta struct {
	// Env is the base's environment, NAME=VALUE, and WorkingDir its
	// working directory: BuildKit starts a stage with both.
	Env        []string
	WorkingDir string
	// Digest is the manifest digest of the image read, for a registry
	// base: the plan names the base by it, so that the build assembles
	// onto the image whose config was read, not the one a moved tag
	// leads to by then.
	Digest string
}

// baseNeed is a base whose config a word of the plan needs, and why.
type baseNeed struct {
	ref      string
	platform platform.Platform
	pos      plan.Pos
	why      string
}

func baseKey(ref string, p platform.Platform) string { return ref + " " + p.String() }

// evaluator plans one Dockerfile; the per-platform fields are reset for
// each target platform.
type evaluator struct {
	d     *Dockerfile
	opt   Options
	p     *plan.Plan
	ctx   *buildContext
	lex   *shell.Lex
	names *names
	build platform.Platform

	targetDef  *stageDef
	targetName string
	target     platform.Platform
	// art is the image's platform, which every artifact is requested for.
	art    platform.Platform
	global *vars
	states []*stageState
	// neededBy says, for each stage other than the target that the
	// target reaches, the line that makes it needed ("COPY --from at
	// line 24"), for errors inside it.
	neededBy map[int]string
	// expanded is the size of the words expanded so far for the target
	// platform (see maxExpanded).
	expanded int
	// fromStages counts the sources COPY --from took from stages so far
	// for the target platform (see maxFromStages).
	fromStages int
	// work counts the steps of planning for the target platform (see
	// maxWork).
	work int
	// bases are the base configs read so far (ReadBase), by baseKey.
	bases map[string]*BaseMeta
	// need is the base whose config the plan stopped for, if it did.
	need *baseNeed
	// passesWork is the work of the passes planReading made before this
	// one for the target platform, which counts against maxWork with the
	// pass's own: N bases read meant N+1 passes, each allowed maxWork.
	passesWork int
}

// stageState is a stage as planned so far.
type stageState struct {
	def *stageDef
	// base is the image the stage's root stage starts from, expanded.
	base     string
	basePos  plan.Pos
	platform platform.Platform
	env      *vars
	// envKnown says the base's environment and working directory are
	// known (scratch, the built-in Windows base, a base read with
	// ReadBase, or stages on them): only then is an unset variable known
	// to be empty.
	envKnown bool
	// readable says ReadBase can make them known.
	readable bool
	// emptyBase says the base has no files (no /etc/passwd to read).
	emptyBase bool
	declared  map[string]bool
	cfg       image.Config
	cmdSet    bool
	workdir   string
	user      string
	layers    []*plan.Layer
	content   *content
	// touched says a COPY, ADD or WORKDIR changed the stage's files:
	// BuildKit's state is no longer scratch (see chownName).
	touched bool
}

// Plan expands the Dockerfile for the given options into a build plan:
// one image, the target stage, for each target platform.
func (d *Dockerfile) Plan(opt Options) (*plan.Plan, error) {
	if err := d.checkOverrides(opt.Args); err != nil {
		return nil, err
	}
	epoch, err := epochOf(opt)
	if err != nil {
		return nil, err
	}
	ctxDir := opt.Context
	if ctxDir == "" {
		ctxDir = d.Dir
	}
	bc, err := openContext(ctxDir, d.File)
	if err != nil {
		return nil, err
	}
	e := &evaluator{d: d, opt: opt, ctx: bc, lex: shell.NewLex(d.escape),
		names: &names{byID: map[string]string{}, used: map[string]bool{}},
		p:     &plan.Plan{Source: d.File, Dir: d.Dir, Epoch: epoch, Artifacts: map[string]*plan.Artifact{}, Ignored: bc.leavesOut}}
	if e.build, err = buildPlatform(opt.BuildPlatform); err != nil {
		return nil, err
	}
	if e.targetDef, err = d.targetStage(opt.Target); err != nil {
		return nil, err
	}
	e.targetName = e.targetDef.name
	if e.targetName == "" {
		e.targetName = "default"
	}
	im, err := e.image()
	if err != nil {
		return nil, err
	}
	e.p.Images = []*plan.Image{im}
	return e.p, nil
}

func epochOf(opt Options) (time.Time, error) {
	if opt.Epoch != nil {
		if err := plan.CheckEpoch(*opt.Epoch); err != nil {
			return time.Time{}, err
		}
		return time.Unix(*opt.Epoch, 0).UTC(), nil
	}
	v, from := epochSetting(opt)
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := plan.ParseEpoch(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s=%q: %w", from, v, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// epochSetting is SOURCE_DATE_EPOCH as the build is given it, and where
// from: --arg, else the environment, which buildx passes on as the
// build arg; "" where neither sets it.
func epochSetting(opt Options) (value, from string) {
	if v, ok := opt.Args[epochArg]; ok {
		return v, "--arg " + epochArg
	}
	return os.Getenv(epochArg), epochArg
}

// buildPlatform is BUILDPLATFORM: the host's, as BuildKit's, unless given.
func buildPlatform(s string) (platform.Platform, error) {
	if s != "" {
		return platform.Parse(s)
	}
	p := platform.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if p.Arch == "arm" {
		p.Variant = "v7"
	}
	return p, nil
}

// targetStage is the stage --target names, or the last one.
func (d *Dockerfile) targetStage(name string) (*stageDef, error) {
	if name == "" {
		return d.stages[len(d.stages)-1], nil
	}
	for _, s := range d.stages {
		if s.name != "" && s.name == strings.ToLower(name) {
			return s, nil
		}
	}
	return nil, fmt.Errorf("target stage %q: not in %s (stages: %s)", name, d.File, strings.Join(d.Stages(), ", "))
}

// image plans the target stage for every target platform.
func (e *evaluator) image() (*plan.Image, error) {
	repo := e.opt.Repository
	if repo == "" {
		repo = e.defaultRepository()
	}
	if err := plan.CheckRepository(repo); err != nil {
		return nil, err
	}
	tags := e.opt.Tags
	if len(tags) == 0 {
		tags = []string{"latest"}
	}
	for _, t := range tags {
		if err := plan.CheckTag(t); err != nil {
			return nil, err
		}
	}
	im := &plan.Image{Name: repo, Repository: repo, Tags: tags, Pos: e.targetDef.pos}
	targets, err := parsePlatforms(e.opt.Platforms)
	if err != nil {
		return nil, err
	}
	explicit := len(targets) > 0
	if !explicit {
		targets = []platform.Platform{{OS: "linux", Arch: "amd64"}}
	}
	for _, t := range targets {
		pi, err := e.planReading(t, explicit)
		if err != nil {
			return nil, err
		}
		im.Platforms = append(im.Platforms, pi)
	}
	return im, nil
}

// defaultRepository names the image after the target stage chosen, or
// after the directory holding the Dockerfile (examples/hello/Dockerfile
// gives hello), as a valid repository name.
func (e *evaluator) defaultRepository() string {
	name := ""
	if e.opt.Target != "" {
		name = e.targetDef.name
	} else {
		name = filepath.Base(e.d.Dir)
	}
	name = strings.Trim(notName().ReplaceAllString(strings.ToLower(name), "-"), "-._")
	// Separators are one '.' or '_', "__", or dashes: "a..b" is "a-b".
	name = sepRun().ReplaceAllStringFunc(name, func(m string) string {
		if m == "__" || strings.Trim(m, "-") == "" {
			return m
		}
		return "-"
	})
	if name == "" || plan.CheckRepository(name) != nil {
		return "image"
	}
	return name
}

// sepRun is a run of separators in a name.
var sepRun = lazyre.New(`[._-]{2,}`)

func parsePlatforms(list []string) ([]platform.Platform, error) {
	var out []platform.Platform
	seen := map[string]bool{}
	for _, s := range list {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			p, err := platform.Parse(part)
			if err != nil {
				if !strings.Contains(part, "/") && part != "" && platform.ParseSelector(part) == nil {
					// A recipe's --platform windows picks from the
					// image's platforms; a Dockerfile has no such list.
					return nil, fmt.Errorf("platform selection: %q is an OS; a Dockerfile build is given platforms (%s/amd64)", part, part)
				}
				return nil, fmt.Errorf("platform selection: %w", err)
			}
			if !seen[p.String()] {
				seen[p.String()] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// planReading plans target platform t, reading a base's config each time
// the plan stops at a word that needs it and planning again with it
// known: each pass reads one base more, so there are at most as many
// passes as bases. A pass that stops has made nothing but artifacts the
// next one makes again, as every word before the stop expanded with
// variables of this Dockerfile, which a base's environment does not
// change.
func (e *evaluator) planReading(t platform.Platform, explicit bool) (*plan.PlatformImage, error) {
	e.passesWork = 0
	defer func() { e.passesWork = 0 }()
	for {
		e.need = nil
		pi, err := e.platformImage(t, explicit)
		n := e.need
		if err == nil || n == nil {
			return pi, err
		}
		e.passesWork = e.work
		m, rerr := e.opt.ReadBase(n.ref, n.platform)
		if rerr != nil {
			// Never expanded as empty: BuildKit would have read it.
			return nil, plan.Errorf(n.pos, "FROM %s: reading the base image's config for %s, which %s needs: %v", n.ref, n.platform, n.why, rerr)
		}
		if e.bases == nil {
			e.bases = map[string]*BaseMeta{}
		}
		e.bases[baseKey(n.ref, n.platform)] = &m
	}
}

// platformImage plans the target stage for target platform t. The image's
// platform is the one the root of its FROM chain names with --platform,
// else t; without --platform given to pallet, TARGETPLATFORM is then the
// image's platform, so that the whole Dockerfile agrees on it.
func (e *evaluator) platformImage(t platform.Platform, explicit bool) (*plan.PlatformImage, error) {
	imgPlat, err := e.setTarget(t)
	if err != nil {
		return nil, err
	}
	if imgPlat != t {
		if explicit {
			root := e.rootOf(e.targetDef)
			return nil, plan.Errorf(root.platPos, "FROM --platform=%s fixes the image's platform to %s, and the build asks for %s: use FROM --platform=$TARGETPLATFORM, or ask for %s", root.platformRaw, imgPlat, t, imgPlat)
		}
		if imgPlat, err = e.setTarget(imgPlat); err != nil {
			return nil, err
		}
	}
	e.art = imgPlat
	e.states = make([]*stageState, len(e.d.stages))
	reach, err := e.reachable()
	if err != nil {
		return nil, err
	}
	for _, sd := range e.d.stages {
		if !reach[sd.index] {
			continue
		}
		st, err := e.runStage(sd)
		if err != nil {
			return nil, err
		}
		e.states[sd.index] = st
	}
	s := e.states[e.targetDef.index]
	return &plan.PlatformImage{Platform: imgPlat, Bases: []string{s.base}, BasePos: s.basePos, Layers: s.layers, Config: s.cfg,
		// A later COPY replaces what an earlier one put, as in docker build.
		Overwrite: true}, nil
}

// setTarget makes t the target platform and returns the platform of the
// image it gives.
func (e *evaluator) setTarget(t platform.Platform) (platform.Platform, error) {
	e.target = t
	// The passes planReading makes for one platform share one bound:
	// each plans the stages before its stop again.
	e.expanded, e.fromStages, e.work = 0, 0, e.passesWork
	var err error
	if e.global, err = e.globals(); err != nil {
		return platform.Platform{}, err
	}
	root := e.rootOf(e.targetDef)
	if root.platformRaw == "" {
		return t, nil
	}
	return e.expandPlatform(root)
}

// fromStage returns the earlier stage a FROM line names, if it names one.
func (e *evaluator) fromStage(sd *stageDef) (*stageDef, string, error) {
	base, err := e.processWord(sd.baseRaw, e.global, false)
	if err != nil {
		return nil, "", plan.Errorf(sd.basePos, "FROM %s: %v", sd.baseRaw, err)
	}
	if base == "" {
		return nil, "", plan.Errorf(sd.basePos, "FROM %s: the base name is empty once expanded", sd.baseRaw)
	}
	if i, ok := e.d.named[strings.ToLower(base)]; ok && i < sd.index {
		return e.d.stages[i], base, nil
	}
	if err := image.CheckBaseRef(base); err != nil {
		return nil, "", plan.Errorf(sd.basePos, "FROM %s: %v", sd.baseRaw, err)
	}
	return nil, base, nil
}

// rootOf follows FROM lines naming stages back to the stage that starts
// from an image. A name that cannot be expanded ends the chain; the error
// is reported when the stage is planned.
func (e *evaluator) rootOf(sd *stageDef) *stageDef {
	for {
		parent, _, err := e.fromStage(sd)
		if err != nil || parent == nil {
			return sd
		}
		sd = parent
	}
}

// reachable marks the stages the target needs: its FROM chain and the
// stages COPY --from names, transitively, as BuildKit builds only those.
func (e *evaluator) reachable() (map[int]bool, error) {
	reach := map[int]bool{}
	e.neededBy = map[int]string{}
	var visit func(sd *stageDef, by string) error
	visit = func(sd *stageDef, by string) error {
		if reach[sd.index] {
			return nil
		}
		reach[sd.index] = true
		if by != "" {
			e.neededBy[sd.index] = by
		}
		parent, _, err := e.fromStage(sd)
		if err != nil {
			return err
		}
		if parent != nil {
			if err := visit(parent, fmt.Sprintf("the FROM at line %d", sd.pos.Line)); err != nil {
				return err
			}
		}
		for _, n := range sd.nodes {
			if !strings.EqualFold(n.Value, "copy") {
				continue
			}
			v, err := parseInstruction(n)
			if err != nil {
				return e.d.parseError(err, n.StartLine)
			}
			if c, ok := v.(*instructions.CopyCommand); ok && c.From != "" {
				if dep := e.d.stageRef(c.From); dep != nil && dep.index < sd.index {
					if err := visit(dep, fmt.Sprintf("the COPY --from at line %d", n.StartLine)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return reach, visit(e.targetDef, "")
}

// stageRef is the stage a --from value names, by name or index.
func (d *Dockerfile) stageRef(ref string) *stageDef {
	if i, err := strconv.Atoi(ref); err == nil {
		if i >= 0 && i < len(d.stages) {
			return d.stages[i]
		}
		return nil
	}
	if i, ok := d.named[strings.ToLower(ref)]; ok {
		return d.stages[i]
	}
	return nil
}

// runStage plans one stage: its start (an image, or an earlier stage it
// continues), then its instructions in order.
func (e *evaluator) runStage(sd *stageDef) (*stageState, error) {
	parentDef, base, err := e.fromStage(sd)
	if err != nil {
		return nil, err
	}
	var s *stageState
	if parentDef != nil {
		// A copy is kept for each stage, in maps: each thing copied
		// costs some twenty steps of looking through variables.
		p := e.states[parentDef.index]
		if err := e.spend(20 * (len(p.env.env) + len(p.cfg.Env) + len(p.content.nodes) + len(p.content.placed) + len(p.layers))); err != nil {
			return nil, plan.Errorf(sd.basePos, "FROM %s: %v", parentDef.label(), err)
		}
		s = p.inherit(sd)
	} else if s, err = e.startStage(sd, base); err != nil {
		return nil, err
	}
	for _, n := range sd.nodes {
		if err := e.instruction(s, n); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// inherit starts stage sd where its parent stage p ended: same base,
// layers, files, config, environment and ARGs, as BuildKit does.
func (p *stageState) inherit(sd *stageDef) *stageState {
	s := *p
	s.def = sd
	s.env = p.env.clone()
	// BuildKit starts the stage from its parent's state, whose
	// environment an ARG value may have changed, then sets the config's
	// env over it: an ENV's value is back, an ARG of another name stays.
	for _, kv := range p.cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		s.env.set(k, v)
	}
	s.declared = maps.Clone(p.declared)
	s.cfg = cloneConfig(p.cfg)
	s.cmdSet = false
	s.layers = slices.Clone(p.layers)
	s.content = p.content.clone()
	return &s
}

func cloneConfig(c image.Config) image.Config {
	out := c
	out.Entrypoint = slices.Clone(c.Entrypoint)
	out.Cmd = slices.Clone(c.Cmd)
	out.Env = slices.Clone(c.Env)
	out.ExposedPorts = slices.Clone(c.ExposedPorts)
	out.Labels = maps.Clone(c.Labels)
	return out
}

// startStage starts a stage from an image. Only what pallet knows of the
// base is assumed: scratch and the built-in Windows base are empty with a
// known environment; an oci: layout or a registry image is read only when
// the build assembles it.
func (e *evaluator) startStage(sd *stageDef, base string) (*stageState, error) {
	s := &stageState{def: sd, base: base, basePos: sd.basePos, platform: e.target,
		declared: map[string]bool{}, workdir: "/", content: newContent()}
	if sd.platformRaw != "" {
		p, err := e.expandPlatform(sd)
		if err != nil {
			return nil, err
		}
		s.platform = p
	}
	// The stage's own platform decides how names compare, not the
	// target's: a Windows stage a Linux image copies from is still read
	// the Windows way.
	s.env = newVars(s.platform.IsWindows())
	if s.platform.IsWindows() {
		s.content.foldNames(layer.NTFSKey)
	}
	switch {
	case base == image.Scratch:
		s.envKnown, s.emptyBase = true, true
		// BuildKit's empty image has a working directory (emptyImage).
		s.cfg.Workdir = system.FromSlash("/", s.platform.OS)
	case base == image.HostProcessScratch:
		if !s.platform.IsWindows() {
			return nil, plan.Errorf(sd.basePos, "FROM %s: a Windows base, and the platform is %s; build with --platform windows/amd64, or write FROM --platform=windows/amd64", base, s.platform)
		}
		s.envKnown, s.emptyBase = true, true
		s.content.holdBase(image.BuiltinBaseTree(base))
	case strings.HasPrefix(base, "oci:"):
		if strings.TrimPrefix(base, "oci:") == "" {
			return nil, plan.Errorf(sd.basePos, "FROM oci: needs a layout directory, oci:DIR[:TAG]")
		}
		if err := e.fromRead(s); err != nil {
			return nil, err
		}
	default:
		if strings.ContainsAny(base, " \t") {
			return nil, plan.Errorf(sd.basePos, "FROM %q: not an image reference", base)
		}
		if err := e.fromRead(s); err != nil {
			return nil, err
		}
	}
	// BuildKit gives every Linux image a PATH when its base has none:
	// known where the base's environment is (an empty base, or one read).
	if _, ok := s.env.Get("PATH"); s.envKnown && !ok && !s.platform.IsWindows() {
		s.setEnv("PATH", defaultPath)
	}
	return s, nil
}

// fromRead starts stage s with its base's config where it was read
// (planReading), as BuildKit does: the base's ENV seeds the stage's
// environment (startStage gives a Linux one without PATH its PATH), and
// the base's working directory is where relative paths start.
func (e *evaluator) fromRead(s *stageState) error {
	m, ok := e.bases[baseKey(s.base, s.platform)]
	if !ok {
		s.readable = e.opt.ReadBase != nil
		return nil
	}
	s.envKnown = true
	for _, kv := range m.Env {
		k, v, _ := strings.Cut(kv, "=")
		s.env.set(k, v)
	}
	if m.WorkingDir != "" {
		// BuildKit sets it again as a WORKDIR would (dispatchWorkdir):
		// "app" is /app, and C:\app on Windows \app.
		wd, err := system.NormalizePath("/", m.WorkingDir, s.platform.OS, false)
		if err != nil {
			return plan.Errorf(s.basePos, "FROM %s: the base's working directory %q: %v", s.base, m.WorkingDir, err)
		}
		s.workdir = wd
		s.cfg.Workdir = system.FromSlash(wd, s.platform.OS)
	}
	if m.Digest != "" && !strings.HasPrefix(s.base, "oci:") && !strings.Contains(s.base, "@") {
		// The tag stays, for the record to show what was written.
		s.base += "@" + m.Digest
	}
	return nil
}

// needBase stops the plan at a word of stage s that needs its base's
// config, for planReading to read it, and returns refusal, what is said
// where it cannot be read.
func (e *evaluator) needBase(s *stageState, why string, refusal error) error {
	if s.readable {
		e.need = &baseNeed{ref: s.base, platform: s.platform, pos: s.basePos, why: why}
	}
	return refusal
}

// defaultPath is BuildKit's PATH for Linux images (util/system).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// setEnv sets a variable for later instructions and in the image config,
// replacing one of the same name in place, as BuildKit does; both follow
// image.SetEnv, so on Windows they agree on which names are one.
func (s *stageState) setEnv(k, v string) {
	s.env.set(k, v)
	s.cfg.Env = image.SetEnv(s.cfg.Env, k+"="+v, s.platform.IsWindows())
}

// artifact registers the artifact of src for the image's platform and
// returns its key; a source used again shares the artifact.
func (e *evaluator) artifact(src *source, pos plan.Pos) string {
	name := e.names.name(src)
	key := plan.Key(name, e.art)
	if _, ok := e.p.Artifacts[key]; !ok {
		e.p.Artifacts[key] = &plan.Artifact{
			// A Dockerfile ships what it copies and nothing more: no
			// licence files are looked for or added.
			Request: artifact.Request{Name: name, Platform: e.art, NoLicense: true, Kind: src.artifactKind(e.art)},
			Check:   true,
			Pos:     pos,
		}
	}
	return key
}

// Fetchable lists the downloads the Dockerfile's ADD instructions make
// for the given options: what an air-gapped site must mirror (pallet
// fetch) before building offline.
func (d *Dockerfile) Fetchable(opt Options) ([]*plan.Artifact, error) {
	p, err := d.Plan(opt)
	if err != nil {
		return nil, err
	}
	var out []*plan.Artifact
	for _, k := range p.Keys() {
		if _, ok := p.Artifacts[k].Kind.(*artifact.URL); ok {
			out = append(out, p.Artifacts[k])
		}
	}
	return out, nil
}
