package platform

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"linux/amd64":    "linux/amd64",
		"linux/arm64/v8": "linux/arm64",
		"linux/arm":      "linux/arm/v7",
		"linux/arm/v6":   "linux/arm/v6",
		" windows/amd64": "windows/amd64",
	} {
		p, err := Parse(in)
		if err != nil || p.String() != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
	for _, bad := range []string{"linux", "linux/amd46", "darwin/arm64", "windows/amd64/v2", "linux/amd64/x/y"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
	p, _ := Parse("linux/arm/v6")
	if env := strings.Join(p.GoEnv(), " "); env != "GOOS=linux GOARCH=arm GOARM=6" {
		t.Errorf("GoEnv = %s", env)
	}
	w, _ := Parse("windows/amd64")
	if !w.IsWindows() || w.ExeSuffix() != ".exe" || w.V1().OS != "windows" {
		t.Errorf("windows platform: %+v", w)
	}
}
