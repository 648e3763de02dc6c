package dockerfile

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/platform"
)

// fakeBases answers ReadBase from a table of configs, by reference, and
// counts the reads.
type fakeBases struct {
	metas map[string]BaseMeta
	err   error
	asked []string
}

func (f *fakeBases) read(ref string, p platform.Platform) (BaseMeta, error) {
	f.asked = append(f.asked, ref+" "+p.String())
	if f.err != nil {
		return BaseMeta{}, f.err
	}
	m, ok := f.metas[ref]
	if !ok {
		return BaseMeta{}, errors.New("no such base")
	}
	return m, nil
}

const pinned = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// A word naming a variable the Dockerfile does not set, or a path relative
// to the base's working directory, has the base's config read, and is
// expanded as BuildKit's dockerfile2llb does with it (checked against
// BuildKit v0.29.0: the base's ENV seeds the stage, an ARG without a value
// leaves it, a Linux base without PATH is given BuildKit's, the base's
// WorkingDir is where relative paths start).
func TestDockerfileReadsBaseWhenNeeded(t *testing.T) {
	bases := map[string]BaseMeta{
		"example.com/base:1": {Env: []string{"PATH=/usr/bin:/bin", "V=x"}, WorkingDir: "/app", Digest: pinned},
		"example.com/bare":   {Digest: pinned},
		"oci:layout":         {Env: []string{"V=fromlayout"}, WorkingDir: "srv", Digest: pinned},
		"example.com/win":    {Env: []string{`Path=C:\Windows\system32;C:\Windows`}, WorkingDir: `C:\app`, Digest: pinned},
	}
	windows := Options{Platforms: []string{"windows/amd64"}}
	tests := []struct {
		name    string
		df      string
		opt     Options
		env     []string
		labels  map[string]string
		workdir string
		base    string
		asked   []string
		dest    string
	}{
		{name: "ENV PATH on the base's PATH", df: "FROM example.com/base:1\nENV PATH=/opt/bin:$PATH",
			env: []string{"PATH=/opt/bin:/usr/bin:/bin"}, workdir: "/app", base: "example.com/base:1@" + pinned, asked: []string{"example.com/base:1 linux/amd64"}},
		{name: "ARG without a value leaves the base's ENV", df: "FROM example.com/base:1\nARG V\nLABEL v=$V",
			labels: map[string]string{"v": "x"}, workdir: "/app", base: "example.com/base:1@" + pinned, asked: []string{"example.com/base:1 linux/amd64"}},
		{name: "ARG without a value, the base without that ENV", df: "FROM example.com/bare\nARG V\nLABEL v=[$V]",
			env: []string{"PATH=" + defaultPath}, labels: map[string]string{"v": "[]"}, base: "example.com/bare@" + pinned, asked: []string{"example.com/bare linux/amd64"}},
		{name: "relative WORKDIR on the base's", df: "FROM example.com/base:1\nWORKDIR sub\nCOPY bin/hello .",
			workdir: "/app/sub", base: "example.com/base:1@" + pinned, asked: []string{"example.com/base:1 linux/amd64"}, dest: "/app/sub/"},
		{name: "relative destination on the base's", df: "FROM example.com/base:1\nCOPY bin/hello x/",
			workdir: "/app", base: "example.com/base:1@" + pinned, asked: []string{"example.com/base:1 linux/amd64"}, dest: "/app/x/"},
		{name: "a layout base is read and keeps its name", df: "FROM oci:layout\nLABEL v=$V\nWORKDIR w",
			env: []string{"PATH=" + defaultPath}, labels: map[string]string{"v": "fromlayout"}, workdir: "/srv/w", base: "oci:layout", asked: []string{"oci:layout linux/amd64"}},
		{name: "a stage on the base reads it once", df: "FROM example.com/base:1 AS b\nENV A=1\nFROM b\nLABEL p=$PATH\nFROM b\nLABEL v=$V",
			env: []string{"A=1"}, labels: map[string]string{"v": "x"}, workdir: "/app", base: "example.com/base:1@" + pinned, asked: []string{"example.com/base:1 linux/amd64"}},
		{name: "Windows, Path whatever the case", df: "# escape=`\nFROM example.com/win\nENV PATH=C:\\tools;$PATH\nWORKDIR sub", opt: windows,
			env: []string{`PATH=C:\tools;C:\Windows\system32;C:\Windows`}, workdir: `\app\sub`, base: "example.com/win@" + pinned, asked: []string{"example.com/win windows/amd64"}},
		{name: "a Dockerfile that needs nothing of the base reads nothing", df: "FROM example.com/base:1\nENV A=1\nLABEL a=$A\nWORKDIR /w\nCOPY bin/hello .",
			env: []string{"A=1"}, labels: map[string]string{"a": "1"}, workdir: "/w", base: "example.com/base:1", dest: "/w/"},
		{name: "a base named by digest stays so", df: "FROM example.com/base:1@" + pinned + "\nLABEL v=$V",
			labels: map[string]string{"v": "x"}, workdir: "/app", base: "example.com/base:1@" + pinned, asked: []string{"example.com/base:1@" + pinned + " linux/amd64"}},
	}
	bases["example.com/base:1@"+pinned] = bases["example.com/base:1"]
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBases{metas: bases}
			tc.opt.ReadBase = f.read
			p := planCase(t, map[string]string{"Dockerfile": tc.df + "\n", "bin/hello": "h"}, tc.opt, "")
			pi := p.Images[0].Platforms[0]
			if !slices.Equal(pi.Config.Env, tc.env) {
				t.Errorf("env %q, want %q", pi.Config.Env, tc.env)
			}
			if tc.labels != nil && !reflect.DeepEqual(pi.Config.Labels, tc.labels) {
				t.Errorf("labels %q, want %q", pi.Config.Labels, tc.labels)
			}
			if pi.Config.Workdir != tc.workdir {
				t.Errorf("workdir %q, want %q", pi.Config.Workdir, tc.workdir)
			}
			if !slices.Equal(pi.Bases, []string{tc.base}) {
				t.Errorf("bases %q, want %q", pi.Bases, tc.base)
			}
			if !slices.Equal(f.asked, tc.asked) {
				t.Errorf("read %q, want %q", f.asked, tc.asked)
			}
			if tc.dest != "" {
				var dests []string
				for _, l := range pi.Layers {
					for _, pm := range l.Placements {
						dests = append(dests, pm.Dest)
					}
				}
				if !slices.Contains(dests, tc.dest) {
					t.Errorf("placed at %q, want %q", dests, tc.dest)
				}
			}
		})
	}
}

