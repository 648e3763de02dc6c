// Package dockerfile is pallet's second front end: it reads the subset of
// a Dockerfile that needs no container runtime (FROM, ARG, COPY, ADD and
// the config instructions) and produces the same neutral plan.Plan a
// pallet.yaml recipe does, with a position on every planned thing. The
// Dockerfile is parsed by BuildKit's own parser and instruction reader,
// and variables are expanded by BuildKit's shell lexer, so quoting,
// escapes, line continuations and ARG scoping are BuildKit's; what RUN
// would do is refused with the artifact kind that replaces it.
package dockerfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/plan"
)

// maxFileSize bounds the Dockerfile read into memory; real ones are a few
// kilobytes (BuildKit's own limit for a Dockerfile is far lower than this).
const maxFileSize = 4 << 20

// Dockerfile is a parsed Dockerfile: its global ARGs and its stages, each
// instruction kept as BuildKit's parse node so that every evaluation (one
// per platform) reads fresh, unexpanded instructions.
type Dockerfile struct {
	// File is the path as given; positions name it.
	File string
	// Dir is the Dockerfile's directory, absolute: the default build
	// context, and where relative oci: bases are found.
	Dir string

	escape rune
	loc    *locator
	meta   []*argDecl
	stages []*stageDef
	// named is the index of the first stage of each name: COPY --from
	// and FROM look a name up for each stage, and a look through every
	// stage each time made a chain of 8,000 stages take seconds.
	named map[string]int
	// declared holds every ARG name of the file, in any scope: an
	// override of any other name is a mistake worth an error.
	declared map[string]bool
}

// argDecl is one name of an ARG instruction.
type argDecl struct {
	key   string
	value *string
	pos   plan.Pos
}

// stageDef is one FROM and the instructions after it, unexpanded.
type stageDef struct {
	index       int
	name        string
	baseRaw     string
	platformRaw string
	pos         plan.Pos
	basePos     plan.Pos
	platPos     plan.Pos
	nodes       []*parser.Node
}

// label names a stage in messages, as BuildKit does.
func (s *stageDef) label() string {
	if s.name != "" {
		return s.name
	}
	return fmt.Sprintf("stage-%d", s.index)
}

// IsDockerfile says whether a -f file is a Dockerfile by its name:
// Dockerfile, NAME.Dockerfile or Dockerfile.NAME (any case), the names
// docker and buildx users give them, and the same with Containerfile,
// Podman's and Buildah's name.
func IsDockerfile(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	if strings.HasSuffix(base, ".dockerignore") || strings.HasSuffix(base, ".containerignore") {
		return false
	}
	for _, n := range []string{"dockerfile", "containerfile"} {
		if base == n || strings.HasSuffix(base, "."+n) || strings.HasPrefix(base, n+".") {
			return true
		}
	}
	return false
}

// Load reads and parses a Dockerfile. Every instruction is checked by
// BuildKit's instruction reader, in every stage, as docker build does;
// whether pallet can carry out an instruction is decided when the stage
// is planned, since a stage the target does not reach is never built.
func Load(file string) (*Dockerfile, error) {
	info, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s is a directory; give the Dockerfile itself", file)
	}
	if info.Size() > maxFileSize {
		return nil, fmt.Errorf("%s: %d bytes; a Dockerfile is at most %d", file, info.Size(), maxFileSize)
	}
	data, err := bounded.ReadFile(file, maxFileSize)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	return Parse(file, dir, data)
}

// Parse parses a Dockerfile's content; file names it in positions and dir
// is its directory.
func Parse(file, dir string, data []byte) (*Dockerfile, error) {
	d := &Dockerfile{File: file, Dir: dir, loc: newLocator(file, data), declared: map[string]bool{}}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		// BuildKit's reader stops at a line longer than it takes and,
		// when none was an instruction yet, says only that there is none.
		if n, l := longLine(data); n > 0 {
			return nil, plan.Errorf(d.loc.line(n), "line of %d bytes: a Dockerfile line is at most %d (BuildKit's limit)", l, bufio.MaxScanTokenSize-1)
		}
		return nil, d.parseError(err, 0)
	}
	d.escape = res.EscapeToken
	var cur *stageDef
	for _, n := range res.AST.Children {
		v, err := parseInstruction(n)
		if err != nil {
			return nil, d.parseError(err, n.StartLine)
		}
		switch c := v.(type) {
		case *instructions.Stage:
			cur = d.stage(c, n, len(d.stages))
			if _, ok := d.named[cur.name]; !ok && cur.name != "" {
				if d.named == nil {
					d.named = map[string]int{}
				}
				d.named[cur.name] = cur.index
			}
			d.stages = append(d.stages, cur)
		case *instructions.ArgCommand:
			decls := d.args(c, n)
			if cur == nil {
				d.meta = append(d.meta, decls...)
			} else {
				cur.nodes = append(cur.nodes, n)
			}
		default:
			if cur == nil {
				return nil, plan.Errorf(d.loc.node(n), "%s before the first FROM: only ARG may come before FROM", strings.ToUpper(n.Value))
			}
			cur.nodes = append(cur.nodes, n)
		}
	}
	if len(d.stages) == 0 {
		return nil, plan.Errorf(plan.Pos{File: file}, "no FROM instruction: a Dockerfile starts an image with FROM (scratch, windows-hostprocess-scratch, oci:DIR or an image)")
	}
	return d, nil
}

func (d *Dockerfile) stage(c *instructions.Stage, n *parser.Node, index int) *stageDef {
	s := &stageDef{index: index, name: strings.ToLower(c.Name), baseRaw: c.BaseName, platformRaw: c.Platform, pos: d.loc.node(n)}
	s.basePos = d.loc.token(n, c.BaseName)
	s.platPos = d.loc.token(n, "--platform")
	return s
}

func (d *Dockerfile) args(c *instructions.ArgCommand, n *parser.Node) []*argDecl {
	var out []*argDecl
	for _, a := range c.Args {
		d.declared[a.Key] = true
		out = append(out, &argDecl{key: a.Key, value: a.Value, pos: d.loc.token(n, a.Key)})
	}
	return out
}

// parseError locates an error of BuildKit's parser at the line it names,
// or at line when it names none.
func (d *Dockerfile) parseError(err error, line int) error {
	var el *parser.LocationError
	if errors.As(err, &el) && len(el.Locations) > 0 && len(el.Locations[0]) > 0 {
		line = el.Locations[0][0].Start.Line
	}
	return &plan.Error{Pos: d.loc.line(line), Msg: err.Error(), Err: err}
}

// Stages lists the stage names (stage-N for unnamed ones), for messages.
func (d *Dockerfile) Stages() []string {
	var out []string
	for _, s := range d.stages {
		out = append(out, s.label())
	}
	return out
}

// parseInstruction reads one instruction with BuildKit's reader. Its
// linter must not be nil (a "# check=" comment before an instruction
// configures it); one without a warning function reports nothing.
func parseInstruction(n *parser.Node) (any, error) {
	return instructions.ParseInstructionWithLinter(n, linter.New(&linter.Config{}))
}

// longLine gives the number and length of the first line of data longer
// than BuildKit's reader takes, or 0.
func longLine(data []byte) (n, length int) {
	for i := 1; len(data) > 0; i++ {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		if len(line) > bufio.MaxScanTokenSize-1 {
			return i, len(line)
		}
		data = rest
	}
	return 0, 0
}
