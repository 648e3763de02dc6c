package lock

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// doc edits a YAML document in place, byte by byte, at the positions
// yaml.v3 reports for its nodes. Re-encoding the node tree would lose
// blank lines, reflow comments and requote strings; an edit here touches
// only the bytes of the values it sets and the lines it adds, so every
// other byte of the file stays as its author wrote it.
type doc struct {
	src  []byte
	root *yaml.Node
	// lines[n] is the offset where line n (1-based) starts, lines
	// broken where YAML breaks them (see lineBreak), so that the lines
	// of the parser's positions are the lines counted here.
	lines []int
	nl    string
	edits []edit
}

// edit replaces src[off:end] with text.
type edit struct {
	off, end int
	text     string
}

// entry is a mapping entry to write: a scalar value, or a block of
// entries under the key.
type entry struct {
	key, value string
	sub        []entry
}

func parseDoc(src []byte) (*doc, error) {
	d := &doc{src: src, root: new(yaml.Node), lines: []int{0, 0}, nl: "\n"}
	if err := yaml.Unmarshal(src, d.root); err != nil {
		return nil, err
	}
	if len(d.root.Content) == 0 {
		return nil, fmt.Errorf("empty document")
	}
	for i := 0; i < len(src); {
		n := lineBreak(src[i:])
		if n == 0 {
			i++
			continue
		}
		if len(d.lines) == 2 && (src[i] == '\r' || src[i] == '\n') {
			// Lines added end as the file's first does: CRLF, or CR
			// alone (old Mac files, which YAML reads).
			d.nl = string(src[i : i+n])
		}
		i += n
		d.lines = append(d.lines, i)
	}
	return d, nil
}

// lineBreak is the length of the line break src starts with, 0 if none.
// YAML breaks lines at CRLF, CR and LF, and also at NEL (U+0085), LS
// (U+2028) and PS (U+2029), which may sit in a quoted value: counted
// as plain characters, they put every later line of the parser one
// line past the one counted here.
func lineBreak(src []byte) int {
	switch {
	case bytes.HasPrefix(src, []byte("\r\n")):
		return 2
	case len(src) > 0 && (src[0] == '\r' || src[0] == '\n'):
		return 1
	case bytes.HasPrefix(src, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(src, []byte("\u2028")), bytes.HasPrefix(src, []byte("\u2029")):
		return 3
	}
	return 0
}

// offset turns a node's line and column (1-based; columns count
// characters, not bytes) into an offset in src.
func (d *doc) offset(line, col int) (int, error) {
	if line < 1 || line >= len(d.lines) {
		return 0, fmt.Errorf("line %d is outside the file", line)
	}
	off := d.lines[line]
	for i := 1; i < col; i++ {
		if off >= len(d.src) || lineBreak(d.src[off:]) > 0 {
			return 0, fmt.Errorf("column %d is outside line %d", col, line)
		}
		_, size := utf8.DecodeRune(d.src[off:])
		off += size
	}
	return off, nil
}

// located is a mapping value found by its keys, with what writing there
// needs to know.
type located struct {
	key, val *yaml.Node
	// flow says the value sits inside a flow collection ({...}, [...]),
	// where entries are separated by commas, not lines.
	flow bool
	// step is the indentation the file uses for one level.
	step int
}

// find follows keys from the document's root mapping. A key that is
// missing gives a nil key and val for the last key only: its parent
// mapping is returned as parent.
func (d *doc) find(keys []string) (loc, parent located, err error) {
	m := d.root.Content[0]
	parent = located{val: m, step: 2}
	for i, k := range keys {
		if m.Kind == yaml.AliasNode {
			return loc, parent, fmt.Errorf("%s is a YAML alias; pin it where its anchor is, by hand", strings.Join(keys[:i], "."))
		}
		if m.Kind != yaml.MappingNode {
			return loc, parent, fmt.Errorf("%s is not a mapping", strings.Join(keys[:i], "."))
		}
		var kn, vn *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == k {
				kn, vn = m.Content[j], m.Content[j+1]
			}
		}
		if kn == nil {
			if i == len(keys)-1 {
				return located{}, parent, nil
			}
			return loc, parent, fmt.Errorf("%s: no key %s", strings.Join(keys[:i], "."), k)
		}
		flow := parent.flow || m.Style&yaml.FlowStyle != 0
		step := parent.step
		if vn.Kind == yaml.MappingNode && len(vn.Content) > 0 && vn.Style&yaml.FlowStyle == 0 && vn.Content[0].Column > kn.Column {
			step = vn.Content[0].Column - kn.Column
		}
		loc = located{key: kn, val: vn, flow: flow, step: step}
		if i < len(keys)-1 {
			parent = loc
			parent.flow = flow || vn.Style&yaml.FlowStyle != 0
			m = vn
		}
	}
	if loc.val.Kind == yaml.AliasNode {
		return loc, parent, fmt.Errorf("%s is a YAML alias; pin it where its anchor is, by hand", strings.Join(keys, "."))
	}
	return loc, parent, nil
}

