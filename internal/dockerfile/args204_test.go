package dockerfile

import (
	"reflect"
	"strings"
	"testing"
)

// An ARG declared in a stage without a value adds nothing to BuildKit's
// environment: the words after it see the base image's ENV of that name
// (checked against BuildKit v0.29.0, with a base from a registry whose
// config has FOO=x: $FOO is x, or --build-arg's value). pallet reads no
// base when it plans, so on a registry or layout base it cannot say what
// such a name is, and refuses it at its line rather than make it empty.
func TestDockerfileArgWithoutValueOverUnreadBase(t *testing.T) {
	windows := Options{Platforms: []string{"windows/amd64"}}
	tests := []struct {
		name   string
		df     string
		opt    Options
		labels map[string]string
		line   int
		err    string
	}{
		{name: "registry base", df: "FROM example.com/base\nARG FOO\nLABEL f=$FOO",
			line: 3, err: "$FOO is declared by an ARG with no value, so it is what the environment of the base image example.com/base sets it to"},
		{name: "layout base", df: "FROM oci:base\nARG FOO\nLABEL f=$FOO", line: 3, err: "base image oci:base"},
		{name: "a stage on such a base", df: "FROM example.com/base AS b\nARG FOO\nFROM b\nCOPY bin/hello /${FOO}/", line: 4, err: "$FOO is declared by an ARG with no value"},
		{name: "a global ARG with no default brings no value", df: "ARG FOO\nFROM example.com/base\nARG FOO\nENV G=${FOO:-d}", line: 4, err: "ARG FOO=VALUE"},
		{name: "Windows, whatever the case", df: "FROM example.com/windows\nARG foo\nLABEL f=[$FOO]", opt: windows, line: 3, err: "$FOO is declared by an ARG with no value"},
		{name: "--arg gives it", df: "FROM example.com/base\nARG FOO\nLABEL f=$FOO",
			opt: Options{Args: map[string]string{"FOO": "y"}}, labels: map[string]string{"f": "y"}},
		{name: "an empty default is empty, as BuildKit sets it over the base's", df: "FROM example.com/base\nARG FOO=\nLABEL f=[$FOO]",
			labels: map[string]string{"f": "[]"}},
		{name: "the global value", df: "ARG FOO=g\nFROM example.com/base\nARG FOO\nLABEL f=$FOO", labels: map[string]string{"f": "g"}},
		{name: "an ENV of the stage", df: "FROM example.com/base\nARG FOO\nENV FOO=e\nLABEL f=$FOO", labels: map[string]string{"f": "e"}},
		{name: "scratch has no environment", df: "FROM scratch\nARG FOO\nLABEL f=[$FOO]", labels: map[string]string{"f": "[]"}},
		{name: "nor has the built-in Windows base", df: "FROM windows-hostprocess-scratch\nARG foo\nLABEL f=[$FOO]", opt: windows, labels: map[string]string{"f": "[]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": tc.df + "\n", "bin/hello": "h"}
			if tc.err != "" {
				_, err := planFiles(t, fs, tc.opt)
				if err == nil {
					t.Fatalf("planned, want %q", tc.err)
				}
				planCase(t, fs, tc.opt, tc.err)
				if pe := located(t, err); pe.Pos.Line != tc.line {
					t.Errorf("error at line %d, want %d: %v", pe.Pos.Line, tc.line, err)
				}
				return
			}
			p := planCase(t, fs, tc.opt, "")
			if got := p.Images[0].Platforms[0].Config.Labels; !reflect.DeepEqual(got, tc.labels) {
				t.Errorf("labels %q, want %q", got, tc.labels)
			}
		})
	}
}

// EXPOSE expands its words as the other instructions do, and a name the
// base's environment may set is refused there too: BuildKit v0.29.0
// exposes 8080/tcp for `EXPOSE 80 $PORT` on a base whose config has
// PORT=8080, where pallet dropped the word.
func TestDockerfileExposeVariableOverUnreadBase(t *testing.T) {
	tests := []struct {
		name  string
		df    string
		opt   Options
		ports []string
		err   string
	}{
		{name: "registry base", df: "FROM example.com/base\nEXPOSE 80 $PORT", err: "$PORT is not set by this Dockerfile; it may come from the environment of the base image example.com/base"},
		{name: "an ARG with no value", df: "FROM example.com/base\nARG PORT\nEXPOSE 80 ${PORT}/udp", err: "$PORT is declared by an ARG with no value"},
		{name: "a global ARG not declared in the stage", df: "ARG PORT=1\nFROM scratch\nEXPOSE $PORT", err: "$PORT is an ARG of the global scope"},
		{name: "scratch: unset is nothing", df: "FROM scratch\nEXPOSE 80 $PORT", ports: []string{"80/tcp"}},
		{name: "set by the stage", df: "FROM example.com/base\nENV PORT=8080\nEXPOSE 80 $PORT", ports: []string{"8080/tcp", "80/tcp"}},
		{name: "set by --arg", df: "FROM example.com/base\nARG PORT\nEXPOSE $PORT/udp", opt: Options{Args: map[string]string{"PORT": "53"}}, ports: []string{"53/udp"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": tc.df + "\n"}
			p := planCase(t, fs, tc.opt, tc.err)
			if p == nil {
				_, err := planFiles(t, fs, tc.opt)
				if pe := located(t, err); pe.Pos.Line != strings.Count(tc.df, "\n")+1 {
					t.Errorf("error at line %d, want the EXPOSE's: %v", pe.Pos.Line, err)
				}
				return
			}
			if got := p.Images[0].Platforms[0].Config.ExposedPorts; !reflect.DeepEqual(got, tc.ports) {
				t.Errorf("ports %q, want %q", got, tc.ports)
			}
		})
	}
}
