package recipe

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// exhaustiveSyntaxLine is the definition syntaxLine computes quickly: the
// line after the longest prefix of whole lines that parses. It tries every
// prefix, which is quadratic.
func exhaustiveSyntaxLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	lastOK := 0
	for n := 1; n <= len(lines); n++ {
		err := decode(yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:n], nil))), new(yaml.Node))
		if err == nil || err == io.EOF {
			lastOK = n
		}
	}
	if lastOK >= len(lines) {
		return 0
	}
	return lastOK + 1
}

// On broken variants of the example recipes, syntaxLine finds the line the
// exhaustive search finds, or, past its budget, leaves yaml.v3's (0).
func TestSyntaxLineMatchesExhaustiveSearch(t *testing.T) {
	seeds := [][]byte{[]byte(good)}
	files, _ := filepath.Glob("../../examples/*/pallet.yaml")
	for _, f := range files {
		d, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, d)
	}
	rng := rand.New(rand.NewSource(1))
	toks := []string{"[", "]", "{", "}", "\"", "'", ":", "- ", " ", "\n", "  ", "#", "&a ", "*a", "|", ">", ",", "\t", "? ", "---\n", "x: y\n"}
	broken, found := 0, 0
	for range 400 {
		d := bytes.Clone(seeds[rng.Intn(len(seeds))])
		for k := rng.Intn(3) + 1; k > 0 && len(d) > 0; k-- {
			i := rng.Intn(len(d))
			if rng.Intn(3) == 0 {
				d = append(d[:i], d[i+1:]...)
			} else {
				d = append(d[:i], append([]byte(toks[rng.Intn(len(toks))]), d[i:]...)...)
			}
		}
		if err := decode(yaml.NewDecoder(bytes.NewReader(d)), new(yaml.Node)); err == nil || err == io.EOF {
			continue
		}
		broken++
		want, got := exhaustiveSyntaxLine(d), syntaxLine(d)
		if got != 0 {
			found++
		}
		if got != want && got != 0 {
			t.Errorf("syntaxLine = %d, the exhaustive search says %d, in:\n%s", got, want, d)
		}
	}
	// Giving up is for the odd mistake inside a long flow collection.
	if broken < 100 || found < broken*9/10 {
		t.Errorf("of %d broken recipes, syntaxLine located %d", broken, found)
	}
}
