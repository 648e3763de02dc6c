package dockerfile

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/platform"
)

// A COPY --from an earlier stage is flattened into placements of the
// files the stage's own COPY and ADD took.
func TestDockerfileCopyFromStage(t *testing.T) {
	files := map[string]string{
		"bin/hello": "h", "bin/tool": "t", "conf/a.conf": "a", "conf/sub/b.conf": "b", "override.conf": "o",
		"x.tar": tarOf(t, "inner/file"),
	}
	tests := []placementCase{
		{"a file", "FROM scratch AS build\nCOPY bin/ /out/\nFROM scratch\nCOPY --from=build /out/hello /usr/bin/",
			[]string{"/usr/bin/<-local:bin/hello"}, ""},
		{"a file renamed in the stage keeps its stage name", "FROM scratch AS build\nCOPY bin/hello /out/renamed\nFROM scratch\nCOPY --from=build /out/renamed /usr/bin/",
			[]string{"/usr/bin/renamed<-local:bin/hello"}, ""},
		{"a directory made of several COPYs", "FROM scratch AS build\nCOPY bin /out/bin/\nCOPY conf /out/etc/\nCOPY bin/tool /out/\nFROM scratch\nCOPY --from=build /out /app",
			[]string{"/app/bin/<-local:bin, /app/etc/<-local:conf, /app/tool<-local:bin/tool"}, ""},
		{"a directory inside what the stage copied", "FROM scratch AS build\nCOPY conf /etc/app/\nFROM scratch\nCOPY --from=build /etc/app/sub /etc/sub",
			[]string{"/etc/sub/<-local:conf/sub"}, ""},
		{"by stage index", "FROM scratch\nCOPY bin/hello /h\nFROM scratch\nCOPY --from=0 /h /x",
			[]string{"/x<-local:bin/hello"}, ""},
		{"owner and mode are kept, or replaced", "FROM scratch AS s\nCOPY --chown=5:6 --chmod=700 bin/hello /a/\nCOPY bin/tool /a/\nFROM scratch\nCOPY --from=s /a /b/\nCOPY --from=s --chown=1:1 /a/tool /c/",
			[]string{"/b/hello<-local:bin/hello mode=700 owner=5:6, /b/tool<-local:bin/tool", "/c/<-local:bin/tool owner=1:1"}, ""},
		{"a file replaced later in the stage is left out of the earlier copy", "FROM scratch AS s\nCOPY conf /etc/app/\nCOPY override.conf /etc/app/a.conf\nFROM scratch\nCOPY --from=s /etc/app /etc/app/",
			[]string{"/etc/app/<-filtered:conf, /etc/app/a.conf<-local:override.conf"}, ""},
		{"stages chain", "FROM scratch AS a\nCOPY bin /bin/\nFROM a AS b\nCOPY conf /etc/\nFROM scratch\nCOPY --from=b / /",
			[]string{"/bin/<-local:bin, /etc/<-local:conf"}, ""},
		{"an archive copied whole", "FROM scratch AS s\nADD x.tar /opt/x/\nFROM scratch\nCOPY --from=s /opt /opt",
			[]string{"/opt/x/<-unpack:x.tar"}, ""},
		{"a pattern over the stage's paths", "FROM scratch AS s\nCOPY bin/ /out/\nFROM scratch\nCOPY --from=s /out/h* /b/",
			[]string{"/b/<-local:bin/hello"}, ""},
		{"--chmod reaches the files a stage unpacked, copied from it", "FROM scratch AS s\nADD --chmod=700 x.tar /opt/x/\nFROM scratch\nCOPY --from=s --chmod=755 /opt/x /y/",
			[]string{"/y/<-unpack:x.tar mode=755"}, ""},
		{"into an archive is refused", "FROM scratch AS s\nADD x.tar /opt/x/\nFROM scratch\nCOPY --from=s /opt/x/inner /i",
			nil, "inside the archive unpacked at /opt/x"},
		{"a stage on an image lists only what it copied", "FROM example.com/tools AS s\nCOPY bin/ /out/\nFROM scratch\nCOPY --from=s /usr/bin/tool /t",
			nil, "the files of its base example.com/tools are not read"},
		{"a directory of a stage on an image is refused: the base's part is unknown", "FROM example.com/tools AS s\nCOPY conf/ /etc/\nFROM scratch\nCOPY --from=s /etc/ /x/",
			nil, "/etc is a directory of stage s, whose base example.com/tools pallet does not read"},
		{"so is one the stage's COPY made, and the root", "FROM oci:base AS s\nCOPY conf/ /opt/conf/\nFROM scratch\nCOPY --from=s / /x/",
			nil, "/ is a directory of stage s, whose base oci:base pallet does not read"},
		{"and one of a stage continued", "FROM example.com/tools AS a\nCOPY conf/ /etc/\nFROM a AS b\nCOPY bin/ /etc/bin/\nFROM scratch\nCOPY --from=b /etc /x/",
			nil, "stage b, whose base example.com/tools pallet does not read: BuildKit copies all the stage holds there, what the base holds too, and pallet knows only what the stage's COPY and ADD put there (line 2, 4)"},
		{"and a pattern over such a stage", "FROM example.com/tools AS s\nCOPY bin/ /out/\nFROM scratch\nCOPY --from=s /out/h* /b/",
			nil, "a pattern over stage s, whose base example.com/tools pallet does not read"},
		{"a file of such a stage is known", "FROM example.com/tools AS s\nCOPY bin/ /out/\nFROM scratch\nCOPY --from=s /out/hello /b/",
			[]string{"/b/<-local:bin/hello"}, ""},
		{"a directory of a stage continued from scratch is known", "FROM scratch AS a\nCOPY conf/ /etc/\nFROM a AS b\nCOPY bin/ /etc/bin/\nFROM scratch\nCOPY --from=b /etc /x/",
			[]string{"/x/<-local:conf, /x/bin/<-local:bin"}, ""},
		{"an unreached stage may RUN", "FROM scratch AS unused\nRUN make\nFROM scratch\nCOPY bin/hello /",
			[]string{"/<-local:bin/hello"}, ""},
		{"a reached stage may not", "FROM scratch AS build\nRUN make\nFROM scratch\nCOPY --from=build /x /",
			nil, "This RUN is in stage build, which the COPY --from at line 4 needs (only the stages the target needs are read)"},
	}
	checkPlacements(t, files, "", tests)
}

