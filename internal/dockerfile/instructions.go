package dockerfile

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/util/system"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/tree"
)

// refused are the instructions pallet does not carry out, with why and
// what to do instead. RUN has its own message (runRefusal).
var refused = map[string]string{
	"healthcheck": "HEALTHCHECK is not supported: pallet's image config does not carry a health check; set it where the image runs (a Kubernetes probe, docker run --health-cmd)",
	"volume":      "VOLUME is not supported: pallet's image config does not carry volumes; declare them where the image runs (a Kubernetes volume, docker run -v)",
	"shell":       `SHELL is not supported: pallet's image config does not carry a shell; write CMD and ENTRYPOINT in JSON form with the shell you want, e.g. CMD ["powershell", "-Command", "..."]`,
	"onbuild":     "ONBUILD is not supported: it records instructions for images built FROM this one, which pallet's image config does not carry",
	"maintainer":  "MAINTAINER is not supported (deprecated by Docker): use LABEL org.opencontainers.image.authors=...",
}

// instruction plans one instruction of stage s.
func (e *evaluator) instruction(s *stageState, n *parser.Node) error {
	pos := e.d.loc.node(n)
	kw := strings.ToLower(n.Value)
	if kw == "run" {
		msg := runRefusal(n.Original)
		if by := e.neededBy[s.def.index]; by != "" {
			// A build stage's RUN stops a build whose target only
			// copies from it: say why that stage is read at all.
			msg += fmt.Sprintf(". This RUN is in stage %s, which %s needs (only the stages the target needs are read): make what the target copies from it before the build, and COPY it from the build context", s.def.label(), by)
		}
		return plan.Errorf(pos, "%s", msg)
	}
	if msg, ok := refused[kw]; ok {
		return plan.Errorf(pos, "%s", msg)
	}
	v, err := parseInstruction(n)
	if err != nil {
		return e.d.parseError(err, n.StartLine)
	}
	// Each variable an ENV or ARG sets looks through those set so far.
	pairs := 0
	switch c := v.(type) {
	case *instructions.ArgCommand:
		pairs = len(c.Args)
	case *instructions.EnvCommand:
		pairs = len(c.Env)
	}
	if err := e.spend(pairs * (len(s.env.env) + len(s.cfg.Env))); err != nil {
		return plan.Errorf(pos, "%s: %v", strings.ToUpper(kw), err)
	}
	switch c := v.(type) {
	case *instructions.ArgCommand:
		err = e.arg(s, c)
	case *instructions.EnvCommand:
		err = e.env(s, c)
	case *instructions.LabelCommand:
		err = e.label(s, c)
	case *instructions.CopyCommand:
		err = e.copy(s, n, copyOf(c))
	case *instructions.AddCommand:
		err = e.copy(s, n, addOf(c))
	case *instructions.WorkdirCommand:
		err = e.workdir(s, n, c)
	case *instructions.UserCommand:
		err = c.Expand(e.expander(s))
		s.user, s.cfg.User = c.User, c.User
	case *instructions.ExposeCommand:
		err = e.expose(s, c)
	case *instructions.StopSignalCommand:
		err = e.stopSignal(s, c)
	case *instructions.CmdCommand:
		s.cfg.Cmd = command(s, c.ShellDependantCmdLine)
		s.cmdSet = true
	case *instructions.EntrypointCommand:
		s.cfg.Entrypoint = command(s, c.ShellDependantCmdLine)
		// A new entrypoint drops a CMD written for the old one, unless
		// this stage set CMD itself.
		if !s.cmdSet {
			s.cfg.Cmd = nil
		}
	default:
		err = fmt.Errorf("not supported by pallet")
	}
	// Refused here, before the plan of a stage with thousands of layers
	// costs minutes.
	if err == nil && len(s.layers) > image.MaxLayers {
		err = fmt.Errorf("this makes layer %d of the image; an image has at most %d (Linux's overlayfs mounts no more, Docker no more than %d): copy more in one COPY", len(s.layers), image.MaxLayers, image.DockerMaxLayers)
	}
	if err != nil {
		return locate(strings.ToUpper(kw), pos, err)
	}
	return nil
}

// locate places an instruction's error at the most precise position
// known (a word's, found deeper, or the instruction's) and names the
// instruction in it.
func locate(kw string, pos plan.Pos, err error) error {
	var pe *plan.Error
	if errors.As(err, &pe) {
		pos, err = pe.Pos, pe
	}
	msg := err.Error()
	if pe != nil {
		msg = pe.Msg
	}
	return &plan.Error{Pos: pos, Msg: kw + ": " + msg, Err: err}
}