// empty says n is a value written as nothing ("key:" alone).
func empty(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

// span returns where scalar n's text starts and ends. Only the forms a
// pin is written in are read: plain and quoted scalars on one line.
func (d *doc) span(n *yaml.Node) (int, int, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, 0, fmt.Errorf("line %d: want a scalar", n.Line)
	}
	start, err := d.offset(n.Line, n.Column)
	if err != nil {
		return 0, 0, err
	}
	s := d.src[start:]
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0 && len(s) > 0 && s[0] == '"':
		for i := 1; i < len(s) && lineBreak(s[i:]) == 0; i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return start, start + i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0 && len(s) > 0 && s[0] == '\'':
		for i := 1; i < len(s) && lineBreak(s[i:]) == 0; i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return start, start + i + 1, nil
			}
		}
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0:
		// A plain scalar's text is its value, unless it runs over lines.
		if bytes.HasPrefix(s, []byte(n.Value)) {
			return start, start + len(n.Value), nil
		}
	}
	return 0, 0, fmt.Errorf("line %d: the value is not a one-line plain or quoted scalar; edit it by hand", n.Line)
}

// afterColon is the offset just past the ':' that follows key k.
func (d *doc) afterColon(k *yaml.Node) (int, error) {
	_, end, err := d.span(k)
	if err != nil {
		return 0, err
	}
	for i := end; i < len(d.src); i++ {
		switch d.src[i] {
		case ' ', '\t':
			continue
		case ':':
			return i + 1, nil
		}
		break
	}
	return 0, fmt.Errorf("line %d: no ':' after key %s", k.Line, k.Value)
}

// end is the offset just past node n's text: a scalar's last character,
// an alias's name, a block collection's last value, a flow collection's
// closing bracket.
func (d *doc) end(n *yaml.Node) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if empty(n) {
			return d.offset(n.Line, n.Column)
		}
		_, e, err := d.span(n)
		return e, err
	case yaml.AliasNode:
		// "<<: *base" last in a mapping a pin is added to: the pin goes
		// on the next line, its own key over the merged one.
		start, err := d.offset(n.Line, n.Column)
		if err != nil {
			return 0, err
		}
		if text := "*" + n.Value; bytes.HasPrefix(d.src[start:], []byte(text)) {
			return start + len(text), nil
		}
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle == 0 {
			if len(n.Content) == 0 {
				return 0, fmt.Errorf("line %d: empty block collection", n.Line)
			}
			return d.end(n.Content[len(n.Content)-1])
		}
		from, err := d.offset(n.Line, n.Column)
		if err != nil {
			return 0, err
		}
		from++ // past the opening bracket
		if len(n.Content) > 0 {
			if from, err = d.end(n.Content[len(n.Content)-1]); err != nil {
				return 0, err
			}
		}
		closing := byte('}')
		if n.Kind == yaml.SequenceNode {
			closing = ']'
		}
		if i := bytes.IndexByte(d.src[from:], closing); i >= 0 {
			return from + i + 1, nil
		}
	}
	return 0, fmt.Errorf("line %d: cannot tell where the value ends; edit it by hand", n.Line)
}

// quoted says key k is written in double quotes, as JSON writes keys.
func quoted(k *yaml.Node) bool { return k.Style&yaml.DoubleQuotedStyle != 0 }

// lineAfter is the offset where the line holding off ends (past its
// newline), and whether the file ends there without one.
func (d *doc) lineAfter(off int) (int, bool) {
	// The first line that starts past off.
	if i, _ := slices.BinarySearch(d.lines[1:], off+1); i+1 < len(d.lines) {
		return d.lines[i+1], false
	}
	return len(d.src), true
}

// untagged refuses the value of key k when it is written with a tag or
// an anchor (!!str, &pin): the parser places such a value at its
// property, so an empty one (sha256: !!str) would be written in front
// of it, and an anchored one is shared with its aliases.
func (d *doc) untagged(k *yaml.Node) error {
	at, err := d.afterColon(k)
	if err != nil {
		return err
	}
	return tagOrAnchor(k.Line, bytes.TrimLeft(d.src[at:], " \t"))
}

// tagOrAnchor refuses the value that s, on line, starts with when it
// starts with a tag or an anchor.
func tagOrAnchor(line int, s []byte) error {
	if len(s) == 0 || (s[0] != '!' && s[0] != '&') {
		return nil
	}
	if i := bytes.IndexAny(s, " \t\r\n,}]"); i >= 0 {
		s = s[:i]
	}
	return fmt.Errorf("line %d: the value has a YAML tag or anchor (%s); edit it by hand", line, s)
}

// setScalar writes text as the value of loc, in the value's own quoting.
func (d *doc) setScalar(loc located, text string) error {
	if err := d.untagged(loc.key); err != nil {
		return err
	}
	if empty(loc.val) {
		at, err := d.afterColon(loc.key)
		if err != nil {
			return err
		}
		d.edits = append(d.edits, edit{at, at, " " + text})
		return nil
	}
	start, end, err := d.span(loc.val)
	if err != nil {
		return err
	}
	switch {
	case loc.val.Style == yaml.DoubleQuotedStyle, loc.val.Style == 0 && loc.flow && quoted(loc.key):
		// A JSON null ("commit": null) becomes a JSON string.
		text = `"` + text + `"`
	case loc.val.Style == yaml.SingleQuotedStyle:
		text = "'" + text + "'"
	}
	d.edits = append(d.edits, edit{start, end, text})
	return nil
}