// The flattened copy of a stage directory whose file was replaced holds
// the replacement only.
func TestDockerfileCopyFromStageOmits(t *testing.T) {
	p := mustPlan(t, map[string]string{"conf/a.conf": "a", "conf/b.conf": "b", "new.conf": "n",
		"Dockerfile": "FROM scratch AS s\nCOPY conf /etc/\nCOPY new.conf /etc/a.conf\nFROM scratch\nCOPY --from=s /etc /etc\n"}, Options{})
	pm := p.Images[0].Platforms[0].Layers[0].Placements[0]
	k := p.Artifacts[pm.Artifact].Kind.(*localDir)
	entries, _, err := scan(k.Path, k.filter)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].rel != "b.conf" {
		t.Errorf("flattened directory holds %v, want b.conf alone", entries)
	}
}

// FROM a stage continues it: its layers, config and base.
func TestDockerfileFromStage(t *testing.T) {
	p := mustPlan(t, map[string]string{"bin/hello": "h", "Dockerfile": `FROM windows-hostprocess-scratch AS base
ENV A=1
CMD ["a"]
COPY bin/hello /k/
FROM base
ENTRYPOINT ["e"]
LABEL l=2
COPY bin/hello /j/
`}, Options{Platforms: []string{"windows/amd64"}})
	pi := p.Images[0].Platforms[0]
	if pi.Bases[0] != image.HostProcessScratch || len(pi.Layers) != 2 || pi.Platform.String() != "windows/amd64" {
		t.Fatalf("bases %v, %d layers, %s", pi.Bases, len(pi.Layers), pi.Platform)
	}
	c := pi.Config
	if !reflect.DeepEqual(c.Env, []string{"A=1"}) || !reflect.DeepEqual(c.Entrypoint, []string{"e"}) || c.Cmd != nil || c.Labels["l"] != "2" {
		t.Errorf("config %+v: a new ENTRYPOINT drops the inherited CMD; no PATH is added on Windows", c)
	}
	if pi.BasePos.Line != 1 {
		t.Errorf("base position %s, want the root stage's FROM", pi.BasePos)
	}
}

