package dockerfile

import (
	"reflect"
	"testing"
)

// On Windows, names that differ only in case are one variable, for what
// a word expands to as for what the config holds (as Docker's builder has
// it on Windows); on Linux they stay apart.
func TestDockerfileEnvNameCase(t *testing.T) {
	// The base stage stands for a base whose config has Path, as a
	// Windows image's has: pallet reads no image's env when it plans.
	const winBase = "# escape=`\nFROM windows-hostprocess-scratch AS base\nENV Path=C:\\Windows\nFROM base\n"
	windows := Options{Platforms: []string{"windows/amd64"}}
	tests := []struct {
		name   string
		df     string
		opt    Options
		env    []string
		labels map[string]string
		wd     string
		layers []string
		err    string
	}{
		{name: "ENV PATH extends the base's Path, and is that one variable",
			df: winBase + "ENV PATH=C:\\k;$path\nLABEL p=${pAtH}", opt: windows,
			// Spelt as the ENV spells it, as image.SetEnv and BuildKit's addEnv keep it.
			env: []string{`PATH=C:\k;C:\Windows`}, labels: map[string]string{"p": `C:\k;C:\Windows`}},
		{name: "${PATH} in WORKDIR", df: winBase + "WORKDIR ${PATH}\\app", opt: windows,
			env: []string{`Path=C:\Windows`}, wd: `\Windows\app`, layers: []string{"/Windows/app/<-mkdir"}},
		{name: "${PATH} in a COPY destination", df: winBase + "ENV path=C:\\k\nCOPY bin/hello ${PATH}\\", opt: windows,
			env: []string{`path=C:\k`}, layers: []string{"/k/<-local:bin/hello"}},
		{name: "an ARG is found whatever the case", df: "# escape=`\nFROM windows-hostprocess-scratch\nARG dir=C:\\d\nCOPY bin/hello ${DIR}\\\nWORKDIR $Dir", opt: windows,
			wd: `\d`, layers: []string{"/d/<-local:bin/hello"}},
		{name: "an ENV replaces an ARG of another case", df: "FROM windows-hostprocess-scratch\nARG v=arg\nENV V=env\nLABEL v=$v", opt: windows,
			env: []string{"V=env"}, labels: map[string]string{"v": "env"}},
		{name: "an ARG after an ENV of another case leaves it", df: "# escape=`\nFROM windows-hostprocess-scratch\nENV PATH=C:\\k\nARG path=argval\nENV Path=${PATH};C:\\more", opt: windows,
			env: []string{`Path=C:\k;C:\more`}},
		// Checked against BuildKit v0.29.0: the ARG's value is what later
		// words see, the config keeps the ENV.
		{name: "on Linux an ARG after an ENV of its name replaces it for later words, default or --arg", df: "FROM scratch\nENV V=env W=env\nARG V=arg\nARG W\nLABEL v=$V w=$W",
			opt: Options{Args: map[string]string{"W": "over"}}, env: []string{"PATH=" + defaultPath, "V=env", "W=env"}, labels: map[string]string{"v": "arg", "w": "over"}, wd: "/"},
		{name: "an ARG after an ENV of its spelling replaces it for later words", df: "# escape=`\nFROM windows-hostprocess-scratch\nENV Path=C:\\k\nARG Path=C:\\a\nENV Q=${Path}", opt: windows,
			env: []string{`Path=C:\k`, `Q=C:\a`}},
		{name: "an ARG declared without value is empty whatever the case",
			df: "FROM windows-hostprocess-scratch\nARG foo\nLABEL f=[$FOO]", opt: windows, labels: map[string]string{"f": "[]"}},
		// Over an unread base it is the base's ENV in BuildKit, which
		// pallet cannot know (TestDockerfileArgWithoutValueOverUnreadBase).
		{name: "an ARG declared without value over an unread base is refused whatever the case",
			df: "FROM example.com/windows\nARG foo\nLABEL f=[$FOO]", opt: windows, err: "$FOO is declared by an ARG with no value"},
		{name: "the stage's own --platform decides, not the image's",
			df:  "# escape=`\nFROM --platform=windows/amd64 windows-hostprocess-scratch AS w\nENV dir=C:\\out\nCOPY bin/hello ${DIR}\\\nFROM scratch\nCOPY --from=w /out/hello /h",
			opt: Options{Platforms: []string{"linux/amd64"}}, env: []string{"PATH=" + defaultPath}, wd: "/", layers: []string{"/h<-local:bin/hello"}},
		{name: "on Linux path and PATH are two variables", df: "FROM scratch\nENV path=/a PATH=/b\nLABEL l=$path u=$PATH",
			env: []string{"PATH=/b", "path=/a"}, labels: map[string]string{"l": "/a", "u": "/b"}, wd: "/"},
		{name: "on Linux a variable of another case is not found", df: "FROM scratch\nENV path=/a\nLABEL u=[$PATH] l=[${Path}]",
			env: []string{"PATH=" + defaultPath, "path=/a"}, labels: map[string]string{"u": "[" + defaultPath + "]", "l": "[]"}, wd: "/"},
		{name: "on Linux an ARG of another case is not declared", df: "FROM example.com/linux\nARG foo\nLABEL f=$FOO",
			err: "$FOO is not set by this Dockerfile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := planCase(t, map[string]string{"Dockerfile": tc.df + "\n", "bin/hello": "h"}, tc.opt, tc.err)
			if p == nil {
				return
			}
			c := p.Images[0].Platforms[0].Config
			if !reflect.DeepEqual(c.Env, tc.env) {
				t.Errorf("env %q, want %q", c.Env, tc.env)
			}
			if !reflect.DeepEqual(c.Labels, tc.labels) {
				t.Errorf("labels %q, want %q", c.Labels, tc.labels)
			}
			if c.Workdir != tc.wd {
				t.Errorf("workdir %q, want %q", c.Workdir, tc.wd)
			}
			if got := placements(t, p); !reflect.DeepEqual(got, tc.layers) {
				t.Errorf("layers %q, want %q", got, tc.layers)
			}
		})
	}
}
