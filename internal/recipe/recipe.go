// Package recipe reads pallet.yaml: the declaration of artifacts, images,
// bases and platforms. It checks the shape of the file and keeps the line of
// every value, so that any later stage can report "pallet.yaml:12: ...".
// It does not expand variables or touch the network; that is the plan's job.
package recipe

import (
	"bytes"
	"errors"
	"fmt"
	"go/version"
	"io"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Recipe is a parsed pallet.yaml.
type Recipe struct {
	// Version of the recipe format; only 1 exists.
	Version int `yaml:"version"`
	// Args are variables with their defaults, usable as {{NAME}}.
	Args map[string]string `yaml:"args"`
	// Epoch is the timestamp (Unix seconds) written into layers and
	// configs; SOURCE_DATE_EPOCH overrides it; 0 if neither is set.
	Epoch     *int64               `yaml:"epoch"`
	Artifacts map[string]*Artifact `yaml:"artifacts"`
	// Limits raise or lower the bounds on this recipe's inputs; flags win.
	Limits *Limits           `yaml:"limits"`
	Images map[string]*Image `yaml:"images"`

	// File is the recipe's path; Dir its directory, against which relative
	// paths in the recipe are resolved.
	File string `yaml:"-"`
	Dir  string `yaml:"-"`

	lines map[string]int
	cols  map[string]int
	// unpinned allows pins to be missing: a recipe read by pallet lock,
	// which fills them in. Every other check still holds.
	unpinned bool
	// grown is how many bytes Expand added to the recipe's values since
	// Plan began (see MaxGrowth).
	grown int
}

// Limits bound what a recipe's inputs may cost. Sizes are bytes or take a
// unit ("512MiB", "16GiB"); durations are Go durations ("90s").
type Limits struct {
	// Download is the largest download accepted.
	Download string `yaml:"download"`
	// Stall is how long a transfer may move no byte.
	Stall string `yaml:"stall"`
	// DownloadTimeout is how long one download may take, its retries
	// included.
	DownloadTimeout string `yaml:"download-timeout"`
	// Extract bounds the bytes an archive decompresses to.
	Extract string `yaml:"extract"`
	// Entries bounds the entries read from one archive.
	Entries int `yaml:"entries"`
	// Window bounds the decoder history (xz dictionary, zstd window) an
	// archive may claim.
	Window string `yaml:"window"`
}

// Artifact is a named input that produces a file tree. It is either one
// kind (local, url, go or gomod), or several modes, each a way of
// obtaining the same thing, chosen at build time.
type Artifact struct {
	Local *Local    `yaml:"local"`
	URL   *URL      `yaml:"url"`
	Go    *GoBuild  `yaml:"go"`
	Gomod *GoModule `yaml:"gomod"`

	// Modes are the ways to obtain the artifact; Default names the one
	// used unless --mode says otherwise.
	Modes   *Modes `yaml:"modes"`
	Default string `yaml:"default"`
	// Version is what the artifact is, recorded in the build record and
	// usable as {{version}} in the artifact's own fields.
	Version string `yaml:"version"`
	// Licenses names the licence files (paths relative to the artifact's
	// root) to place under /LICENSES/<artifact>/; by default files named
	// LICENSE*, LICENCE*, COPYING* and NOTICE* are found. "none" declares
	// that the artifact has no licence to ship (the project's own files).
	Licenses List `yaml:"licenses"`
	// Check turns the platform check of placed executables on or off
	// (default on).
	Check *bool `yaml:"check"`
}

// Modes are the ways to obtain one artifact. Only the chosen one does any work.
type Modes struct {
	Source  *Source `yaml:"source"`
	Release *URL    `yaml:"release"`
	Local   *Local  `yaml:"local"`
}

// Source builds an artifact from source: a git repository pinned by
// commit (git and go), or a Go module pinned by its go.sum hash (gomod);
// or takes files of a pinned commit as they are (git with a path).
type Source struct {
	Git   Git       `yaml:"git"`
	Go    GoBuild   `yaml:"go"`
	Gomod *GoModule `yaml:"gomod"`
}

// Git names a repository and the commit to check out.
type Git struct {
	Repo string `yaml:"repo"`
	// Commit is the full hash; the checkout is verified against it.
	Commit string `yaml:"commit"`
	// Tag, when given, must point at Commit.
	Tag string `yaml:"tag"`
	// Path takes this file or directory of the checkout, relative to the
	// repository's root, instead of building it: scripts and
	// configuration that upstream keeps beside its code.
	Path string `yaml:"path"`
}

// ModeNames lists the modes an artifact declares, in a fixed order.
func (a *Artifact) ModeNames() []string {
	if a.Modes == nil {
		return nil
	}
	var out []string
	if a.Modes.Source != nil {
		out = append(out, "source")
	}
	if a.Modes.Release != nil {
		out = append(out, "release")
	}
	if a.Modes.Local != nil {
		out = append(out, "local")
	}
	return out
}

// gitSource is the git section of the artifact's source mode, or nil.
// gomodSource is the artifact's gomod section, as its kind or its source
// mode, or nil.
func (a *Artifact) gomodSource() *GoModule {
	if a.Gomod != nil {
		return a.Gomod
	}
	if a.Modes != nil && a.Modes.Source != nil {
		return a.Modes.Source.Gomod
	}
	return nil
}

func (a *Artifact) gitSource() *Git {
	if a.Modes == nil || a.Modes.Source == nil || a.Modes.Source.Gomod != nil {
		return nil
	}
	return &a.Modes.Source.Git
}

// NoLicense reports whether the recipe declares the artifact licence-free.
func (a *Artifact) NoLicense() bool {
	return len(a.Licenses) == 1 && a.Licenses[0] == "none"
}

// Local takes a file, a directory, or an archive from disk. As a mode, the
// path is usually given at build time (--mode NAME=local:PATH).
type Local struct {
	Path    string   `yaml:"path"`
	Extract *Extract `yaml:"extract"`
	// Links: "keep" keeps a directory's absolute or escaping symlinks,
	// which are refused by default.
	Links string `yaml:"links"`
	// Filename names a file (not extracted) in the tree, as a download's
	// does: a path given at build time (local:./runc.{{arch}}) is placed
	// under the name the other modes give it.
	Filename string `yaml:"filename"`
}

// URL downloads a file over http(s), pinned by sha256.
type URL struct {
	URL string `yaml:"url"`
	// SHA256 is one digest, or one per platform ("linux/amd64": hex).
	SHA256 Digests `yaml:"sha256"`
	// Checksums is upstream's checksum file for the download, templated
	// like URL: a SHA256SUMS list ("HEX  NAME" lines) or a file holding
	// the one hash. pallet lock checks the download against it before
	// pinning; a build trusts the pin alone.
	Checksums string `yaml:"checksums"`
	// Filename names the downloaded file in the tree when it is not
	// extracted; the last element of the URL path by default.
	Filename string   `yaml:"filename"`
	Extract  *Extract `yaml:"extract"`
}

// Extract says an archive is to be unpacked, and what to take from it.
type Extract struct {
	Strip   int      `yaml:"strip"`
	Include []string `yaml:"include"`
	// Links: "keep" keeps a tar archive's absolute symlinks, as links
	// from the image's root (a root file system's /etc/localtime), where
	// they are refused by default ("refuse"); one that climbs out of the
	// archive is refused either way.
	Links string `yaml:"links"`
}

// GoBuild builds Go packages from a module on disk with the host toolchain.
type GoBuild struct {
	// Module is the module directory, relative to the recipe.
	Module   string `yaml:"module"`
	Packages List   `yaml:"packages"`
	Ldflags  List   `yaml:"ldflags"`
	Tags     List   `yaml:"tags"`
	// CGO enables cgo (CGO_ENABLED=1); off by default.
	CGO bool `yaml:"cgo"`
	// Trimpath defaults to true: without it paths of the build machine end
	// up in the binary and digests differ between machines.
	Trimpath *bool `yaml:"trimpath"`
	// Flags are extra arguments to go build.
	Flags List `yaml:"flags"`
	// Env is extra environment (K=V) for go build.
	Env List `yaml:"env"`
	// Version pins the Go toolchain ("1.23.4"), used through GOTOOLCHAIN,
	// so a Go security fix ships by rebuilding; the host's Go by default.
	Version string `yaml:"version"`
	// CC names the C compiler per platform for cgo builds
	// ("linux/arm64": aarch64-linux-gnu-gcc), to link against the base
	// distro's libraries.
	CC map[string]string `yaml:"cc"`
}

// Image is one image to build, for one or more platforms.
type Image struct {
	// Repository is the image name used in outputs (defaults to the key).
	Repository string   `yaml:"repository"`
	Tags       List     `yaml:"tags"`
	Base       Bases    `yaml:"base"`
	Platforms  List     `yaml:"platforms"`
	Files      []*Place `yaml:"files"`
	Config     Config   `yaml:"config"`
}

// Place puts an artifact's tree into an image.
type Place struct {
	Artifact string `yaml:"artifact"`
	Dest     string `yaml:"dest"`
	// Path places only this file, link or directory of the artifact,
	// relative to its root: a file so taken can be renamed by a dest
	// without trailing slash; a directory's contents go into dest.
	Path string `yaml:"path"`
	// Link, "dir" or "file", types on Windows the symlinks placed whose
	// target is not in the image's layers (in the base, say): Windows
	// must know whether a link is a directory link when it creates it.
	Link string `yaml:"link"`
	// Mode is an octal mode for every regular file placed ("0755").
	Mode string `yaml:"mode"`
	// Owner is "uid:gid" (numeric).
	Owner string `yaml:"owner"`
	// Layer groups placements into one layer; each placement gets its own
	// layer by default.
	Layer string `yaml:"layer"`
	// Platforms limits the placement to these platforms or OSes
	// ("windows", "linux/arm64"); all of the image's by default.
	Platforms List `yaml:"platforms"`
}

// AppliesTo reports whether the placement is made on platform p.
func (pl *Place) AppliesTo(p platform.Platform) bool {
	return p.SelectedBy(pl.Platforms)
}

// Config is the image configuration pallet sets on top of the base's.
type Config struct {
	Entrypoint   List              `yaml:"entrypoint"`
	Cmd          List              `yaml:"cmd"`
	Env          List              `yaml:"env"`
	Workdir      string            `yaml:"workdir"`
	User         string            `yaml:"user"`
	Labels       map[string]string `yaml:"labels"`
	ExposedPorts List              `yaml:"ports"`
	StopSignal   string            `yaml:"stopSignal"`
	// For holds settings for some of the image's platforms, by OS or
	// platform ("windows", "linux/arm64"): one index of Linux and Windows
	// images needs two entrypoints and two PATHs.
	For map[string]*Config `yaml:"for"`
}

// List is a YAML sequence of strings that also accepts a single string.
type List []string

// UnmarshalYAML accepts "x" as ["x"].
func (l *List) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = List{n.Value}
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

// Bases maps a platform ("windows/amd64"), an OS ("windows") or "" (every
// platform) to base references. Several bases for one platform build one
// image per base from the same layers: the "rebase per Windows version" case.
type Bases map[string][]string

// UnmarshalYAML accepts a reference, a list of references, or a map from
// platform or OS to either.
func (b *Bases) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*b = Bases{"": {n.Value}}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*b = Bases{"": l}
		return nil
	}
	var m map[string]List
	if err := n.Decode(&m); err != nil {
		return err
	}
	*b = Bases{}
	for k, v := range m {
		(*b)[k] = v
	}
	return nil
}

