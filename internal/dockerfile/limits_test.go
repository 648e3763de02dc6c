package dockerfile

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// bomb is a Dockerfile whose ENV values each name the one before sixteen
// times: line 2 sets 62 bytes, line 2+k asks for 62·16^k.
func bomb(levels int) string {
	var b strings.Builder
	b.WriteString("FROM scratch\nENV A=" + strings.Repeat("a", 62) + "\n")
	prev := "A"
	for i := 1; i <= levels; i++ {
		name := fmt.Sprintf("V%d", i)
		fmt.Fprintf(&b, "ENV %s=%s\n", name, strings.Repeat("$"+prev, 16))
		prev = name
	}
	return b.String()
}

// Words that expand past the limits are refused at their instruction, as
// the lexer expands them: the work stops near the limit, however much
// more the word asks for.
func TestExpansionBounded(t *testing.T) {
	mib := strings.Repeat("x", 1<<20-8)
	tests := []struct {
		name string
		df   string
		args map[string]string
		line int
		want string
	}{
		// 62·16^4 = 4 MB at line 6; eight levels would be 267 GB.
		{"an ENV bomb", bomb(8), nil, 6, "would expand to over 1048576 bytes (1 MiB)"},
		{"a LABEL bomb", bomb(3) + "LABEL l=\"$V3 $V3 $V3 $V3 $V3\"\n", nil, 6, "LABEL: "},
		{"a global ARG bomb", "ARG A=" + strings.Repeat("a", 4097) + "\nARG B=$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A$A\nARG C=$B$B$B$B$B$B$B$B$B$B$B$B$B$B$B$B\nFROM scratch", nil, 3, "ARG C: \"$B$B"},
		// Each match of ? puts in 2 KiB: 4 MiB from a 40-byte line.
		{"a pattern substitution", "FROM scratch\nENV A=" + strings.Repeat("a", 2048) + "\nENV B=${A//?/$A}", nil, 3, "over 1048576 bytes"},
		// The same with the replacement written out, 600 bytes a match.
		{"a pattern substitution with a plain replacement", "FROM scratch\nENV A=" + strings.Repeat("a", 2048) + "\nENV B=${A//?/" + strings.Repeat("r", 600) + "}", nil, 3, "over 1048576 bytes"},
		{"words under 1 MiB, over 4 MiB in all", "FROM scratch\nARG X\nENV A=$X B=$X C=$X\nLABEL d=$X e=$X", map[string]string{"X": mib}, 4, "over 4194304 bytes (4 MiB) in all"},
		{"EXPOSE", "FROM scratch\nENV A=" + strings.Repeat("1", 60000) + "\nEXPOSE " + strings.Repeat("$A", 18), nil, 3, "EXPOSE: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := planFiles(t, map[string]string{"Dockerfile": tc.df}, Options{Args: tc.args})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			pe := located(t, err)
			if !strings.Contains(pe.Error(), tc.want) || pe.Line != tc.line {
				t.Errorf("got %v, want line %d mentioning %q", err, tc.line, tc.want)
			}
		})
	}
}