// runRefusal says what replaces a RUN: pallet builds images from
// artifacts, made or fetched outside any container.
func runRefusal(line string) string {
	l := strings.ToLower(line)
	var hint string
	switch {
	case strings.Contains(l, "go build") || strings.Contains(l, "go install"):
		hint = "this RUN builds Go: a `go` artifact cross-compiles it (packages, ldflags, tags, pinned Go version) for every platform"
	case strings.Contains(l, "go mod download"):
		hint = "this RUN fetches Go modules: a `go` or `gomod` artifact downloads the modules it builds itself, into its own cache, and needs no such step"
	case strings.Contains(l, "curl") || strings.Contains(l, "wget") || strings.Contains(l, "invoke-webrequest"):
		hint = "this RUN downloads: a `url` artifact fetches it pinned by sha256, and unpacks it with `extract`"
	case strings.Contains(l, "tar ") || strings.Contains(l, "unzip") || strings.Contains(l, "expand-archive"):
		hint = "this RUN unpacks an archive: ADD unpacks a local tar archive, a `url` or `local` artifact with `extract` any archive"
	default:
		hint = "make its files before the build and COPY them (a `local` artifact), build Go with a `go` artifact, download with a `url` artifact pinned by sha256"
	}
	return "RUN is not supported: pallet runs no commands (it needs no container runtime); " + hint +
		". Write the artifact in a pallet.yaml recipe (docs/recipe.md), or see docs/dockerfile.md"
}

// expander expands words for an instruction of s.
func (e *evaluator) expander(s *stageState) instructions.SingleWordExpander {
	return func(word string) (string, error) { return e.expand(s, word) }
}

func (e *evaluator) env(s *stageState, c *instructions.EnvCommand) error {
	if err := c.Expand(e.expander(s)); err != nil {
		return err
	}
	for _, kv := range c.Env {
		s.setEnv(kv.Key, kv.Value)
	}
	return nil
}

func (e *evaluator) label(s *stageState, c *instructions.LabelCommand) error {
	if err := c.Expand(e.expander(s)); err != nil {
		return err
	}
	if s.cfg.Labels == nil {
		s.cfg.Labels = map[string]string{}
	}
	for _, kv := range c.Labels {
		s.cfg.Labels[kv.Key] = kv.Value
	}
	return nil
}

// command is a CMD or ENTRYPOINT: the JSON form as written, the shell
// form run by the platform's shell, as Docker does.
func command(s *stageState, c instructions.ShellDependantCmdLine) []string {
	if !c.PrependShell {
		if c.CmdLine == nil {
			// "ENTRYPOINT []" clears it; nil would inherit the base's.
			return []string{}
		}
		return slices.Clone(c.CmdLine)
	}
	shell := []string{"/bin/sh", "-c"}
	if s.platform.IsWindows() {
		shell = []string{"cmd", "/S", "/C"}
	}
	return append(shell, strings.Join(c.CmdLine, " "))
}

// workdir sets the working directory; relative paths are relative to the
// previous one. On an empty base, the directory is also made as a layer
// of its own, as BuildKit does; on another base it may exist already
// with its own owner, which a layer would replace, so pallet leaves it to
// the runtime, which creates a missing working directory.
func (e *evaluator) workdir(s *stageState, n *parser.Node, c *instructions.WorkdirCommand) error {
	if err := c.Expand(e.expander(s)); err != nil {
		return err
	}
	if !s.workdirKnown() && !system.IsAbs(c.Path, s.platform.OS) {
		return e.needBase(s, fmt.Sprintf("the relative WORKDIR %s of line %d", c.Path, n.StartLine),
			fmt.Errorf("%s is relative to the working directory of the base image %s, which pallet does not read; write it absolute", c.Path, s.base))
	}
	wd, err := system.NormalizePath(s.workdir, c.Path, s.platform.OS, false)
	if err != nil {
		return err
	}
	// Refused before the stage's content records each of its parents,
	// and each WORKDIR's layer holds them all.
	if _, err := tree.CleanPath(path.Clean(wd)); err != nil {
		return err
	}
	s.workdir = wd
	s.cfg.Workdir = system.FromSlash(wd, s.platform.OS)
	// BuildKit makes it with a file op (dispatchWorkdir), but for /,
	// which reads a USER name where the stage holds files already.
	touched := s.touched
	s.touched = s.touched || wd != "/"
	// The config keeps the path as BuildKit writes it; the directory is
	// where it leads (/app/../b is /b, /a/ is /a), on Windows spelled
	// as the stage holds it (C:\K is the C:\k a COPY made).
	wd = s.content.spell(path.Clean(wd))
	at, q, ok := s.content.fileAt(wd)
	if !ok {
		at, q, ok = s.content.fileAbove(wd)
	}
	if ok {
		return plan.Errorf(e.d.loc.node(n), "%s is a file, put there by line %d (%s), and the working directory %s needs a directory there: Docker does not replace a file with a directory, making it fails (not a directory); choose another working directory, or copy the file to another name", at, q.pm.Pos.Line, q.from(at), wd)
	}
	if wd == "/" || !s.emptyBase || s.content.isDir(wd) {
		return nil
	}
	// Only the directory pallet writes would differ: the config keeps
	// the name as BuildKit does.
	if err := linuxBackslash(s, "the directory", wd); err != nil {
		return err
	}
	if namesOwner(s.user) && s.base == image.Scratch && !touched && !s.platform.IsWindows() {
		return plan.Errorf(e.d.loc.node(n), "USER %s: a name, which BuildKit reads in the stage's /etc/passwd to own the directory WORKDIR makes, and the stage holds nothing yet (FROM scratch, no COPY or WORKDIR before this one), so it has none to read (invalid user index: -1); give USER as a numeric uid[:gid]", s.user)
	}
	uid, gid, err := e.workdirOwner(s)
	if err != nil {
		return err
	}
	pos := e.d.loc.token(n, c.Path)
	src := &source{kind: srcEmpty, hint: "workdir"}
	// BuildKit makes the parents it needs as the USER too.
	pm := plan.Placement{Artifact: e.artifact(src, pos), Dest: wd + "/", UID: uid, GID: gid, Pos: pos, OwnNewDirs: uid != 0 || gid != 0}
	s.layers = append(s.layers, &plan.Layer{Name: e.layerName(n), Placements: []plan.Placement{pm}})
	s.content.add(&placed{src: src, pm: pm, root: wd, files: map[string]tree.Kind{"": tree.Dir}})
	return nil
}