// For returns the bases for platform p: those given for the platform, else
// for its OS, else for all.
func (b Bases) For(p platform.Platform) []string {
	v, _ := platform.Pick(b, p)
	return v
}

// Digests is a sha256 for all platforms ("" key), or one per OS or platform.
type Digests map[string]string

// UnmarshalYAML accepts a string or a platform → digest map.
func (d *Digests) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*d = Digests{"": n.Value}
		return nil
	}
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	*d = m
	return nil
}

// For returns the digest pinned for platform p.
func (d Digests) For(p platform.Platform) (string, bool) {
	return platform.Pick(d, p)
}

// Error is a problem in a recipe, located by file and line: the plan's
// located error, which every front end reports the same way.
type Error = plan.Error

// Pos is the position of the value at path (keys joined with "."), or of
// its nearest enclosing value that has one.
func (r *Recipe) Pos(path string) plan.Pos {
	for p := path; p != ""; {
		if l, ok := r.lines[p]; ok {
			return plan.Pos{File: r.File, Line: l, Col: r.cols[p]}
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return plan.Pos{File: r.File}
}

// Errorf returns an *Error at the position of the value at path.
func (r *Recipe) Errorf(path, format string, args ...any) error {
	return plan.Errorf(r.Pos(path), format, args...)
}

// Line returns the line of the value at path, or of its nearest ancestor.
func (r *Recipe) Line(path string) int {
	for p := path; p != ""; {
		if l, ok := r.lines[p]; ok {
			return l
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// MaxSize is the largest recipe Load and Parse accept, in bytes. A recipe
// is a few kilobytes; one of 10,000 placements and as many artifacts is
// under 2 MiB. yaml.v3 holds a node of about 150 bytes for every value, so
// a dense 4 MiB document already takes a few hundred MiB and seconds; the
// cap also keeps a wrong path (a disk image, a log) from being read in.
const MaxSize = 4 << 20

// Load reads and checks the recipe at file.
func Load(file string) (*Recipe, error) {
	data, err := ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// ParseUnpinned is Parse for pallet lock: a download without a sha256
// (or without one for a platform it serves), and a git source with a tag
// but no commit, are accepted, as those are the pins lock resolves. A
// pin that is written must still be well formed.
func ParseUnpinned(file string, data []byte) (*Recipe, error) {
	return parseRecipe(file, data, true)
}

// ReadFile reads a recipe's bytes, refusing a file over MaxSize.
func ReadFile(file string) ([]byte, error) {
	f, err := bounded.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxSize {
		return nil, tooLarge(file)
	}
	// The limit, not the Stat, is what holds: file may be a pipe or grow.
	data, err := bounded.ReadAll(f, MaxSize)
	var tl *bounded.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, tooLarge(file)
	case err == nil && len(data) == 0:
		err = bounded.Unwritten(f)
	}
	if err != nil {
		return nil, fmt.Errorf("reading recipe %s: %w", file, err)
	}
	return data, nil
}

func tooLarge(file string) error {
	return &Error{Pos: plan.Pos{File: file}, Msg: fmt.Sprintf("recipe is larger than %d MiB (recipe.MaxSize); is this the right file?", MaxSize>>20)}
}

// Parse reads and checks a recipe held in data; file is used in errors and
// to resolve relative paths.
func Parse(file string, data []byte) (*Recipe, error) {
	return parseRecipe(file, data, false)
}

func parseRecipe(file string, data []byte, unpinned bool) (*Recipe, error) {
	if len(data) > MaxSize {
		return nil, tooLarge(file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	r := &Recipe{File: file, Dir: filepath.Dir(abs), lines: map[string]int{}, cols: map[string]int{}, unpinned: unpinned}

	var root yaml.Node
	if err := decode(yaml.NewDecoder(bytes.NewReader(data)), &root); err != nil && err != io.EOF {
		if looksLikeDockerfile(data) {
			return nil, notARecipe(file)
		}
		return nil, withTemplateHint(data, SyntaxError(file, data, err))
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &Error{Pos: plan.Pos{File: file}, Msg: "empty recipe"}
	}
	if root.Content[0].Kind != yaml.MappingNode && looksLikeDockerfile(data) {
		return nil, notARecipe(file)
	}
	// Before the decode into r, which is where the cost lies.
	if err := checkKeys(file, root.Content[0]); err != nil {
		return nil, err
	}
	if err := checkEpochValue(file, root.Content[0]); err != nil {
		return nil, err
	}
	indexLines(root.Content[0], "", r.lines, r.cols)

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := decode(dec, r); err != nil {
		e := yamlError(file, err)
		if e.Line == 0 && strings.Contains(e.Msg, "excessive aliasing") {
			// yaml.v3 says this of the whole document; point at the
			// anchor its aliases repeat most.
			if a, uses := mostAliased(root.Content[0]); a != nil {
				e.Line = a.Line
				e.Msg += fmt.Sprintf(": the aliases of &%s, %d of them, each repeat what it holds; write the values out, or alias less", a.Anchor, uses)
			}
		}
		return nil, withTemplateHint(data, e)
	}
	// A second document would be ignored silently by a plain decode; a
	// recipe is one document.
	var extra yaml.Node
	if err := decode(dec, &extra); err != io.EOF {
		return nil, &Error{Pos: plan.Pos{File: file, Line: extra.Line}, Msg: "a recipe is one YAML document; found another after ---"}
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// syntaxLine finds the line where data stops being YAML. yaml.v3 reports
// the line where the enclosing block starts, which for a mis-indented key
// can be far above the mistake. The answer is the line after the longest
// prefix of whole lines that still parses: a prefix that cuts a quoted
// string in two fails too, but a longer one parses again, so only a real
// mistake stops every longer prefix from parsing.
//
// Trying every prefix is quadratic (a minute for a 165 KB recipe). The
// parser reads its input as it goes and stops at the mistake, so feeding
// it one line per read tells how far it got: no prefix reaching that line
// parses, and the search only walks back from there to the first prefix
// that does, which is a line or two for a real mistake. A mistake inside
// a long flow collection or quoted string has no such prefix near it;
// the walk gives up within a budget and yaml.v3's own line (the start of
// that collection) stands.
func syntaxLine(data []byte) int {
	ends := lineEnds(data)
	lr := &lineReader{data: data}
	if err := decode(yaml.NewDecoder(lr), new(yaml.Node)); err == nil || err == io.EOF {
		return 0
	}
	budget := syntaxBudget(len(data))
	for n := lr.lines - 1; n >= 0 && budget > 0; n-- {
		prefix := data[:ends[n]]
		budget -= len(prefix) + 1
		err := decode(yaml.NewDecoder(bytes.NewReader(prefix)), new(yaml.Node))
		if err == nil || err == io.EOF {
			return n + 1
		}
	}
	return 0
}

// syntaxBudget is how many bytes syntaxLine may parse while walking back:
// dozens of prefixes of a small recipe, where the quadratic search tried
// them all, and two whole parses of a large one. Walking back takes one to
// three prefixes for all but a few mistakes.
func syntaxBudget(size int) int { return 256<<10 + 2*size }

// lineEnds returns the offset after each line of data, lines ending in
// '\n': ends[n] is where the first n lines end, ends[0] is 0.
func lineEnds(data []byte) []int {
	ends := []int{0}
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	return append(ends, len(data))
}

// lineReader hands out data one line per Read and counts the lines it has
// started, so that a parser reading it shows how far into data it got.
type lineReader struct {
	data  []byte
	off   int
	lines int
}

func (r *lineReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	rest := r.data[r.off:]
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i+1]
	}
	if r.off == 0 || r.data[r.off-1] == '\n' {
		r.lines++
	}
	n := copy(p, rest)
	r.off += n
	return n, nil
}

// decode runs dec.Decode, turning a panic inside the YAML library into an
// error: gopkg.in/yaml.v3 panics on a merge key ("<<") next to a list or
// map used as a key (go-yaml #895); the go.yaml.in fork reports it, and
// this guard keeps any such crash a recipe error.
func decode(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("yaml: malformed document: %v", p)
		}
	}()
	return dec.Decode(v)
}

// indexLines records the line of every mapping value and sequence item
// under the dotted path that names it ("images.hello.files.0.dest").
func indexLines(n *yaml.Node, path string, out, cols map[string]int) {
	if path != "" {
		out[path] = n.Line
		cols[path] = n.Column
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			indexLines(n.Content[i+1], join(k.Value), out, cols)
			// The key's own line is more useful for a mapping value that
			// starts on the next line.
			out[join(k.Value)] = k.Line
			cols[join(k.Value)] = k.Column
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			indexLines(c, join(strconv.Itoa(i)), out, cols)
		}
	}
}

// withTemplateHint adds to a YAML error the likely reason when the line
// it names holds a {{...}} outside quotes where YAML reads it as a
// mapping: at the start of a value (version: {{VERSION}}), or anywhere
// inside a flow collection (env: [V={{VERSION}}]). yaml.v3's own words
// ("cannot unmarshal !!map", "did not find expected ',' or ']'") do
// not point there.
func withTemplateHint(data []byte, e *Error) *Error {
	if h := templateHint(data, e.Line); h != "" {
		e.Msg += "; " + h
	}
	return e
}

// templateHint scans line n (1-based) of data for a {{ that YAML reads
// as the start of a mapping, and says how to quote it.
func templateHint(data []byte, n int) string {
	lines := bytes.Split(data, []byte("\n"))
	if n <= 0 || n > len(lines) {
		return ""
	}
	l := string(lines[n-1])
	depth := 0
	var quote byte
	atValue := true // where a scalar may start: the line's start, after ": ", "- ", "[", "{" or ","
	for i := 0; i < len(l); i++ {
		c := l[i]
		if quote != 0 {
			switch {
			case quote == '"' && c == '\\':
				i++
			case c == quote:
				quote = 0
			}
			continue
		}
		switch {
		case strings.HasPrefix(l[i:], "{{"):
			v := l[i:]
			if j := strings.Index(v, "}}"); j >= 0 {
				v = v[:j+2]
			}
			if depth > 0 {
				return fmt.Sprintf("YAML reads { inside [...] or {...} as a mapping: quote the item that holds %s", v)
			}
			if atValue {
				return fmt.Sprintf("quote a value that starts with {{ (%q): unquoted, YAML reads it as a mapping", v)
			}
			i++
		case c == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return ""
		case (c == '"' || c == '\'') && atValue:
			quote = c
		case c == '[' || c == '{':
			depth++
			atValue = true
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth > 0:
			atValue = true
		case c == ':' && (i+1 == len(l) || l[i+1] == ' '):
			atValue = true
		case c == '-' && atValue:
		case c == ' ' || c == '\t' || c == '\r':
		default:
			atValue = false
		}
	}
	return ""
}

var yamlLine = lazyre.New(`line (\d+): (.*)`)

// SyntaxError is a YAML syntax error of data, read from file (a recipe,
// or its neighbour such as a --modes file), in the recipe's FILE:LINE
// form: yamlError at the line syntaxLine finds, where yaml.v3 often
// names a later one or none.
func SyntaxError(file string, data []byte, err error) *Error {
	e := yamlError(file, err)
	if l := syntaxLine(data); l > 0 {
		e.Line = l
	}
	return e
}

// yamlError rewrites yaml.v3's messages into file:line form and drops Go
// type names, which mean nothing to a recipe author.
func yamlError(file string, err error) *Error {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var out []string
	line := 0
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		at := 0
		if sm := yamlLine().FindStringSubmatch(m); sm != nil {
			at, _ = strconv.Atoi(sm[1])
			if line == 0 {
				line = at
			}
			m = sm[2]
		}
		suggest := ""
		if sm := notFound().FindStringSubmatch(m); sm != nil {
			if name := didYouMean(sm[2], sm[1]); name != "" {
				suggest = "; did you mean " + name + "?"
			}
		}
		m = inType().ReplaceAllString(m, "")
		m = intoType().ReplaceAllString(m, "where a different type is expected")
		if h, ok := misplaced[m]; ok {
			m += "; " + h
		} else {
			m += suggest
		}
		// The error is at the first one's line; the others say theirs.
		if at != 0 && at != line {
			m = fmt.Sprintf("line %d: %s", at, m)
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return &Error{Pos: plan.Pos{File: file, Line: line}, Msg: strings.Join(out, "; ")}
}

// inType and intoType are the Go type names yaml.v3 puts in its
// messages, which mean nothing to a recipe's author.
var (
	inType   = lazyre.New(` in type [\w.*]+`)
	notFound = lazyre.New(`^field (\S+) not found in type ([\w.*]+)$`)
	intoType = lazyre.New(`into [\w.*\[\]]+`)
)

// misplaced are hints for fields that exist, but elsewhere than where
// they are often written.
var misplaced = map[string]string{
	"field git not found": "a git source is an artifact's source mode: write it as modes: {source: {git: {...}, go: {...}}} (with default: source)",
}

var (
	nameRE      = lazyre.New(`^[a-z0-9][a-z0-9._-]*$`)
	argRE       = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256RE    = lazyre.New(`^[0-9a-f]{64}$`)
	commitRE    = lazyre.New(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	goVersionRE = lazyre.New(`^1\.[0-9]+(\.[0-9]+|rc[0-9]+)?$`)
)

// check validates what the schema alone cannot: references, required
// fields, exclusive kinds, digests and platforms.
func (r *Recipe) check() error {
	if r.Epoch != nil && plan.CheckEpoch(*r.Epoch) != nil {
		return r.Errorf("epoch", "epoch must be Unix seconds from 0 to %d, the end of year 9999 (got %d)", plan.MaxEpoch, *r.Epoch)
	}
	if _, given := r.lines["version"]; !given {
		// Not "got 0": the field is missing, not wrong.
		return r.Errorf("version", "version must be 1, and is missing: a recipe starts with version: 1")
	}
	if r.Version != 1 {
		return r.Errorf("version", "version must be 1 (got %d)", r.Version)
	}
	if _, err := r.Limits.plan(); err != nil {
		return r.Errorf("limits", "%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Args)) {
		if !argRE().MatchString(k) {
			return r.Errorf("args."+k, "arg name %q: use letters, digits and _", k)
		}
		if builtinVars[k] {
			return r.Errorf("args."+k, "%s", reservedArg(k))
		}
		if strings.Contains(r.Args[k], "{{") {
			return r.Errorf("args."+k, "arg %s: an arg's value is taken as written, and {{...}} in it would not be replaced; give the whole value", k)
		}
	}
	if len(r.Images) == 0 {
		return r.Errorf("images", "no images declared")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Artifacts)) {
		if err := r.checkArtifact(name, r.Artifacts[name]); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Images)) {
		if err := r.checkImage(name, r.Images[name]); err != nil {
			return err
		}
	}
	return nil
}

func (r *Recipe) checkArtifact(name string, a *Artifact) error {
	at := "artifacts." + name
	if !nameRE().MatchString(name) {
		return r.Errorf(at, "artifact name %q: use lower-case letters, digits, '.', '_' and '-'", name)
	}
	if a == nil {
		return r.Errorf(at, "artifact %s: empty; give one of local, url, go, gomod", name)
	}
	n := 0
	for _, set := range []bool{a.Local != nil, a.URL != nil, a.Go != nil, a.Gomod != nil, a.Modes != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return r.Errorf(at, "artifact %s: give exactly one of local, url, go, gomod, modes", name)
	}
	if a.Modes == nil && a.Default != "" {
		return r.Errorf(at+".default", "artifact %s: default applies to modes", name)
	}
	switch {
	case a.Local != nil:
		if a.Local.Path == "" {
			return r.Errorf(at+".local", "artifact %s: local.path is required", name)
		}
		return r.checkExtract(at+".local.extract", a.Local.Extract)
	case a.URL != nil:
		return r.checkURL(name, at+".url", a.URL)
	case a.Go != nil:
		return r.checkGo(name, at+".go", a.Go)
	case a.Gomod != nil:
		return r.checkGoModule(name, at+".gomod", a.Gomod)
	}
	modes := a.ModeNames()
	if len(modes) == 0 {
		return r.Errorf(at+".modes", "artifact %s: declare at least one of source, release, local", name)
	}
	if a.Default == "" {
		return r.Errorf(at, "artifact %s: default is required (one of %s)", name, strings.Join(modes, ", "))
	}
	if !contains(modes, a.Default) {
		return r.Errorf(at+".default", "artifact %s: default mode %q is not declared (declared: %s)", name, a.Default, strings.Join(modes, ", "))
	}
	if s := a.Modes.Source; s != nil && s.Gomod != nil {
		if err := r.checkModuleSource(name, at+".modes.source", s); err != nil {
			return err
		}
	} else if s != nil {
		sat := at + ".modes.source"
		if s.Git.Repo == "" {
			return r.Errorf(sat+".git", "artifact %s: source.git.repo is required", name)
		}
		if !commitRE().MatchString(s.Git.Commit) && !(r.unpinned && s.Git.Commit == "" && s.Git.Tag != "") {
			msg := "source.git.commit must be a full commit hash (40 or 64 hex digits)"
			if s.Git.Tag != "" || s.Git.Commit != "" {
				msg += "; a tag or short hash alone is not a pin (pallet lock resolves a tag to its commit)"
			}
			return r.Errorf(sat+".git.commit", "artifact %s: %s (got %q)", name, msg, s.Git.Commit)
		}
		_, hasGo := r.lines[sat+".go"]
		switch {
		case s.Git.Path != "" && hasGo:
			return r.Errorf(sat+".git.path", "artifact %s: source mode: git.path takes files of the checkout as they are and go builds it; give one of them", name)
		case s.Git.Path != "":
			if !strings.Contains(s.Git.Path, "{{") {
				if _, err := artifact.CleanRepoPath(s.Git.Path); err != nil {
					return r.Errorf(sat+".git.path", "artifact %s: %v", name, err)
				}
			}
		case !hasGo:
			return r.Errorf(sat, "artifact %s: source mode: give go (to build the checkout) or git.path (to take files of it)", name)
		default:
			if err := r.checkGo(name, sat+".go", &s.Go); err != nil {
				return err
			}
		}
	}
	if u := a.Modes.Release; u != nil {
		if err := r.checkURL(name, at+".modes.release", u); err != nil {
			return err
		}
	}
	if l := a.Modes.Local; l != nil {
		return r.checkExtract(at+".modes.local.extract", l.Extract)
	}
	return nil
}

func (r *Recipe) checkURL(name, at string, u *URL) error {
	if !strings.HasPrefix(u.URL, "{{") {
		if err := CheckURL(u.URL); err != nil {
			return r.Errorf(at+".url", "artifact %s: %v", name, err)
		}
	}
	if len(u.SHA256) == 0 && !r.unpinned {
		return r.Errorf(at, "artifact %s: sha256 is required: a download is pinned by its digest (pallet lock writes it)", name)
	}
	if u.Checksums != "" && !strings.HasPrefix(u.Checksums, "{{") {
		if err := CheckURL(u.Checksums); err != nil {
			return r.Errorf(at+".checksums", "artifact %s: checksums: %v", name, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(u.SHA256)) {
		d := u.SHA256[p]
		where := at + ".sha256"
		if p != "" {
			where += "." + p
			if err := platform.ParseSelector(p); err != nil {
				return r.Errorf(where, "artifact %s: %v", name, err)
			}
		}
		if d == "" && r.unpinned {
			continue // lock fills it in
		}
		if !sha256RE().MatchString(d) {
			return r.Errorf(where, "artifact %s: sha256 must be 64 lower-case hex digits (got %q)", name, d)
		}
	}
	return r.checkExtract(at+".extract", u.Extract)
}

func (r *Recipe) checkGo(name, at string, g *GoBuild) error {
	if len(g.Packages) == 0 {
		return r.Errorf(at, "artifact %s: go.packages is required", name)
	}
	for i, e := range g.Env {
		if !strings.Contains(e, "=") {
			return r.Errorf(fmt.Sprintf("%s.env.%d", at, i), "artifact %s: env entry %q is not K=V", name, e)
		}
	}
	if g.Version != "" && !strings.Contains(g.Version, "{{") {
		if err := CheckGoVersion(g.Version); err != nil {
			return r.Errorf(at+".version", "artifact %s: %v", name, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(g.CC)) {
		if err := platform.ParseSelector(p); err != nil {
			return r.Errorf(at+".cc."+p, "artifact %s: %v", name, err)
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (r *Recipe) checkExtract(at string, e *Extract) error {
	if e == nil {
		return nil
	}
	if e.Strip < 0 {
		return r.Errorf(at+".strip", "strip must not be negative")
	}
	for i, p := range e.Include {
		// As extraction cleans it, and said with what to do, at the
		// pattern's line, before anything is planned or fetched.
		if path.Clean(p) == "." {
			return r.Errorf(fmt.Sprintf("%s.include.%d", at, i), "include pattern %q is empty: name what to take from the archive, or leave include out to take all of it", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return r.Errorf(fmt.Sprintf("%s.include.%d", at, i), "include pattern %q: %v (patterns are Go's path.Match: *, ?, [...], \\ escapes)", p, err)
		}
	}
	return nil
}

func (r *Recipe) checkImage(name string, im *Image) error {
	at := "images." + name
	if !nameRE().MatchString(name) {
		return r.Errorf(at, "image name %q: use lower-case letters, digits, '.', '_' and '-'", name)
	}
	if im == nil {
		return r.Errorf(at, "image %s: empty", name)
	}
	if len(im.Base) == 0 {
		return r.Errorf(at, "image %s: base is required (scratch, windows-hostprocess-scratch, oci:PATH, or a registry reference)", name)
	}
	for _, k := range slices.Sorted(maps.Keys(im.Base)) {
		refs := im.Base[k]
		if err := platform.ParseSelector(k); err != nil {
			return r.Errorf(at+".base."+k, "image %s: base for %q: %v", name, k, err)
		}
		if len(refs) == 0 {
			return r.Errorf(at+".base", "image %s: empty base list", name)
		}
		for _, ref := range refs {
			if strings.TrimSpace(ref) == "" {
				return r.Errorf(at+".base", "image %s: empty base reference", name)
			}
		}
	}
	if len(im.Platforms) == 0 {
		return r.Errorf(at, "image %s: platforms is required", name)
	}
	seen := map[string]bool{}
	for i, p := range im.Platforms {
		if strings.Contains(p, "{{") {
			continue
		}
		pl, err := platform.Parse(p)
		if err != nil {
			return r.Errorf(fmt.Sprintf("%s.platforms.%d", at, i), "image %s: %v", name, err)
		}
		if seen[pl.String()] {
			return r.Errorf(fmt.Sprintf("%s.platforms.%d", at, i), "image %s: platform %s listed twice", name, pl)
		}
		if len(im.Base.For(pl)) == 0 {
			return r.Errorf(at+".base", "image %s: no base for platform %s", name, pl)
		}
		seen[pl.String()] = true
	}
	// Written twice, a tag is a slip (the second was meant to be another);
	// the same tag reached through variables ({{VERSION}} and latest, with
	// VERSION=latest) names the image once, as plan does.
	tagAt := map[string]int{}
	for i, t := range im.Tags {
		if j, ok := tagAt[t]; ok {
			return r.Errorf(fmt.Sprintf("%s.tags.%d", at, i), "image %s: tag %q listed twice (first at line %d)", name, t, r.Line(fmt.Sprintf("%s.tags.%d", at, j)))
		}
		tagAt[t] = i
	}
	if len(im.Files) > MaxPlacements {
		return r.Errorf(fmt.Sprintf("%s.files.%d", at, MaxPlacements), "image %s: %d placements; at most %d are allowed (recipe.MaxPlacements)", name, len(im.Files), MaxPlacements)
	}
	for i, f := range im.Files {
		fat := fmt.Sprintf("%s.files.%d", at, i)
		if f == nil || f.Artifact == "" {
			return r.Errorf(fat, "image %s: files[%d]: artifact is required", name, i)
		}
		if _, ok := r.Artifacts[f.Artifact]; !ok {
			return r.Errorf(fat+".artifact", "image %s: unknown artifact %q (declared: %s)", name, f.Artifact, namesOf(r.Artifacts))
		}
		if !strings.HasPrefix(f.Dest, "/") && !strings.HasPrefix(f.Dest, `\`) {
			if len(f.Dest) >= 2 && f.Dest[1] == ':' {
				// The Dockerfile front end reads C:\ as the root; a
				// recipe's dest names no drive, on any platform.
				return r.Errorf(fat+".dest", "image %s: dest %q names a drive: a dest is a path from the image's root, which is C:\\ on Windows: write %q", name, f.Dest, strings.ReplaceAll(f.Dest[2:], `\`, "/"))
			}
			return r.Errorf(fat+".dest", "image %s: dest must be an absolute path (got %q)", name, f.Dest)
		}
		for j, ps := range f.Platforms {
			if err := platform.ParseSelector(ps); err != nil {
				return r.Errorf(fmt.Sprintf("%s.platforms.%d", fat, j), "image %s: %v", name, err)
			}
			// As a config.for key: a misspelt or stale entry would
			// place the file on none of the image's platforms, silently.
			if !r.namesPlatformOf(ps, im) {
				return r.Errorf(fmt.Sprintf("%s.platforms.%d", fat, j), "image %s: files[%d] (%s): platforms entry %s names none of the image's platforms (%s)%s", name, i, f.Artifact, ps, strings.Join(im.Platforms, ", "), meantPlatformOf(ps, im))
			}
		}
		if f.Mode != "" {
			if _, err := ParseMode(f.Mode); err != nil {
				return r.Errorf(fat+".mode", "image %s: %v", name, err)
			}
		}
		if f.Owner != "" {
			if _, _, err := ParseOwner(f.Owner); err != nil {
				return r.Errorf(fat+".owner", "image %s: %v", name, err)
			}
		}
		if err := r.checkWindowsAccess(name, fat, im, f); err != nil {
			return err
		}
		if _, err := tree.ParseLinkKind(f.Link); err != nil {
			return r.Errorf(fat+".link", "image %s: %v", name, err)
		}
	}
	if err := r.checkLayerCount(name, im); err != nil {
		return err
	}
	if err := r.checkPins(name, im); err != nil {
		return err
	}
	return r.checkConfig(name, at, im)
}

// checkWindowsAccess refuses owner and mode on a placement made only on
// Windows platforms: Windows reads neither, a file's access there is the
// layer's security descriptor (Users may read and execute), so either
// would promise what the image does not do. Owner 0:0 is what pallet
// writes anyway. A placement that is made on Linux too keeps both, for
// Linux; the build warns of its Windows platforms.
func (r *Recipe) checkWindowsAccess(name, fat string, im *Image, f *Place) error {
	if f.Owner == "" && f.Mode == "" {
		return nil
	}
	var windows []string
	for _, ps := range im.Platforms {
		pl, err := platform.Parse(ps)
		if err != nil {
			return nil // templated: a Linux platform, perhaps
		}
		if !f.AppliesTo(pl) {
			continue
		}
		if !pl.IsWindows() {
			return nil
		}
		windows = append(windows, pl.String())
	}
	if len(windows) == 0 {
		return nil
	}
	const why = "Windows reads no owner or mode from a layer, access is the security descriptor pallet writes (Administrators and SYSTEM full control, Users read and execute)"
	if uid, gid, _ := ParseOwner(f.Owner); f.Owner != "" && uid|gid != 0 {
		return r.Errorf(fat+".owner", "image %s: owner %s on %s: %s; remove it", name, f.Owner, strings.Join(windows, ", "), why)
	}
	if f.Mode != "" {
		return r.Errorf(fat+".mode", "image %s: mode %s on %s: %s; remove it", name, f.Mode, strings.Join(windows, ", "), why)
	}
	return nil
}

// checkPins makes sure every download the image could use is pinned for
// every platform it is used on, whichever mode a build later chooses: a
// recipe is either pinned or not, independently of the command line.
func (r *Recipe) checkPins(name string, im *Image) error {
	if r.unpinned {
		return nil
	}
	for _, ps := range im.Platforms {
		pl, err := platform.Parse(ps)
		if err != nil {
			continue // templated; checked once expanded
		}
		for _, f := range im.Files {
			if !f.AppliesTo(pl) {
				continue
			}
			a := r.Artifacts[f.Artifact]
			u, at := a.URL, "artifacts."+f.Artifact+".url"
			if a.Modes != nil {
				u, at = a.Modes.Release, "artifacts."+f.Artifact+".modes.release"
			}
			if u == nil {
				continue
			}
			if _, ok := u.SHA256.For(pl); !ok {
				return r.Errorf(at+".sha256", "artifact %s: no sha256 pinned for %s, which image %s uses; every platform a download serves needs its digest (pallet lock writes it)", f.Artifact, pl, name)
			}
		}
	}
	return nil
}

// ParseMode reads an octal permission string such as "0755" or "0o644".
func ParseMode(s string) (os.FileMode, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O"), 8, 32)
	if err != nil || v > 0o7777 {
		return 0, fmt.Errorf("mode %q: want an octal mode such as 0755", s)
	}
	return tree.FromUnixMode(uint32(v)), nil
}

// MaxID is the largest uid or gid an owner may name; tree.MaxID says why.
const MaxID = tree.MaxID

// ParseOwner reads "uid:gid" or "uid" (gid = uid): decimal numbers from 0
// to MaxID, with no sign.
func ParseOwner(s string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		g = u
	}
	if uid, err = parseID(u); err == nil {
		gid, err = parseID(g)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("owner %q: %w", s, err)
	}
	return uid, gid, nil
}

// parseID reads one uid or gid as an int, the type tar headers and tree
// entries use (on a 32-bit host that caps it at 2^31-1).
func parseID(s string) (int, error) {
	const limit = min(MaxID, math.MaxInt)
	v, err := strconv.ParseUint(s, 10, 64)
	switch {
	case len(s) > 1 && s[0] == '-' && strings.Trim(s[1:], "0123456789") == "":
		return 0, fmt.Errorf("%s: ids are not negative", s)
	case err == nil && v == 1<<32-1:
		return 0, fmt.Errorf("%s is (uid_t)-1, which chown(2) takes as \"leave the owner unchanged\"; the largest id is %d", s, uint64(limit))
	case errors.Is(err, strconv.ErrRange) || err == nil && v > limit:
		return 0, fmt.Errorf("%s is out of range: ids are 32-bit and the largest is %d; a larger one would be cut to its low 32 bits (4294967296 becomes 0, root)", s, uint64(limit))
	case err != nil:
		return 0, fmt.Errorf("%q is not a decimal number; want numeric uid:gid such as 1000:1000", s)
	}
	return int(v), nil
}

// CheckGoVersion accepts a Go release GOTOOLCHAIN can select: 1.21.0 or
// later, such as 1.23.4 (or 1.24rc1), written without go.
func CheckGoVersion(v string) error {
	if rest, ok := strings.CutPrefix(v, "go"); ok && goVersionRE().MatchString(rest) {
		// One spelling in recipes: the pin is the release, and pallet
		// writes the go of GOTOOLCHAIN=go1.26.8 itself.
		if err := checkGoRelease(rest); err != nil {
			return fmt.Errorf("go version %q: write the release without go, and %v", v, err)
		}
		return fmt.Errorf("go version %q: write the release without go, %q: pallet sets GOTOOLCHAIN=%s from it", v, rest, v)
	}
	if !goVersionRE().MatchString(v) {
		return fmt.Errorf("go version %q: want a release such as 1.23.4", v)
	}
	if err := checkGoRelease(v); err != nil {
		return fmt.Errorf("go version %q: %v", v, err)
	}
	return nil
}

// checkGoRelease says why v, which goVersionRE matches, names no
// toolchain GOTOOLCHAIN can select.
func checkGoRelease(v string) error {
	gv := "go" + v
	switch lang := version.Lang(gv); {
	case !version.IsValid(gv):
		// The pattern (the schema's too) lets a leading zero through,
		// 1.021.0, which names no release.
		return fmt.Errorf("no Go release has a number with a leading zero; want a release such as 1.23.4")
	case version.Compare(lang, "go1.21") < 0:
		// The go command switches to a toolchain by downloading it as
		// the module golang.org/toolchain, which has none before
		// go1.21.0: the build would fail in go mod download.
		return fmt.Errorf("GOTOOLCHAIN selects only Go 1.21.0 and later, the releases the go command can download; want 1.21.0 or later")
	case lang == gv:
		// From 1.21 on a release is named with its patch (go1.21.0):
		// "1.26" is a language version, and no toolchain has that name.
		//lint:ignore ST1005 Go is a name, and the message follows a colon
		return fmt.Errorf("Go releases from 1.21 on are named with their patch; want %s.0 or a later %s.N", v, v)
	}
	return nil
}

// CheckURL accepts http and https URLs only; a URL that starts with a
// variable is checked again once expanded.
func CheckURL(u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("url must be http:// or https:// (got %q)", u)
	}
	return nil
}

func checkPort(p string) error {
	num, proto, ok := strings.Cut(p, "/")
	if !ok {
		proto = "tcp"
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > 65535 || (proto != "tcp" && proto != "udp" && proto != "sctp") {
		return fmt.Errorf("port %q: want N, N/tcp, N/udp or N/sctp", p)
	}
	return nil
}

// PlanLimits are the bounds the recipe's limits section sets, as a plan
// holds them: what pallet lock downloads within, as a build would.
func (r *Recipe) PlanLimits() (plan.Limits, error) {
	l, err := r.Limits.plan()
	if err != nil {
		return l, r.Errorf("limits", "%v", err)
	}
	return l, nil
}

// plan turns the recipe's limits into the plan's; nil gives the defaults.
func (l *Limits) plan() (plan.Limits, error) {
	var out plan.Limits
	if l == nil {
		return out, nil
	}
	var err error
	for _, f := range []struct {
		name string
		in   string
		out  *int64
	}{{"download", l.Download, &out.MaxDownload}, {"extract", l.Extract, &out.MaxExtract}, {"window", l.Window, &out.MaxWindow}} {
		if f.in == "" {
			continue
		}
		if *f.out, err = ParseSize(f.in); err != nil {
			return out, fmt.Errorf("limits.%s: %w", f.name, err)
		}
	}
	if l.Stall != "" {
		if out.Stall, err = time.ParseDuration(l.Stall); err != nil || out.Stall <= 0 {
			return out, fmt.Errorf("limits.stall %q: want a duration such as 90s", l.Stall)
		}
	}
	if l.DownloadTimeout != "" {
		if out.DownloadTimeout, err = time.ParseDuration(l.DownloadTimeout); err != nil || out.DownloadTimeout <= 0 {
			return out, fmt.Errorf("limits.download-timeout %q: want a duration such as 2h", l.DownloadTimeout)
		}
	}
	if l.Entries < 0 {
		return out, fmt.Errorf("limits.entries %d: want a positive number", l.Entries)
	}
	out.MaxEntries = l.Entries
	return out, nil
}

// ParseSize reads a byte count: "1048576", "512MiB", "16GiB" (KB, MB, GB
// are powers of ten).
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	num := strings.TrimSpace(s)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.n
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q: want a positive size such as 512MiB or 16GiB", s)
	}
	return v * mult, nil
}

// notARecipe is the error for a Dockerfile given under a name that is
// not a Dockerfile's.
func notARecipe(file string) error {
	return &Error{Pos: plan.Pos{File: file, Line: 1}, Msg: "this is a Dockerfile, not a recipe; pallet reads a -f file as a Dockerfile when it is named Dockerfile, NAME.Dockerfile or Dockerfile.NAME (or Containerfile alike)"}
}

// dockerfileStart is the first instruction of a Dockerfile: FROM, or
// ARG before it, after comments and parser directives.
var dockerfileStart = lazyre.New(`(?i)^(from|arg)\s`)

// looksLikeDockerfile says whether data starts as a Dockerfile does.
func looksLikeDockerfile(data []byte) bool {
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return dockerfileStart().MatchString(line)
	}
	return false
}

// mostAliased returns the anchored node under n that the most aliases
// name, and how many do; nil if none does.
func mostAliased(n *yaml.Node) (*yaml.Node, int) {
	uses := map[*yaml.Node]int{}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode {
			uses[n.Alias]++
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	var most *yaml.Node
	for a, u := range uses {
		if most == nil || u > uses[most] || u == uses[most] && a.Line < most.Line {
			most = a
		}
	}
	return most, uses[most]
}

// checkEpochValue says what epoch takes where its value is not a whole
// number: yaml.v3 says only that it cannot unmarshal a !!str or a
// !!timestamp (epoch: 2024-01-01), and truncates a fraction silently
// (epoch: 1.5 was 1).
func checkEpochValue(file string, doc *yaml.Node) error {
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Value != "epoch" {
			continue
		}
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v.Kind == yaml.ScalarNode {
			switch v.ShortTag() {
			case "!!null", "!!int":
				return nil
			case "!!float":
				if f, err := strconv.ParseFloat(v.Value, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<62 {
					return nil
				}
			}
		}
		msg := fmt.Sprintf("epoch: want Unix seconds, a whole number from 0 to %d, as SOURCE_DATE_EPOCH takes it (epoch: 1700000000)", plan.MaxEpoch)
		if v.Kind == yaml.ScalarNode {
			msg += fmt.Sprintf("; got %q", v.Value)
			if t, ok := epochTime(v.Value); ok {
				msg += fmt.Sprintf(", which is epoch: %d", t.Unix())
			}
		}
		return &Error{Pos: plan.Pos{File: file, Line: k.Line}, Msg: msg}
	}
	return nil
}

// epochTime reads a date or time as YAML's timestamps are written (and
// as date -u +%FT%TZ prints one), for the seconds to write instead.
func epochTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil && t.Unix() >= 0 {
			return t, true
		}
	}
	return time.Time{}, false
}
