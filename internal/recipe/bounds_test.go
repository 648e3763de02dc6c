package recipe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	var (
		r          *Recipe
		err        error
		read, took time.Duration
	)
	// The race detector slows Parse's own checks more than yaml.v3's
	// read (the aliasing error: 0.96 s against 0.03 s at load 13, and
	// 2.36 s, 31 reads, at load 21); a quadratic step is still
	// thousands of reads.
	reads := time.Duration(10)
	if raceEnabled {
		reads = 60
	}
	// The best of three tries where one is over: a machine busy with
	// other tests slows a try now and then, a quadratic step every one.
	for try := 0; try < 3; try++ {
		start := time.Now()
		var n yaml.Node
		yaml.Unmarshal(data, &n) // errors too are part of the yardstick
		if d := time.Since(start); try == 0 || d < read {
			read = d
		}
		start = time.Now()
		r, err = Parse("big/pallet.yaml", data)
		if d := time.Since(start); try == 0 || d < took {
			took = d
		}
		if took <= reads*read+250*time.Millisecond && (raceEnabled || took <= d) {
			break
		}
	}
	if limit := reads*read + 250*time.Millisecond; took > limit {
		t.Errorf("Parse of %d bytes took %s, over %s (%d YAML reads of it)", len(src), took, limit, reads)
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

// placements returns a recipe of one image with n placements, each in its
// own layer unless grouped, and the line of placement i.
func placements(n int, grouped bool) (src string, lineOf func(int) int) {
	var b strings.Builder
	b.WriteString("version: 1\nartifacts:\n  app:\n    local: {path: ./app}\nimages:\n  app:\n    base: scratch\n    platforms: [linux/amd64, linux/arm64]\n    files:\n")
	for i := range n {
		layer := ""
		if grouped {
			layer = fmt.Sprintf(", layer: l%d", i%100)
		}
		fmt.Fprintf(&b, "      - {artifact: app, dest: /opt/app-%05d/, owner: \"1000\"%s}\n", i, layer)
	}
	return b.String(), func(i int) int { return 10 + i }
}

func TestManyPlacements(t *testing.T) {
	src, _ := placements(MaxPlacements, true)
	r, err := parseWithin(t, src, 5*time.Second)
	if err != nil {
		t.Fatalf("%d placements in 100 layers: %v", MaxPlacements, err)
	}
	if got := len(r.Images["app"].Files); got != MaxPlacements {
		t.Errorf("%d placements read, want %d", got, MaxPlacements)
	}

	src, lineOf := placements(MaxPlacements+1, true)
	_, err = parseWithin(t, src, 5*time.Second)
	wantErrorAt(t, err, lineOf(MaxPlacements), fmt.Sprintf("%d placements; at most %d", MaxPlacements+1, MaxPlacements))

	src, _ = placements(MaxLayers, false)
	if _, err := Parse("pallet.yaml", []byte(src)); err != nil {
		t.Errorf("%d placements of their own layer: %v", MaxLayers, err)
	}
	src, lineOf = placements(MaxLayers+1, false)
	_, err = Parse("pallet.yaml", []byte(src))
	wantErrorAt(t, err, lineOf(MaxLayers), fmt.Sprintf("makes layer %d on linux/amd64", MaxLayers+1))
}

// Layers are counted per platform: placements limited to one platform do
// not add to another's.
func TestLayerCountPerPlatform(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nartifacts:\n  app:\n    local: {path: ./app}\nimages:\n  app:\n    base: scratch\n    platforms: [linux/amd64, windows/amd64]\n    files:\n")
	for i := range 2 * MaxLayers {
		os := []string{"linux", "windows"}[i%2]
		fmt.Fprintf(&b, "      - {artifact: app, dest: /opt/app-%d/, platforms: %s}\n", i, os)
	}
	if _, err := Parse("pallet.yaml", []byte(b.String())); err != nil {
		t.Errorf("%d layers on each of two platforms: %v", MaxLayers, err)
	}
	b.WriteString("      - {artifact: app, dest: /opt/one-more/, platforms: windows}\n")
	_, err := Parse("pallet.yaml", []byte(b.String()))
	wantErrorAt(t, err, 10+2*MaxLayers, "on windows/amd64")
}

// yaml.v3 compares every pair of keys of a mapping: a mapping of 60,000
// keys took seconds before it was refused, and the time grows squared.
func TestMappingKeyLimits(t *testing.T) {
	mapping := func(name string, keys int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s:\n", name)
		for i := range keys {
			fmt.Fprintf(&b, "  k%d: v\n", i)
		}
		return b.String()
	}
	src := "version: 1\n" + mapping("args", MaxKeys)
	if _, err := Parse("pallet.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "no images declared") {
		t.Errorf("%d args: %v, want only the missing images", MaxKeys, err)
	}

	src = "version: 1\n" + mapping("args", 60_000)
	_, err := parseWithin(t, src, 2*time.Second)
	wantErrorAt(t, err, 2, fmt.Sprintf("60000 keys in one mapping; at most %d", MaxKeys))

	// Many mappings, each allowed, add up.
	var b strings.Builder
	b.WriteString("version: 1\nimages:\n")
	for i := range 3 {
		b.WriteString(strings.ReplaceAll(mapping(fmt.Sprintf("  i%d", i), MaxKeys), "\n  k", "\n    k"))
	}
	_, err = parseWithin(t, b.String(), 5*time.Second)
	wantErrorAt(t, err, 2, "pairs of keys")

	// An alias repeats the decoder's work each time it is used.
	src = "version: 1\nx-keys: &keys\n" + strings.TrimPrefix(mapping("", 5000), ":\n") +
		"images:\n  a:\n    base: scratch\n    platforms: linux/amd64\n    config:\n      labels:\n        <<: [" +
		strings.TrimSuffix(strings.Repeat("*keys, ", 20), ", ") + "]\n"
	_, err = parseWithin(t, src, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("20 merges of 5,000 keys: %v", err)
	}
}

// Alias bombs end quickly and small: yaml.v3 keeps aliases as nodes and
// refuses excessive expansion; the key count refuses merge bombs before.
func TestAliasBombsBounded(t *testing.T) {
	for _, h := range hostile() {
		if !strings.Contains(h.name, "laughs") {
			continue
		}
		t.Run(h.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := parseWithin(t, h.data, 2*time.Second)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), h.want) {
				t.Errorf("error %v, want one mentioning %q", err, h.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

func TestSizeLimit(t *testing.T) {
	big := make([]byte, MaxSize+1)
	copy(big, "version: 1\n")
	for i := len("version: 1\n"); i < len(big); i++ {
		big[i] = '#'
	}
	_, err := Parse("pallet.yaml", big)
	wantErrorAt(t, err, 0, "larger than 4 MiB")

	// Load refuses a huge file without reading it in.
	file := filepath.Join(t.TempDir(), "pallet.yaml")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Load(file)
	runtime.ReadMemStats(&after)
	wantErrorAt(t, err, 0, "larger than 4 MiB")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("Load allocated %d KiB to refuse a 1 GiB file", alloc>>10)
	}

	// A pipe has no size to look at; the limit still holds.
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := Load("/dev/zero")
		wantErrorAt(t, err, 0, "larger than 4 MiB")
	}
}

// An epoch past year 9999 cannot be written into an image config: it is
// refused where it is given, from the recipe or the environment.
func TestEpochPastYear9999(t *testing.T) {
	const body = "version: 1\nimages:\n  a:\n    base: scratch\n    platforms: [linux/amd64]\n"
	r, err := Parse("pallet.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for v, ok := range map[string]bool{"253402300799": true, "253402300800": false, "99999999999999999": false, "-1": false} {
		t.Setenv("SOURCE_DATE_EPOCH", v)
		_, err := r.Plan(Options{})
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH=\""+v+"\": want Unix seconds from 0 to 253402300799") {
			t.Errorf("SOURCE_DATE_EPOCH=%s: %v", v, err)
		}
	}
}

// amplified is a recipe of n labels, each {{X}} ten times, from line 9.
func amplified(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nargs: {X: x}\nimages:\n  img:\n    base: scratch\n    platforms: [linux/amd64]\n    config:\n      labels:\n")
	for i := range n {
		fmt.Fprintf(&b, "        l%04d: '%s'\n", i, strings.Repeat("{{X}}", 10))
	}
	return b.String()
}

// A {{NAME}} used many times multiplies the recipe's size: each value is
// refused over 1 MiB before it is made, and the config, all its values
// counted, over 4 MiB, at the line of the value that goes over; quickly,
// whatever the recipe asks for beyond.
func TestExpansionBounded(t *testing.T) {
	x100k := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name string
		src  string
		args map[string]string
		line int
		want string
	}{
		// 1 MB a label: the fifth goes over 4 MiB.
		{"many labels", amplified(1000), map[string]string{"X": x100k}, 13, "with this value the image config comes to over 4194304 bytes (4 MiB)"},
		{"one label", amplified(1), map[string]string{"X": strings.Repeat("x", 110_000)}, 9, "expands to 1100000 bytes; a value is at most 1048576 (1 MiB)"},
		{"env and sections", "version: 1\nargs: {X: x}\nimages:\n  img:\n    base: scratch\n    platforms: [linux/amd64]\n    config:\n      env: ['A={{X}}{{X}}{{X}}', 'B={{X}}{{X}}{{X}}']\n      for:\n        linux:\n          env: ['C={{X}}{{X}}{{X}}', 'D={{X}}{{X}}{{X}}', 'E={{X}}{{X}}{{X}}']\n          cmd: ['{{X}}']\n",
			map[string]string{"X": strings.Repeat("x", 300_000)}, 11, "over 4194304 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse("pallet.yaml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = r.Plan(Options{Args: tc.args})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			wantErrorAt(t, err, tc.line, tc.want)
		})
	}
	r, err := Parse("pallet.yaml", []byte(amplified(1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(Options{Args: map[string]string{"X": strings.Repeat("x", 1<<20+1)}}); err == nil || !strings.Contains(err.Error(), "arg X: 1048577 bytes; a value is at most 1048576") {
		t.Errorf("a 1 MiB arg: got %v", err)
	}
	// Up to the limits, the values are as given.
	p, err := r.Plan(Options{Args: map[string]string{"X": strings.Repeat("x", 100_000)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(p.Images[0].Platforms[0].Config.Labels["l0000"]); got != 1_000_000 {
		t.Errorf("label of %d bytes, want 1 MB", got)
	}
}

// yaml.v3 refuses a document whose aliases expand to much more than it
// holds, without a line; the error points at the anchor aliased most.
func TestExcessiveAliasingHasALine(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nartifacts:\n  f:\n    local: {path: a}\nimages:\n  x0: &img\n    base: scratch\n    platforms: [linux/amd64]\n    files:\n")
	for i := range 500 {
		fmt.Fprintf(&b, "      - {artifact: f, dest: /a%d, layer: one}\n", i)
	}
	for i := 1; i < 1000; i++ {
		fmt.Fprintf(&b, "  x%d: *img\n", i)
	}
	_, err := parseWithin(t, b.String(), 5*time.Second)
	wantErrorAt(t, err, 6, "excessive aliasing: the aliases of &img, 999 of them")
}

// What {{NAME}} adds to values that are no config (tags, destinations)
// is bounded in all by MaxGrowth: 100,000 tags of a 100 KB --arg took
// 10 GB before the first was refused.
func TestExpansionGrowthBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nargs: {X: x}\nimages:\n  img:\n    base: scratch\n    platforms: [linux/amd64]\n    tags:\n")
	for i := range 100_000 {
		fmt.Fprintf(&b, "      - '{{X}}-%d'\n", i)
	}
	r, err := Parse("pallet.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	x := strings.Repeat("x", 100_000)
	grow := len(x) - len("{{X}}")
	start := time.Now()
	_, err = r.Plan(Options{Args: map[string]string{"X": x}})
	if took := time.Since(start); took > 5*time.Second && !raceEnabled {
		t.Errorf("took %s", took)
	}
	// Tag i is at line 8+i; the one that takes the sum past the bound
	// is the (MaxGrowth/grow + 1)th.
	wantErrorAt(t, err, 8+MaxGrowth/grow, "adds over 67108864 bytes (64 MiB, recipe.MaxGrowth)")
	// The bound is the plan's, not the recipe's: planning again starts
	// from nothing.
	if _, err := r.Plan(Options{Args: map[string]string{"X": "x"}}); err != nil {
		t.Errorf("planned again with a short X: %v", err)
	}
}
