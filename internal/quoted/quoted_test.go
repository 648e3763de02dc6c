package quoted

import (
	"reflect"
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
