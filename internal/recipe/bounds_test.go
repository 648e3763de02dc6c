package recipe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// bigRecipe returns a recipe of n artifacts and an image placing every
// one of them, a line each, and the line of the image's platforms.
func bigRecipe(n int) (string, int) {
	var b strings.Builder
	b.WriteString("version: 1\nartifacts:\n")
	for i := range n {
		fmt.Fprintf(&b, "  tool-%05d: {local: {path: ./third_party/tool-%05d/dist/linux-amd64/bin, extract: {strip: 1}}}\n", i, i)
	}
	b.WriteString("images:\n  app:\n    base: scratch\n")
	line := strings.Count(b.String(), "\n") + 1
	b.WriteString("    platforms: linux/amd64\n    files:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {artifact: tool-%05d, dest: /opt/, layer: tools}\n", i)
	}
	return b.String(), line
}

// parseWithin parses src and fails the test if that takes longer than d
// (without the race detector), or longer than a few plain YAML parses of
// src: reading the recipe, checking it and locating an error each read it
// once or twice, and a quadratic step costs hundreds of reads.
func parseWithin(t *testing.T, src string, d time.Duration) (*Recipe, error) {
	t.Helper()
	data := []byte(src)
	start := time.Now()
	var n yaml.Node
	yaml.Unmarshal(data, &n) // errors too are part of the yardstick
	read := time.Since(start)
	start = time.Now()
	r, err := Parse("big/pallet.yaml", data)
	took := time.Since(start)
	if limit := 10*read + 250*time.Millisecond; took > limit {
		t.Errorf("Parse of %d bytes took %s, over %s (10 YAML reads of it)", len(src), took, limit)
	}
	if !raceEnabled && took > d {
		t.Errorf("Parse of %d bytes took %s, want under %s", len(src), took, d)
	}
	return r, err
}

// wantErrorAt checks that err is a recipe error at line mentioning want.
func wantErrorAt(t *testing.T, err error, line int, want string) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *recipe.Error", err, err)
	}
	if re.Line != line || !strings.Contains(re.Msg, want) {
		t.Errorf("got %v, want line %d mentioning %q", err, line, want)
	}
}

// A syntax error near the end of a large recipe is found at its line, and
// quickly: trying every prefix took a minute for 4,000 lines (300 KB), and
// above 5,000 lines gave up and reported the start of the enclosing block.
func TestSyntaxErrorInLargeRecipe(t *testing.T) {
	for _, n := range []int{2000, 3000} {
		t.Run(fmt.Sprint(n, " artifacts"), func(t *testing.T) {
			src, line := bigRecipe(n)
			if len(src) < 165<<10 {
				t.Fatalf("recipe is %d bytes, want at least 165 KB", len(src))
			}
			if _, err := Parse("big/pallet.yaml", []byte(src)); err != nil {
				t.Fatalf("the unbroken recipe: %v", err)
			}
			bad := strings.Replace(src, "    platforms: linux/amd64", "   platforms: linux/amd64", 1)
			_, err := parseWithin(t, bad, 2*time.Second)
			wantErrorAt(t, err, line, "did not find expected key")
		})
	}
}

func TestOwnerOutOfRange(t *testing.T) {
	const ownerLine = 23
	tests := []struct{ owner, want string }{
		{"4294967296:0", "4294967296 is out of range"},
		{"0:4294967296", "4294967296 is out of range"},
		{"18446744073709551616", "out of range"},
		{"4294967295:0", "(uid_t)-1"},
		{"-1:0", "-1: ids are not negative"},
		{"0:-5", "-5: ids are not negative"},
		{"+5", `"+5" is not a decimal number`},
		{"1000:", `"" is not a decimal number`},
	}
	for _, tc := range tests {
		t.Run(tc.owner, func(t *testing.T) {
			src := strings.Replace(good, `owner: "1000:1000"`, fmt.Sprintf("owner: %q", tc.owner), 1)
			_, err := Parse("pallet.yaml", []byte(src))
			wantErrorAt(t, err, ownerLine, tc.want)
			if _, _, err := ParseOwner(tc.owner); err == nil {
				t.Errorf("ParseOwner(%q) accepted it", tc.owner)
			}
		})
	}
	for _, s := range []string{"0", "65534:65534", "4294967294:4294967294"} {
		src := strings.Replace(good, `owner: "1000:1000"`, fmt.Sprintf("owner: %q", s), 1)
		if _, err := Parse("pallet.yaml", []byte(src)); err != nil {
			t.Errorf("owner %q: %v", s, err)
		}
	}
	if u, g, err := ParseOwner("4294967294:7"); err != nil || uint64(u) != MaxID || g != 7 {
		t.Errorf("ParseOwner(4294967294:7) = %d, %d, %v", u, g, err)
	}
}
