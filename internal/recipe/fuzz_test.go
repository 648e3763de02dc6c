package recipe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// fuzzFile is the name every fuzzed recipe is parsed under; errors must
// carry it so that the user knows which file is wrong.
const fuzzFile = "fuzz/pallet.yaml"

// hostileInput is an input that has hurt YAML parsers: resource
// exhaustion, encodings, the corners of the YAML grammar.
type hostileInput struct {
	name, data string
	// want is a phrase of the error Parse must return; "" when the input
	// is a valid recipe.
	want string
}

func hostile() []hostileInput {
	// Billion laughs: ten levels of ten aliases each expand to 10^9
	// strings if a decoder follows them.
	var laughs strings.Builder
	laughs.WriteString("version: 1\nx-lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "x-lol%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	bomb := laughs.String()

	// The same with merge keys into a map[string]string, which the
	// decoder does expand, unlike aliased lists where strings are wanted.
	var merge strings.Builder
	merge.WriteString("version: 1\nx-m0: &m0 {a: b, c: d, e: f, g: h, i: j, k: l, m: n, o: p, q: r, s: t}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&merge, "x-m%d: &m%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*m%d, ", i-1), 10), ", "))
	}
	mergeBomb := merge.String()

	const image = "images:\n  a:\n    base: scratch\n    platforms: linux/amd64\n"
	return []hostileInput{
		{"empty", "", "empty recipe"},
		{"document marker", "---\n", "version must be 1"},
		{"null", "~", "version must be 1"},
		{"scalar", "pallet", "cannot unmarshal"},
		{"list", "- version: 1", "cannot unmarshal"},
		{"version only", "version: 1\n", "no images declared"},
		{"minimal", "version: 1\n" + image, ""},
		// Only the first document is read; the rest is ignored, even when
		// it does not parse.
		{"multi document", "version: 1\n" + image + "---\nversion: 2\nx: [\n", "one YAML document"},
		{"two documents", "version: 1\n" + image + "---\nversion: 2\n", "one YAML document"},
		{"merge key with list key", "version: 1\nimages: {<<: {}, [a]: c}\n", "unhashable"},
		{"laughs in tags", bomb + image + "    tags: *l9\n", "field x-lol0 not found"},
		{"laughs in args", bomb + "args: *l9\n" + image, "field x-lol0 not found"},
		{"laughs in base", bomb + "images:\n  a:\n    base: {linux: *l9}\n    platforms: linux/amd64\n", "field x-lol0 not found"},
		{"merge laughs in labels", mergeBomb + image + "    config:\n      labels: {<<: *m9}\n", "excessive aliasing"},
		{"merge laughs in args", mergeBomb + "args:\n  <<: *m9\n" + image, "excessive aliasing"},
		{"self alias", "version: 1\nx: &a [*a]\n", "not found"},
		{"undefined alias", "version: 1\nimages: *nope\n", "unknown anchor"},
		{"flow nesting limit", "version: 1\nimages: " + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "\n", "exceeded max depth"},
		{"flow nesting", "version: 1\nimages: " + strings.Repeat("{a: ", 5000) + "x" + strings.Repeat("}", 5000) + "\n", "not found"},
		{"block nesting limit", "version: 1\nimages:\n" + strings.Repeat("- ", 10001) + "x\n", "exceeded max depth"},
		{"block nesting", "version: 1\nargs:\n" + strings.Repeat("- ", 3000) + "x\n", "cannot unmarshal"},
		{"huge version", "version: 99999999999999999999999999999999\n" + image, "cannot unmarshal"},
		{"huge epoch", "version: 1\nepoch: 1e400\n" + image, "epoch: want Unix seconds, a whole number"},
		{"hex strip", "version: 1\nartifacts:\n  x:\n    local:\n      path: .\n      extract: {strip: 0xffffffffffffffffffff}\n" + image, "cannot unmarshal"},
		// yaml.v3 truncates floats into integers: this is accepted. An
		// epoch is held to whole seconds first.
		{"float version", "version: 1.9\n" + image, ""},
		{"epoch underflow", "version: 1\nepoch: -9223372036854775809\n" + image, "epoch: want Unix seconds, a whole number from 0"},
		{"tab indent", "version: 1\nimages:\n\ta:\n\t\tbase: scratch\n", "cannot start any token"},
		{"tab separator", "version:\t1\n" + image, ""},
		{"not utf-8 key", "version: 1\nimages:\n  a\xff\xfe: {}\n", "UTF-8"},
		{"not utf-8 value", "version: 1\n" + image + "    tags: [\xc3\x28]\n", "UTF-8"},
		{"utf-16", "\xff\xfev\x00e\x00r\x00:\x00 \x001\x00\n\x00", "field ver not found"},
		{"utf-8 bom", "\xef\xbb\xbfversion: 1\n" + image, ""},
		{"nul", "version: 1\x00\n" + image, "control characters"},
		{"cr line breaks", strings.ReplaceAll("version: 1\n"+image+"    bad: x\n", "\n", "\r"), "fuzz/pallet.yaml:6: field bad not found"},
		{"nel line breaks", strings.ReplaceAll("version: 1\n"+image+"    bad: x\n", "\n", "\u0085"), "fuzz/pallet.yaml:6: field bad not found"},
		{"duplicate key", "version: 1\nversion: 1\n" + image, "already defined"},
		{"duplicate image", "version: 1\n" + image + "  a:\n    base: scratch\n", "already defined"},
		{"duplicate arg", "version: 1\nargs: {A: x, A: y}\n" + image, "already defined"},
		{"merge at top", "x: &x {version: 1}\n<<: *x\n" + image, "field x not found"},
		{"tagged", "version: !!str 1\n" + image, "cannot unmarshal"},
		{"binary", "version: 1\nargs: {A: !!binary aGVsbG8=}\n" + image, ""},
		{"long key", "version: 1\n" + strings.Repeat("k", 70000) + ": x\n", "could not find expected ':'"},
		{"complex key", "version: 1\n? [a, b]\n: c\n" + image, "cannot unmarshal"},
		{"null artifact", "version: 1\nartifacts: {a: ~}\n" + image, "artifact a: empty"},
		{"null image", "version: 1\nimages: {a: ~}\n", "image a: empty"},
		{"null file", "version: 1\n" + image + "    files: [~]\n", "artifact is required"},
	}
}

// TestParseHostile pins down what the fuzz seeds do: each ends quickly,
// bombs and deep nesting included, with the expected outcome.
func TestParseHostile(t *testing.T) {
	for _, h := range hostile() {
		t.Run(h.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse(fuzzFile, []byte(h.data))
			// Generous: a followed alias bomb takes minutes, not seconds.
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			switch {
			case h.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case h.want != "" && err == nil:
				t.Errorf("parsed, want an error mentioning %q", h.want)
			case h.want != "" && !strings.Contains(err.Error(), h.want):
				t.Errorf("error %q does not mention %q", err, h.want)
			}
			if err != nil {
				checkParseError(t, []byte(h.data), err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	examples, err := filepath.Glob("../../examples/*/pallet.yaml")
	if err != nil || len(examples) == 0 {
		f.Fatalf("no example recipes to seed from (%v)", err)
	}
	for _, file := range examples {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := Parse(file, data); err != nil {
			f.Fatalf("example does not parse: %v", err)
		}
		f.Add(data)
	}
	f.Add([]byte(good))
	for _, h := range hostile() {
		f.Add([]byte(h.data))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(fuzzFile, data)
		if err != nil {
			checkParseError(t, data, err)
			if _, err2 := Parse(fuzzFile, data); err2 == nil {
				t.Fatalf("parsed on the second try after failing with %v", err)
			}
			return
		}
		if r.File != fuzzFile {
			t.Errorf("File = %q, want %q", r.File, fuzzFile)
		}
		// check reports errors at these lines, so they must exist.
		max := lineCount(data)
		for path, l := range r.lines {
			if l < 1 || l > max {
				t.Errorf("line of %s = %d, input has %d lines", path, l, max)
			}
		}
		r2, err := Parse(fuzzFile, data)
		if err != nil {
			t.Fatalf("failed on the second try after parsing: %v", err)
		}
		for _, c := range []struct {
			name string
			a, b any
		}{
			{"Version", r.Version, r2.Version},
			{"Args", r.Args, r2.Args},
			{"Epoch", r.Epoch, r2.Epoch},
			{"Artifacts", r.Artifacts, r2.Artifacts},
			{"Images", r.Images, r2.Images},
			{"lines", r.lines, r2.lines},
		} {
			if !reflect.DeepEqual(c.a, c.b) {
				t.Errorf("%s differs between two parses of the same input:\n%#v\n%#v", c.name, c.a, c.b)
			}
		}
	})
}

func checkParseError(t *testing.T, data []byte, err error) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v is a %T, not a *recipe.Error", err, err)
	}
	if re.File != fuzzFile || !strings.Contains(err.Error(), fuzzFile) {
		t.Errorf("error %q (File %q) does not name %s", err, re.File, fuzzFile)
	}
	// A parser may report the end of input on the line after the last.
	if max := lineCount(data) + 1; re.Line < 0 || re.Line > max {
		t.Errorf("error at line %d, input has %d lines: %v", re.Line, max-1, err)
	}
}

// lineCount counts lines as YAML does: CR, LF, CRLF and, since yaml.v3
// follows YAML 1.1, NEL, LS and PS each end one; and in the decoded text,
// since UTF-16 is read too (where "( " is an LS).
func lineCount(data []byte) int {
	data = fromUTF16(data)
	n := 1
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\n':
			n++
		case data[i] == '\r':
			if i+1 == len(data) || data[i+1] != '\n' {
				n++
			}
		case bytes.HasPrefix(data[i:], []byte("\u0085")),
			bytes.HasPrefix(data[i:], []byte("\u2028")),
			bytes.HasPrefix(data[i:], []byte("\u2029")):
			n++
		}
	}
	return n
}

// fromUTF16 returns data as UTF-8 when a byte order mark says it is
// UTF-16, which is how yaml.v3 tells.
func fromUTF16(data []byte) []byte {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		order = binary.LittleEndian
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		order = binary.BigEndian
	default:
		return data
	}
	var units []uint16
	for i := 2; i+1 < len(data); i += 2 {
		units = append(units, order.Uint16(data[i:]))
	}
	return []byte(string(utf16.Decode(units)))
}