// What real Dockerfiles expand stays well within the limits: values up to
// 1 MiB, a pattern substitution over PATH.
func TestExpansionWithinBounds(t *testing.T) {
	df := bomb(2) + "ARG X\nENV B=\"${PATH//:/ }\" C=$X\nLABEL c=$X\n"
	p, err := planFiles(t, map[string]string{"Dockerfile": df}, Options{Args: map[string]string{"X": strings.Repeat("x", 1<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Images[0].Platforms[0].Config
	if got := len(cfg.Labels["c"]); got != 1<<20 {
		t.Errorf("label of %d bytes, want 1 MiB", got)
	}
	if !strings.Contains(strings.Join(cfg.Env, "\n"), "B=/usr/local/sbin /usr/local/bin") {
		t.Errorf("env %q", cfg.Env)
	}
}

// A word substituting in one variable several times, with replacements
// written out, is bounded by what each substitution can make, not by
// their product: the label below, and three substitutions of a 200-byte
// value, were refused as over 1 MiB. Its value was checked against
// BuildKit v0.29.0.
func TestExpansionSeveralSubstitutions(t *testing.T) {
	long := strings.Repeat("ab,", 70)
	df := "FROM scratch\nENV P=/usr/local/bin L=" + long + "\n" +
		`LABEL b="${P#/usr}|${P##*/}|${P%/bin}|${P%%/*}|${P/local/LOCAL}|${P//l/L}"` + "\n" +
		`LABEL l="${L//,/ } ${L//,/;} ${L//ab/x}"` + "\n"
	p, err := planFiles(t, map[string]string{"Dockerfile": df}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	labels := p.Images[0].Platforms[0].Config.Labels
	if want := "/local/bin|bin|/usr/local||/usr/LOCAL/bin|/usr/LocaL/bin"; labels["b"] != want {
		t.Errorf("label b %q, want %q", labels["b"], want)
	}
	if want := strings.Repeat("ab ", 70) + " " + strings.Repeat("ab;", 70) + " " + strings.Repeat("x,", 70); labels["l"] != want {
		t.Errorf("label l %q, want %q", labels["l"], want)
	}
}

// --arg values are bounded one by one and in all, before any expansion.
func TestArgSizes(t *testing.T) {
	big := strings.Repeat("x", 1<<20+1)
	df := "FROM scratch\nARG A\nARG B\nARG C\nARG D\nARG E\n"
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"A": big}, "--arg A: 1048577 bytes"},
		{map[string]string{"A": big[:1<<20], "B": big[:1<<20], "C": big[:1<<20], "D": big[:1<<20], "E": "x"}, "--arg: 4194310 bytes in all"},
	} {
		_, err := planFiles(t, map[string]string{"Dockerfile": df}, Options{Args: tc.args})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// A line longer than BuildKit's reader takes is named, with its number,
// wherever it is: first (a comment, where BuildKit's reader would only
// say there are no instructions) or later.
func TestLongLineNamed(t *testing.T) {
	long := strings.Repeat("x", 70000)
	for _, tc := range []struct {
		df   string
		line int
	}{
		{"# " + long + "\nFROM scratch\nCOPY a /a\n", 1},
		{"FROM scratch\nCOPY a /a" + long + "\n", 2},
		{"FROM scratch\n# a\nLABEL a=" + long, 3},
	} {
		_, err := Parse("Dockerfile", t.TempDir(), []byte(tc.df))
		if err == nil {
			t.Fatalf("line %d: no error", tc.line)
		}
		pe := located(t, err)
		if pe.Line != tc.line || !strings.Contains(pe.Error(), "a Dockerfile line is at most 65535") {
			t.Errorf("got %v, want line %d", err, tc.line)
		}
	}
}

// A WORKDIR or a destination deeper than a runtime can unpack is refused
// at its line, before the plan records each of its parents: 2000 nested
// WORKDIRs, each a layer of its whole chain, ran for minutes, and one of
// 16,000 directories took 40 s.
func TestPathsBounded(t *testing.T) {
	tests := []struct {
		name, df string
		line     int
	}{
		{"nested WORKDIRs", "FROM scratch\n" + strings.Repeat("WORKDIR a\n", 2000), 258},
		{"one deep WORKDIR", "FROM scratch\nWORKDIR /" + strings.Repeat("a/", 16000), 2},
		{"a deep destination", "FROM scratch\nCOPY a /" + strings.Repeat("a/", 300), 2},
		{"a long destination", "FROM scratch\nWORKDIR /w\nCOPY a " + strings.Repeat("n", 5000), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := planFiles(t, map[string]string{"Dockerfile": tc.df, "a": "a"}, Options{})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
			if err == nil {
				t.Fatal("no error")
			}
			pe := located(t, err)
			if !strings.Contains(pe.Error(), "deeper than 256 directories") || pe.Line != tc.line {
				t.Errorf("got %v, want line %d", err, tc.line)
			}
		})
	}
}

// A stage's layers are held to image.MaxLayers at the instruction that
// makes one too many: 3000 WORKDIRs took 51 s to build, and a 4 MiB
// Dockerfile holds 300,000.
func TestLayersBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("FROM scratch\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "WORKDIR /w%d\n", i)
	}
	start := time.Now()
	_, err := planFiles(t, map[string]string{"Dockerfile": b.String()}, Options{})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if err == nil {
		t.Fatal("no error")
	}
	if pe := located(t, err); !strings.Contains(pe.Error(), "layer 501 of the image; an image has at most 500") || pe.Line != 502 {
		t.Errorf("got %v, want line 502", err)
	}
}

// Stages that each copy the one before twice double the placements: 40
// of them ran until killed. They are refused at the COPY that takes more
// than maxFromStages sources from stages in all.
func TestStageCopiesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("FROM scratch AS s0\nCOPY a /f\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "FROM scratch AS s%d\nCOPY --from=s%d / /a/\nCOPY --from=s%d / /b/\n", i, i-1, i-1)
	}
	start := time.Now()
	_, err := planFiles(t, map[string]string{"Dockerfile": b.String(), "a": "a"}, Options{})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
	if err == nil {
		t.Fatal("no error")
	}
	// s13's first COPY brings the sources taken from stages to
	// 2·(2^12-1)+2^12 (s_i copies 2^(i-1) twice).
	if pe := located(t, err); !strings.Contains(pe.Error(), "would have taken 12286 sources from stages in all; at most 10000") || pe.Line != 40 {
		t.Errorf("got %v, want line 40", err)
	}
	// The context's files are not counted, nor are the sources of a
	// stage copied once.
	files := map[string]string{"Dockerfile": "FROM scratch AS b\nCOPY ctx/* /d/\nFROM scratch\nCOPY ctx/* /d/\nCOPY --from=b /d/f1 /f1\n"}
	for i := range 12000 {
		files[fmt.Sprintf("ctx/f%d", i)] = "x"
	}
	if _, err := planFiles(t, files, Options{}); err != nil {
		t.Errorf("12,000 files of the context: %v", err)
	}
}

// Planning is held to maxWork steps: each ENV looks through the
// variables set before it (100,000 ENV lines ran for minutes), each stage
// built FROM another copies what it holds (a chain of 20,000 stages on
// 2000 variables took 25 s and 1.5 GB). Many variables and stages within
// reason plan.
func TestPlanWorkBounded(t *testing.T) {
	envs := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "ENV A%d=x\n", i)
		}
		return b.String()
	}
	chain := func(n int) string {
		var b strings.Builder
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "FROM s%d AS s%d\n", i-1, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, df string
		want     string
	}{
		{"many ENV lines", "FROM scratch\n" + envs(20000), "ENV: planning the Dockerfile would take over"},
		{"a long chain of stages", "FROM scratch AS s0\n" + envs(2000) + chain(20000), "FROM s"},
		{"within reason", "FROM scratch AS s0\n" + envs(1000) + chain(100) + "COPY a /a\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := planFiles(t, map[string]string{"Dockerfile": tc.df, "a": "a"}, Options{})
			if took := time.Since(start); took > time.Minute && !raceEnabled {
				t.Errorf("took %s", took)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if pe := located(t, err); !strings.Contains(pe.Error(), tc.want) || !strings.Contains(pe.Error(), "over 100000000 steps") || pe.Line < 2 {
				t.Errorf("got %v", err)
			}
		})
	}
}

// A COPY --from or FROM names a stage by a look-up, not a look through
// every stage: a chain of 20,000 stages, each copying from the one
// before, took 7 s (each look-up lowercasing every stage's name) before
// maxFromStages refused it at the 10,001st; it takes under a second.
func TestStageLookupLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("FROM scratch AS s0\nCOPY a /a\n")
	for i := 1; i < 20000; i++ {
		fmt.Fprintf(&b, "FROM scratch AS S%d\nCOPY --from=s%d /a /a\n", i, i-1)
	}
	start := time.Now()
	_, err := planFiles(t, map[string]string{"Dockerfile": b.String(), "a": "a"}, Options{})
	took := time.Since(start)
	if pe := located(t, err); pe.Line != 20004 || !strings.Contains(pe.Error(), "COPY --from=stage would have taken 10001 sources from stages in all") {
		t.Errorf("got %v", err)
	}
	if took > 3*time.Second && !raceEnabled {
		t.Errorf("took %s", took)
	}
}