func TestDockerfileConfig(t *testing.T) {
	tests := []struct {
		name, df string
		plat     string
		check    func(c image.Config) bool
	}{
		{"PATH on an empty Linux base, as BuildKit", "FROM scratch", "", func(c image.Config) bool {
			return reflect.DeepEqual(c.Env, []string{"PATH=" + defaultPath})
		}},
		{"ENV replaces in place", "FROM scratch\nENV PATH=/bin A=1\nENV PATH=/x", "", func(c image.Config) bool {
			return reflect.DeepEqual(c.Env, []string{"PATH=/x", "A=1"})
		}},
		{"ENV names keep their case on Linux", "FROM scratch\nENV Path=/x", "", func(c image.Config) bool {
			return reflect.DeepEqual(c.Env, []string{"PATH=" + defaultPath, "Path=/x"})
		}},
		{"ENV names are one variable whatever their case on Windows", "# escape=`\nFROM windows-hostprocess-scratch\nENV PATH=C:\\a A=1\nENV Path=C:\\k", "windows/amd64", func(c image.Config) bool {
			return reflect.DeepEqual(c.Env, []string{`Path=C:\k`, "A=1"})
		}},
		{"no PATH on an image base, whose own pallet does not read", "FROM example.com/base", "", func(c image.Config) bool { return c.Env == nil }},
		{"the working directory of scratch is /, as BuildKit's", "FROM scratch", "", func(c image.Config) bool { return c.Workdir == "/" }},
		{"and on Windows, as BuildKit writes it", "FROM scratch", "windows/amd64", func(c image.Config) bool { return c.Workdir == `\` }},
		{"an image base's is its own", "FROM example.com/base", "", func(c image.Config) bool { return c.Workdir == "" }},
		{"shell form on Linux", "FROM scratch\nCMD echo $HOME  hi", "", func(c image.Config) bool {
			return reflect.DeepEqual(c.Cmd, []string{"/bin/sh", "-c", "echo $HOME  hi"})
		}},
		{"shell form on Windows", "FROM windows-hostprocess-scratch\nENTRYPOINT agent.exe --v=2", "windows/amd64", func(c image.Config) bool {
			return reflect.DeepEqual(c.Entrypoint, []string{"cmd", "/S", "/C", "agent.exe --v=2"})
		}},
		{"JSON form, CMD kept when set in the stage", "FROM scratch\nCMD [\"--help\"]\nENTRYPOINT [\"/app\"]", "", func(c image.Config) bool {
			return reflect.DeepEqual(c.Cmd, []string{"--help"}) && reflect.DeepEqual(c.Entrypoint, []string{"/app"})
		}},
		{"ENTRYPOINT [] clears it", "FROM example.com/base\nENTRYPOINT []", "", func(c image.Config) bool {
			return c.Entrypoint != nil && len(c.Entrypoint) == 0 && c.Cmd == nil
		}},
		{"EXPOSE ranges and protocols", "FROM scratch\nARG P=9000\nEXPOSE 80 53/UDP 8000-8002 $P", "", func(c image.Config) bool {
			return reflect.DeepEqual(slices.Sorted(slices.Values(c.ExposedPorts)), []string{"53/udp", "80/tcp", "8000/tcp", "8001/tcp", "8002/tcp", "9000/tcp"})
		}},
		{"EXPOSE of every port, in linear time", "FROM scratch\nEXPOSE 1-65535 1-65535/udp 80", "", func(c image.Config) bool {
			return len(c.ExposedPorts) == 2*65535
		}},
		{"WORKDIR, USER, STOPSIGNAL", "FROM scratch\nWORKDIR /a\nWORKDIR b\nUSER 1000:1000\nSTOPSIGNAL SIGINT", "", func(c image.Config) bool {
			return c.Workdir == "/a/b" && c.User == "1000:1000" && c.StopSignal == "SIGINT"
		}},
		{"STOPSIGNAL in any case, as BuildKit's table reads it", "FROM scratch\nSTOPSIGNAL rtmin+3", "", func(c image.Config) bool { return c.StopSignal == "rtmin+3" }},
		{"WORKDIR on Windows", "# escape=`\nFROM windows-hostprocess-scratch\nWORKDIR C:\\k\\antrea", "windows/amd64", func(c image.Config) bool {
			return c.Workdir == `\k\antrea`
		}},
		{"lint directives in comments are read, not obeyed", "# check=skip=all\nFROM scratch\n# check=skip=JSONArgsRecommended\nCMD echo hi", "", func(c image.Config) bool {
			return reflect.DeepEqual(c.Cmd, []string{"/bin/sh", "-c", "echo hi"})
		}},
		{"labels with quotes and spaces", "FROM scratch\nLABEL \"a b\"=\"c d\" e=f", "", func(c image.Config) bool {
			return c.Labels["a b"] == "c d" && c.Labels["e"] == "f"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opt := Options{}
			if tc.plat != "" {
				opt.Platforms = []string{tc.plat}
			}
			p := mustPlan(t, map[string]string{"Dockerfile": tc.df + "\n"}, opt)
			if c := p.Images[0].Platforms[0].Config; !tc.check(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

// WORKDIR makes its directory as a layer on an empty base, owned by the
// USER so far, as BuildKit does.
func TestDockerfileWorkdirLayer(t *testing.T) {
	p := mustPlan(t, map[string]string{"Dockerfile": "FROM scratch\nWORKDIR /\nUSER 7\nWORKDIR /app\nWORKDIR /app\nFROM example.com/base\nWORKDIR /srv\n"}, Options{})
	if got := placements(t, p); len(got) != 0 {
		t.Errorf("an image base gets no WORKDIR layer: %q", got)
	}
	p = mustPlan(t, map[string]string{"Dockerfile": "FROM scratch\nWORKDIR /\nUSER 7\nWORKDIR /app\nWORKDIR /app\nUSER nobody\nWORKDIR /home\n"}, Options{})
	want := []string{"/app/<-mkdir owner=7:7", "/home/<-mkdir"}
	if got := placements(t, p); !reflect.DeepEqual(got, want) {
		t.Errorf("layers %q, want %q", got, want)
	}
	// An absolute path through .. makes the directory it leads to; the
	// config keeps it as written, as BuildKit's.
	p = mustPlan(t, map[string]string{"Dockerfile": "FROM scratch\nWORKDIR /app/../b\nWORKDIR /c/\n"}, Options{})
	want = []string{"/b/<-mkdir", "/c/<-mkdir"}
	if got := placements(t, p); !reflect.DeepEqual(got, want) {
		t.Errorf("layers %q, want %q", got, want)
	}
}

func TestDockerfilePlatforms(t *testing.T) {
	plats := func(t *testing.T, df string, opt Options) []string {
		t.Helper()
		p := mustPlan(t, map[string]string{"Dockerfile": df + "\n", "bin/app-amd64": "a", "bin/app-arm64": "b"}, opt)
		var out []string
		for _, pi := range p.Images[0].Platforms {
			var dests []string
			for _, l := range pi.Layers {
				for _, pm := range l.Placements {
					a := p.Artifacts[pm.Artifact]
					if a.Platform != pi.Platform {
						t.Errorf("artifact %s requested for %s in the %s image", a.Name, a.Platform, pi.Platform)
					}
					dests = append(dests, a.Name)
				}
			}
			out = append(out, pi.Platform.String()+":"+strings.Join(dests, ","))
		}
		return out
	}
	const perArch = "FROM --platform=$TARGETPLATFORM scratch\nARG TARGETARCH\nCOPY bin/app-$TARGETARCH /app"
	if got := plats(t, perArch, Options{}); !reflect.DeepEqual(got, []string{"linux/amd64:bin-app-amd64"}) {
		t.Errorf("default platform: %v", got)
	}
	if got := plats(t, perArch, Options{Platforms: []string{"linux/amd64,linux/arm64"}}); !reflect.DeepEqual(got, []string{"linux/amd64:bin-app-amd64", "linux/arm64:bin-app-arm64"}) {
		t.Errorf("two platforms: %v", got)
	}
	if got := plats(t, "FROM --platform=linux/arm64 scratch\nARG TARGETARCH\nCOPY bin/app-$TARGETARCH /app", Options{}); !reflect.DeepEqual(got, []string{"linux/arm64:bin-app-arm64"}) {
		t.Errorf("a fixed FROM --platform is the default: %v", got)
	}
	if got := plats(t, "FROM --platform=$BUILDPLATFORM scratch\nCOPY bin/app-arm64 /app", Options{BuildPlatform: "linux/arm64"}); !reflect.DeepEqual(got, []string{"linux/arm64:bin-app-arm64"}) {
		t.Errorf("BUILDPLATFORM: %v", got)
	}
	_, err := planFiles(t, map[string]string{"Dockerfile": "FROM --platform=linux/arm64 scratch\n"}, Options{Platforms: []string{"linux/amd64"}})
	if pe := located(t, err); !strings.Contains(pe.Msg, "use FROM --platform=$TARGETPLATFORM") || pe.Line != 1 || pe.Col != 6 {
		t.Errorf("conflict: %v at %s", err, pe.Pos)
	}
	p := mustPlan(t, map[string]string{"Dockerfile": "FROM scratch\nCMD x\n"}, Options{Platforms: []string{"windows/amd64"}})
	if pi := p.Images[0].Platforms[0]; pi.Platform != (platform.Platform{OS: "windows", Arch: "amd64"}) || pi.Config.Cmd[0] != "cmd" || pi.Config.Env != nil {
		t.Errorf("windows from scratch: %+v", pi)
	}
}

func TestDockerfileTargetAndName(t *testing.T) {
	df := map[string]string{"Dockerfile": "FROM scratch AS first\nLABEL s=1\nFROM scratch AS Second\nLABEL s=2\n"}
	p := mustPlan(t, df, Options{Target: "first"})
	if im := p.Images[0]; im.Repository != "first" || im.Platforms[0].Config.Labels["s"] != "1" || im.Tags[0] != "latest" {
		t.Errorf("target first: %+v", im)
	}
	if _, err := planFiles(t, df, Options{Target: "third"}); err == nil || !strings.Contains(err.Error(), "stages: first, second") {
		t.Errorf("unknown target: %v", err)
	}
	p = mustPlan(t, df, Options{})
	if im := p.Images[0]; im.Platforms[0].Config.Labels["s"] != "2" || im.Repository == "" || strings.ContainsAny(im.Repository, "/ ") {
		t.Errorf("last stage: %+v", im)
	}
}

// --platform windows, which a recipe takes for each of its Windows
// platforms, is refused with the platform to give instead.
func TestPlatformSelectionNeedsArch(t *testing.T) {
	files := map[string]string{"Dockerfile": "FROM scratch\n"}
	for sel, want := range map[string]string{
		"windows":     `"windows" is an OS; a Dockerfile build is given platforms (windows/amd64)`,
		"linux/amd46": `unknown platform "linux/amd46"`,
		"solaris":     `want os/arch`,
	} {
		if _, err := planFiles(t, files, Options{Platforms: []string{sel}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--platform %s: %v, want %q", sel, err, want)
		}
	}
}

// A file copied to a name without a trailing / goes, as in Docker, into
// the directory the base may hold there: the plan says so, and the
// build, reading the base, decides. What the stage's own COPYs made
// there, or an empty base, the plan knows.
func TestDockerfileCopyIntoBaseDir(t *testing.T) {
	files := map[string]string{"bin/hello": "h", "bin/tool": "t", "conf/a.conf": "a"}
	tests := []placementCase{
		{"on an image base", "FROM example.com/base\nCOPY bin/hello /usr/bin\nCOPY bin/hello /usr/bin/\nCOPY bin/tool /usr/bin",
			[]string{"/usr/bin into=hello<-local:bin/hello", "/usr/bin/<-local:bin/hello", "/usr/bin into=tool<-local:bin/tool"}, ""},
		{"renamed", "FROM example.com/base\nCOPY bin/hello /opt/app",
			[]string{"/opt/app into=hello<-local:bin/hello"}, ""},
		{"a download", "FROM example.com/base\nADD --checksum=sha256:" + strings.Repeat("a", 64) + " https://example.com/dl/tool.bin /usr/local/bin",
			[]string{"/usr/local/bin into=tool.bin<-url:https://example.com/dl/tool.bin mode=600"}, ""},
		{"on scratch", "FROM scratch\nCOPY bin/hello /usr/bin",
			[]string{"/usr/bin<-local:bin/hello"}, ""},
		{"a file the stage placed is replaced", "FROM example.com/base\nCOPY bin/ /out/\nCOPY bin/tool /out/hello",
			[]string{"/out/<-local:bin", "/out/hello<-local:bin/tool"}, ""},
		{"a directory the stage made is copied into", "FROM example.com/base\nCOPY conf /etc/app/\nCOPY bin/hello /etc/app",
			[]string{"/etc/app/<-local:conf", "/etc/app/<-local:bin/hello"}, ""},
		{"a directory is not a file", "FROM example.com/base\nCOPY conf /etc/app",
			[]string{"/etc/app/<-local:conf"}, ""},
		{"a stage continued keeps not knowing", "FROM example.com/base AS a\nCOPY bin/hello /usr/bin\nFROM a\nCOPY bin/tool /usr/bin",
			[]string{"/usr/bin into=hello<-local:bin/hello", "/usr/bin into=tool<-local:bin/tool"}, ""},
		{"copying such a file from the stage is refused", "FROM example.com/base AS s\nCOPY bin/hello /usr/bin\nFROM scratch\nCOPY --from=s /usr/bin/hello /h",
			nil, "into the directory there if its base example.com/base holds one"},
		{"and the file's name", "FROM example.com/base AS s\nCOPY bin/hello /usr/bin\nFROM scratch\nCOPY --from=s /usr/bin /h",
			nil, "stage s copies hello to /usr/bin (line 2)"},
		{"and a directory above it", "FROM example.com/base AS s\nCOPY bin/hello /usr/bin\nCOPY conf /etc/\nFROM scratch\nCOPY --from=s / /",
			nil, "cannot tell where the file is"},
		{"other paths of the stage are not", "FROM example.com/base AS s\nCOPY bin/hello /usr/bin\nCOPY conf /etc/\nFROM scratch\nCOPY --from=s /etc/a.conf /etc/",
			[]string{"/etc/<-local:conf/a.conf"}, ""},
	}
	checkPlacements(t, files, "", tests)
}

// A COPY that needs a directory where an earlier COPY of the stage put a
// file is refused, as BuildKit's copy fails there ("not a directory"),
// instead of a layer that replaces the file with a directory. A file
// replacing a file is a later COPY's right.
func TestDockerfileDirectoryOverFile(t *testing.T) {
	files := map[string]string{"bin/hello": "h", "bin/tool": "t", "conf/a.conf": "a", "conf/sub/b.conf": "b",
		"x.tar": tarOf(t, "inner/file")}
	tests := []placementCase{
		{"a directory onto a file", "FROM scratch\nCOPY conf/a.conf /etc/passwd\nCOPY conf/ /etc/passwd",
			nil, "/etc/passwd is a file, put there by line 2 (conf/a.conf), and this COPY would put a directory there"},
		{"into a file", "FROM scratch\nCOPY bin/hello /m/k\nCOPY bin/tool /m/k/",
			nil, "/m/k is a file, put there by line 2 (bin/hello), and this COPY needs a directory there to place /m/k/tool"},
		{"under a file", "FROM scratch\nCOPY bin/hello /m/k\nCOPY bin/tool /m/k/x/y",
			nil, "/m/k is a file, put there by line 2 (bin/hello), and this COPY needs a directory there to place /m/k/x/y"},
		{"a directory inside the copy onto a file", "FROM scratch\nCOPY bin/tool /x/sub\nCOPY conf/ /x/",
			nil, "/x/sub is a file, put there by line 2 (bin/tool), and this COPY would put a directory there"},
		{"into a file of a copied directory", "FROM scratch\nCOPY conf/ /etc/\nCOPY bin/ /etc/a.conf/",
			nil, "/etc/a.conf is a file, put there by line 2 (conf/a.conf)"},
		{"an archive onto a file", "FROM scratch\nCOPY bin/hello /opt\nADD x.tar /opt/",
			nil, "/opt is a file, put there by line 2 (bin/hello), and this ADD would put a directory there"},
		{"in a stage continued", "FROM scratch AS a\nCOPY bin/hello /k\nFROM a\nCOPY conf /k/",
			nil, "/k is a file, put there by line 2"},
		{"a file copied from a stage", "FROM scratch AS s\nCOPY bin/hello /h\nFROM scratch\nCOPY --from=s /h /k\nCOPY conf /k/",
			nil, "/k is a file, put there by line 4 (bin/hello)"},
		{"WORKDIR under a file", "FROM scratch\nCOPY bin/hello /w\nWORKDIR /w/sub",
			nil, "/w is a file, put there by line 2 (bin/hello), and the working directory /w/sub needs a directory there"},
		{"WORKDIR at a file, on an image base too", "FROM example.com/base\nCOPY bin/hello /w/\nWORKDIR /w/hello",
			nil, "/w/hello is a file, put there by line 2 (bin/hello)"},
		{"a file replaces a file", "FROM scratch\nCOPY bin/hello /m/k\nCOPY bin/tool /m/k",
			[]string{"/m/k<-local:bin/hello", "/m/k<-local:bin/tool"}, ""},
		{"a file that may have gone into a directory of the base", "FROM example.com/base\nCOPY bin/hello /usr/bin\nCOPY bin/tool /usr/bin/",
			[]string{"/usr/bin into=hello<-local:bin/hello", "/usr/bin/<-local:bin/tool"}, ""},
	}
	checkPlacements(t, files, "", tests)
}

// The directories a COPY --chown makes on its way are its owner's, as
// BuildKit makes them, and so are those a WORKDIR makes as the USER; a
// COPY --from makes its destination and the directories above it 0:0,
// not the stage's owner's (plan.Placement.StageMade), and Windows reads
// no owner.
func TestDockerfileOwnNewDirs(t *testing.T) {
	files := map[string]string{"bin/hello": "h"}
	for _, tc := range []struct {
		name, df, plat string
		want           []bool
	}{
		{"COPY --chown", "FROM scratch\nCOPY --chown=7:8 bin/hello /a/b/\nCOPY bin/hello /c/d", "", []bool{true, false}},
		{"COPY --from", "FROM scratch AS s\nCOPY --chown=7 bin/hello /h\nFROM scratch\nCOPY --from=s /h /x/y\nCOPY --from=s --chown=9 /h /z/", "", []bool{false, true}},
		{"WORKDIR as a USER", "FROM scratch\nWORKDIR /w\nUSER 7\nWORKDIR /a/b", "", []bool{false, true}},
		{"on Windows", "FROM windows-hostprocess-scratch\nCOPY --chown=7 bin/hello /a/", "windows/amd64", []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": tc.df + "\n"}
			for k, v := range files {
				fs[k] = v
			}
			opt := Options{}
			if tc.plat != "" {
				opt.Platforms = []string{tc.plat}
			}
			var got []bool
			for _, l := range mustPlan(t, fs, opt).Images[0].Platforms[0].Layers {
				pm := l.Placements[0]
				if pm.StageDest != "" {
					got = append(got, pm.StageMade.UID != 0 || pm.StageMade.GID != 0)
					continue
				}
				got = append(got, pm.OwnNewDirs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OwnNewDirs by layer %v, want %v", got, tc.want)
			}
		})
	}
}