// setMap replaces the scalar (or empty) value of loc with a mapping of
// entries: a block under the key, or {...} in a flow collection. What
// followed the scalar on its line (a comment) stays on the last line.
func (d *doc) setMap(loc located, entries []entry) error {
	if err := d.untagged(loc.key); err != nil {
		return err
	}
	colon, err := d.afterColon(loc.key)
	if err != nil {
		return err
	}
	end := colon
	if !empty(loc.val) {
		if _, end, err = d.span(loc.val); err != nil {
			return err
		}
	}
	if loc.flow {
		d.edits = append(d.edits, edit{colon, end, " " + flowMap(entries, quoted(loc.key))})
		return nil
	}
	indent := loc.key.Column - 1 + loc.step
	d.edits = append(d.edits, edit{colon, end, d.nl + strings.TrimSuffix(d.block(entries, indent, loc.step), d.nl)})
	return nil
}

// add writes entries into mapping m: after the entry whose key is after
// (its line, in a block mapping), or after the last entry when after is
// "" or not there.
func (d *doc) add(m located, after string, entries []entry) error {
	mn := m.val
	if mn.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: not a mapping", mn.Line)
	}
	anchor := len(mn.Content) - 1
	for j := 0; j+1 < len(mn.Content); j += 2 {
		if mn.Content[j].Value == after {
			anchor = j + 1
		}
	}
	if mn.Style&yaml.FlowStyle != 0 || m.flow {
		// The mapping's own keys say how to write new ones: "key": "value"
		// where they are JSON's, so that a recipe kept as JSON stays JSON.
		q := len(mn.Content) > 0 && quoted(mn.Content[0])
		if len(mn.Content) == 0 {
			open, err := d.offset(mn.Line, mn.Column)
			if err != nil {
				return err
			}
			// The parser places a mapping written with a tag or an
			// anchor (!!map {}, &pins {}) at that, not at its '{':
			// the entries went inside the tag.
			if err := tagOrAnchor(mn.Line, d.src[open:]); err != nil {
				return err
			}
			if open >= len(d.src) || d.src[open] != '{' {
				return fmt.Errorf("line %d: cannot tell where the mapping starts; edit it by hand", mn.Line)
			}
			d.edits = append(d.edits, edit{open + 1, open + 1, strings.TrimSuffix(strings.TrimPrefix(flowMap(entries, q), "{"), "}")})
			return nil
		}
		at, err := d.end(mn.Content[anchor])
		if err != nil {
			return err
		}
		d.edits = append(d.edits, edit{at, at, ", " + strings.TrimSuffix(strings.TrimPrefix(flowMap(entries, q), "{"), "}")})
		return nil
	}
	if len(mn.Content) == 0 {
		return fmt.Errorf("line %d: empty mapping", mn.Line)
	}
	last, err := d.end(mn.Content[anchor])
	if err != nil {
		return err
	}
	at, noNewline := d.lineAfter(last)
	text := d.block(entries, mn.Content[0].Column-1, m.step)
	if noNewline {
		text = d.nl + strings.TrimSuffix(text, d.nl)
	}
	d.edits = append(d.edits, edit{at, at, text})
	return nil
}

// block renders entries as block-mapping lines at indent, each ending
// with a newline.
func (d *doc) block(entries []entry, indent, step int) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(strings.Repeat(" ", indent) + e.key + ":")
		if e.sub == nil {
			b.WriteString(" " + e.value + d.nl)
			continue
		}
		b.WriteString(d.nl + d.block(e.sub, indent+step, step))
	}
	return b.String()
}

// flowMap renders entries as a flow mapping, keys and scalar values in
// double quotes when quote is set (a JSON document's style). What lock
// writes (platforms, key names, hex digests, h1: sums) needs no escape.
func flowMap(entries []entry, quote bool) string {
	q := func(s string) string {
		if quote {
			return `"` + s + `"`
		}
		return s
	}
	var parts []string
	for _, e := range entries {
		v := q(e.value)
		if e.sub != nil {
			v = flowMap(e.sub, quote)
		}
		parts = append(parts, q(e.key)+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// apply returns src with the edits made. Edits at one offset keep the
// order they were made in.
func (d *doc) apply() ([]byte, error) {
	es := slices.Clone(d.edits)
	slices.SortStableFunc(es, func(a, b edit) int { return a.off - b.off })
	var out bytes.Buffer
	pos := 0
	for _, e := range es {
		if e.off < pos {
			return nil, fmt.Errorf("two edits overlap at offset %d", e.off)
		}
		out.Write(d.src[pos:e.off])
		out.WriteString(e.text)
		pos = e.end
	}
	out.Write(d.src[pos:])
	return out.Bytes(), nil
}