// workdirOwner is who owns the directory WORKDIR makes: the USER so far,
// as BuildKit resolves it on an empty base (a name not found there is
// root).
func (e *evaluator) workdirOwner(s *stageState) (int, int, error) {
	if s.user == "" || s.platform.IsWindows() {
		return 0, 0, nil
	}
	if uid, gid, ok := numericOwner(s.user); ok {
		return uid, gid, nil
	}
	uid, gid, ok, err := s.namedOwner(s.user)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("the directory is owned by USER %s, a name pallet would have to read from the stage's /etc/passwd, which it cannot read when it plans; give USER as a numeric uid:gid", s.user)
	}
	return uid, gid, nil
}

// portRE is [ip:][hostPort:]port[-end][/proto], as EXPOSE reads it.
var portRE = lazyre.New(`^(?:.*:)?([0-9]+)(?:-([0-9]+))?(?:/([A-Za-z]+))?$`)

func (e *evaluator) expose(s *stageState, c *instructions.ExposeCommand) error {
	// A set, not a search of the list: one range can name 65535 ports.
	seen := map[string]bool{}
	for _, p := range s.cfg.ExposedPorts {
		seen[p] = true
	}
	for _, raw := range c.Ports {
		m := e.metered(raw, s.env, true)
		words, err := e.lex.ProcessWords(raw, m)
		if err != nil {
			return err
		}
		n := 0
		for _, w := range words {
			n += len(w)
		}
		if err := e.spent(m, raw, n, true); err != nil {
			return err
		}
		// ProcessWords reports no unmatched names, and an unset one
		// drops its word: a $PORT the base's ENV sets would vanish.
		if err := e.checkUnset(s, m.missed); err != nil {
			return err
		}
		for _, w := range words {
			ports, err := parsePort(w)
			if err != nil {
				return err
			}
			for _, p := range ports {
				if !seen[p] {
					seen[p] = true
					s.cfg.ExposedPorts = append(s.cfg.ExposedPorts, p)
				}
			}
		}
	}
	return nil
}

// parsePort reads one EXPOSE word into port/proto entries, a range into
// one per port.
func parsePort(w string) ([]string, error) {
	m := portRE().FindStringSubmatch(w)
	if m == nil {
		return nil, fmt.Errorf("invalid port %q: want PORT[-END][/tcp|udp|sctp]", w)
	}
	start, err1 := strconv.Atoi(m[1])
	end := start
	var err2 error
	if m[2] != "" {
		end, err2 = strconv.Atoi(m[2])
	}
	proto := strings.ToLower(m[3])
	if proto == "" {
		proto = "tcp"
	}
	if err1 != nil || err2 != nil || start < 1 || end > 65535 || end < start {
		return nil, fmt.Errorf("invalid port %q: ports are 1 to 65535", w)
	}
	if proto != "tcp" && proto != "udp" && proto != "sctp" {
		return nil, fmt.Errorf("invalid port %q: protocol %s (want tcp, udp or sctp)", w, proto)
	}
	var out []string
	for p := start; p <= end; p++ {
		out = append(out, fmt.Sprintf("%d/%s", p, proto))
	}
	return out, nil
}

func (e *evaluator) stopSignal(s *stageState, c *instructions.StopSignalCommand) error {
	if err := c.Expand(e.expander(s)); err != nil {
		return err
	}
	if err := image.CheckStopSignal(c.Signal, s.platform.OS); err != nil {
		return err
	}
	s.cfg.StopSignal = c.Signal
	return nil
}

// layerName names a layer after the instruction that makes it.
func (e *evaluator) layerName(n *parser.Node) string {
	return fmt.Sprintf("%s %s:%d", strings.ToUpper(n.Value), e.d.File, n.StartLine)
}

// workdirKnown says the working directory relative paths start from is
// known: set by a WORKDIR, or the base's, known when the base is empty or
// was read.
func (s *stageState) workdirKnown() bool { return s.envKnown || s.cfg.Workdir != "" }