// A base that cannot be read when a word needs it is said at its FROM
// line, with the reason and what needed it: never expanded as empty.
func TestDockerfileBaseUnreadable(t *testing.T) {
	for _, tc := range []struct{ df, want string }{
		{"# c\nFROM example.com/base\nENV PATH=/opt:$PATH", "FROM example.com/base: reading the base image's config for linux/amd64, which $PATH (not set by this Dockerfile) needs: registry down"},
		{"# c\nFROM example.com/base\nARG V\nLABEL v=$V", "which $V (an ARG with no value) needs: registry down"},
		{"# c\nFROM oci:layout\nWORKDIR sub", "FROM oci:layout: reading the base image's config for linux/amd64, which the relative WORKDIR sub of line 3 needs: registry down"},
		{"# c\nFROM example.com/base\nCOPY bin/hello x/", "which the relative destination x/ of line 3 needs"},
	} {
		f := &fakeBases{err: errors.New("registry down")}
		_, err := planFiles(t, map[string]string{"Dockerfile": tc.df + "\n", "bin/hello": "h"}, Options{ReadBase: f.read})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%q: error %v, want %q", tc.df, err, tc.want)
		}
		if pe := located(t, err); pe.Pos.Line != 2 {
			t.Errorf("%q: error at line %d, want the FROM's, 2: %v", tc.df, pe.Pos.Line, err)
		}
		if len(f.asked) != 1 {
			t.Errorf("%q: read %q, want once", tc.df, f.asked)
		}
	}
}

// Each platform reads its own base, as BuildKit resolves the base per
// platform.
func TestDockerfileReadsBasePerPlatform(t *testing.T) {
	f := &fakeBases{metas: map[string]BaseMeta{"example.com/base": {Env: []string{"PATH=/p"}}}}
	p := planCase(t, map[string]string{"Dockerfile": "FROM example.com/base\nENV PATH=/x:$PATH\n"},
		Options{Platforms: []string{"linux/amd64,linux/arm64"}, ReadBase: f.read}, "")
	want := []string{"example.com/base linux/amd64", "example.com/base linux/arm64"}
	if !slices.Equal(f.asked, want) {
		t.Errorf("read %q, want %q", f.asked, want)
	}
	for _, pi := range p.Images[0].Platforms {
		if !slices.Equal(pi.Config.Env, []string{"PATH=/x:/p"}) {
			t.Errorf("%s: env %q", pi.Platform, pi.Config.Env)
		}
		// No digest given: nothing to pin.
		if !slices.Equal(pi.Bases, []string{"example.com/base"}) {
			t.Errorf("%s: bases %q", pi.Platform, pi.Bases)
		}
	}
}

// EXPOSE reads the base as any word does: $PORT is the base's ENV.
func TestDockerfileExposeReadsBase(t *testing.T) {
	f := &fakeBases{metas: map[string]BaseMeta{"example.com/base": {Env: []string{"PORT=8080"}}}}
	p := planCase(t, map[string]string{"Dockerfile": "FROM example.com/base\nEXPOSE 80 $PORT\n"}, Options{ReadBase: f.read}, "")
	if got := slices.Sorted(slices.Values(p.Images[0].Platforms[0].Config.ExposedPorts)); !slices.Equal(got, []string{"80/tcp", "8080/tcp"}) {
		t.Errorf("exposed %q, want 80/tcp and 8080/tcp", got)
	}
}

// A base's working directory BuildKit refuses (on another drive than C:)
// is refused at the FROM line, not passed over.
func TestDockerfileBaseWorkdirRefused(t *testing.T) {
	f := &fakeBases{metas: map[string]BaseMeta{"example.com/win": {WorkingDir: `D:\app`}}}
	_, err := planFiles(t, map[string]string{"Dockerfile": "FROM example.com/win\nWORKDIR sub\n"}, Options{Platforms: []string{"windows/amd64"}, ReadBase: f.read})
	if err == nil || !strings.Contains(err.Error(), `FROM example.com/win: the base's working directory "D:\\app": `) {
		t.Fatalf("error %v, want the base's working directory refused", err)
	}
	if pe := located(t, err); pe.Pos.Line != 1 {
		t.Errorf("error at line %d, want 1", pe.Pos.Line)
	}
}
