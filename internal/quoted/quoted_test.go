package quoted

import (
	"reflect"
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   nil,
		"  -s  -w ":          {"-s", "-w"},
		`-X 'a=b c' "d" e'f`: {"-X", "a=b c", "d", "e'f"},
		"-X\tmain.v=1\n-s":   {"-X", "main.v=1", "-s"},
		`'' x`:               {"", "x"},
	} {
		got, err := Split(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Split(`-X 'a=b`); err == nil {
		t.Error("an unterminated quote split")
	}
}

// SplitCgo splits as go/build does: quotes group and are taken out,
// a backslash takes the next character as it is, "" is an argument.
func TestSplitCgo(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  -O2\t-g ", []string{"-O2", "-g"}},
		{`a b:"c d" 'e''f'  "g\""`, []string{"a", "b:c d", "ef", `g"`}},
		{`-I"x y" "" z`, []string{"-Ix y", "", "z"}},
		{`a\ b 'c"d'`, []string{"a b", `c"d`}},
	} {
		if got := SplitCgo(c.in); !slices.Equal(got, c.want) {
			t.Errorf("SplitCgo(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// pkg-config's answer is split as a shell would split it, as go build
// splits it.
func TestSplitPkgConfig(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"-I/a -DX=1", []string{"-I/a", "-DX=1"}},
		{`-I/a\ b '-I/c d' "-I/e f" -D"X=\"y\"" -DZ=\q ""`, []string{"-I/a b", "-I/c d", "-I/e f", `-DX="y"`, "-DZ=q", ""}},
		{`"a\b"`, []string{`a\b`}},
		{`'a`, nil},
	} {
		if got := SplitPkgConfig(c.in); !slices.Equal(got, c.want) {
			t.Errorf("SplitPkgConfig(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
