package dockerfile

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// Every refusal and mistake is located at its line and at the column of
// the word at fault, and says what to do.
func TestDockerfileErrorsAt(t *testing.T) {
	files := map[string]string{"bin/hello": "x", "secret.key": "k", ".dockerignore": "*.key\n"}
	tests := []struct {
		name      string
		df        string
		line, col int
		want      string
	}{
		{"RUN names the artifact kind that replaces it", "FROM scratch\n  RUN go build -o /app ./cmd/app", 2, 3, "a `go` artifact"},
		{"RUN fetching Go modules", "FROM scratch\nRUN go mod download", 2, 1, "a `go` or `gomod` artifact downloads the modules it builds itself"},
		{"RUN downloading", "FROM scratch\nRUN curl -fsSL https://x/y -o /y", 2, 1, "a `url` artifact"},
		{"RUN of anything", "FROM scratch\nRUN echo hi > /x", 2, 1, "a `local` artifact"},
		{"RUN on a continuation line", "FROM scratch\nCOPY bin/hello /\nRUN echo a \\\n  && echo b", 3, 1, "RUN is not supported"},
		{"HEALTHCHECK", "FROM scratch\nHEALTHCHECK CMD true", 2, 1, "HEALTHCHECK is not supported"},
		{"VOLUME", "FROM scratch\nVOLUME /data", 2, 1, "VOLUME is not supported"},
		{"SHELL", `FROM scratch` + "\n" + `SHELL ["powershell", "-Command"]`, 2, 1, "JSON form"},
		{"ONBUILD", "FROM scratch\nONBUILD COPY . /", 2, 1, "ONBUILD is not supported"},
		{"a missing source, at its column", "FROM scratch\nCOPY bin/hello  nope/x /d/", 2, 17, "nope/x: not found in the build context"},
		{"a source climbing out of the context", "FROM scratch\nCOPY ../outside/x /d/", 2, 6, "a source cannot leave the context: .. stops at its root"},
		{"an ignored source", "FROM scratch\nCOPY secret.key /", 2, 6, "excluded from the build context"},
		{"a URL without checksum, at the URL", "FROM scratch\nADD --chmod=644 https://example.com/x.bin /x", 2, 17, "--checksum=sha256"},
		{"a named --chown, at the flag", "FROM scratch\nCOPY --chown=app:app bin/hello /", 2, 6, "numeric uid[:gid]"},
		{"a named --chown with --link, at the flag", "FROM scratch\nCOPY bin/hello /a\nCOPY --link --chown=app bin/hello /", 3, 13, "with --link, BuildKit copies into an empty layer"},
		{"a USER name for WORKDIR's directory on an untouched scratch stage", "FROM scratch\nUSER app\nWORKDIR /w", 3, 1, "holds nothing yet (FROM scratch"},
		{"a named --chown on an untouched scratch stage", "FROM scratch AS s\nFROM s\nCOPY --chown=0:staff bin/hello /", 3, 6, "holds nothing yet (FROM scratch"},
		{"a --chmod neither octal nor symbolic, at the flag", "FROM scratch\nCOPY --chmod=u+q bin/hello /", 2, 6, "neither an octal mode"},
		{"--from an image", "FROM scratch\nCOPY --from=golang:1.24 /usr/local/go /go", 2, 6, "not a stage of this Dockerfile"},
		{"--from a later stage", "FROM scratch AS a\nCOPY --from=b / /\nFROM scratch AS b\nFROM a", 2, 6, "not before this one"},
		{"--from with a variable", "ARG S=a\nFROM scratch AS a\nFROM scratch\nCOPY --from=$S / /", 4, 6, "variables are not expanded in --from"},
		{"--exclude with --from", "FROM scratch AS a\nCOPY bin/hello /b/\nFROM scratch\nCOPY --from=a --exclude=*.md /b /c/", 4, 15, "--exclude is not supported with --from"},
		{"--exclude with a lone !, at its flag", "FROM scratch\nCOPY --exclude=a \\\n  --exclude=! bin/hello /", 3, 3, `--exclude: pattern "!": illegal exclusion pattern`},
		{"--exclude with a class left open, at its flag", "FROM scratch\nCOPY --exclude=a --exclude=b[ bin/ /d/", 2, 18, `--exclude: pattern "b[": syntax error in pattern`},
		{"--exclude not UTF-8, at its flag", "FROM scratch\nCOPY --exclude=\"a \xffb\" bin/ /d/", 2, 6, `--exclude: pattern "a \xffb" is not valid UTF-8`},
		{"--exclude not UTF-8, unquoted, on a continuation line", "FROM scratch\nCOPY --exclude=x \\\n --exclude=a\xffb bin/ /d/", 3, 2, `--exclude: pattern "a\xffb" is not valid UTF-8`},
		{"--parents", "FROM scratch\nCOPY --parents bin/hello /", 2, 6, "--parents is not supported"},
		{"a file, then a directory, to one name", "FROM scratch\nCOPY bin/hello bin /x", 2, 1, "/x: BuildKit copies the sources there one after another: bin/hello, a file, is written at /x, and then bin, a directory, fails there (cannot copy to non-directory)"},
		{"one path placed by two sources, at the later", "FROM scratch\nCOPY bin/ bin/hello /d/", 2, 11, "/d/hello is placed by two sources of this COPY, bin and bin/hello: BuildKit copies the later over the earlier"},
		{"a global ARG used in a stage", "ARG V=1\nFROM scratch\nLABEL v=$V", 3, 1, "ARG of the global scope"},
		{"an automatic ARG used undeclared", "FROM scratch\nCOPY bin/hello /$TARGETARCH/", 2, 1, "ARG TARGETARCH"},
		{"a variable of an unread base", "FROM example.com/base\nENV PATH=/app:$PATH", 2, 1, "pallet does not read"},
		{"a relative destination on an unread base", "FROM example.com/base\nCOPY bin/hello app/", 2, 1, "relative to the working directory of the base"},
		{"the built-in Windows base on Linux", "FROM   windows-hostprocess-scratch", 1, 8, "a Windows base"},
		{"an unknown platform", "FROM --platform=linux/amd46 scratch", 1, 6, "unknown platform"},
		{"a base that is no reference, at the name", "FROM   ../images/base", 1, 8, `base "../images/base" is not scratch`},
		{"instructions before FROM", "LABEL a=b\nFROM scratch", 1, 1, "before the first FROM"},
		{"BuildKit's own parse errors", "FROM scratch\nCOPY onlyone", 2, 1, "COPY requires at least two arguments"},
		{"an unknown instruction", "FROM scratch\nFORM x", 2, 1, "unknown instruction"},
		{"a bad port", "FROM scratch\nEXPOSE 70000", 2, 1, "ports are 1 to 65535"},
		{"a stop signal no runtime knows, as BuildKit refuses it", "FROM scratch\nSTOPSIGNAL SIGFOO", 2, 1, `stop signal "SIGFOO" is no signal the runtime knows`},
		{"a here-document", "FROM scratch\nCOPY <<EOF /x\nhello\nEOF", 2, 1, "here-documents"},
		{"a directory onto a file, at the COPY", "FROM scratch\nCOPY bin/hello /k\n  COPY bin/ /k", 3, 3, "COPY: /k is a file, put there by line 2 (bin/hello), and this COPY would put a directory there"},
		{"a WORKDIR under a file", "FROM scratch\nCOPY bin/hello /k\nWORKDIR /k/w", 3, 1, "WORKDIR: /k is a file"},
		{"COPY --from a directory of a stage on an image, at the source", "FROM example.com/base AS a\nCOPY bin/ /usr/bin/\nFROM scratch\nCOPY --from=a  /usr/bin /b/", 4, 16, "/usr/bin is a directory of stage a, whose base example.com/base pallet does not read"},
		// Checked against BuildKit v0.29.0, which writes /a\b/hello, a file
		// /C:\app\ and a directory /w\x: names holding a \.
		{"a \\ in a Linux destination, with escape=`", "# escape=`\nFROM scratch\nCOPY bin/hello /a\\b/", 3, 1, `destination /a\b/ holds a \, which in a Linux image BuildKit writes as a character of the name`},
		{"a Windows destination in a Linux stage", "# escape=`\nFROM scratch\nCOPY bin/hello C:\\app\\", 3, 1, `destination /C:\app\ holds a \`},
		{"a \\ in a Linux WORKDIR on scratch", "# escape=`\nFROM scratch\nWORKDIR /w\\x", 3, 1, `the directory /w\x holds a \`},
		{"COPY --from a stage path it lacks", "FROM scratch AS a\nCOPY bin/hello /bin/\nFROM scratch\nCOPY --from=a /usr/bin/hello /", 4, 15, "/usr/bin/hello: not in stage a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": tc.df + "\n"}
			for k, v := range files {
				fs[k] = v
			}
			_, err := planFiles(t, fs, Options{})
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			pe := located(t, err)
			if !strings.Contains(pe.Error(), tc.want) {
				t.Errorf("error %q, want %q", pe.Error(), tc.want)
			}
			if !strings.HasSuffix(pe.File, "Dockerfile") || pe.Line != tc.line || pe.Col != tc.col {
				t.Errorf("at %s, want line %d col %d: %v", pe.Pos, tc.line, tc.col, err)
			}
		})
	}
}

// BuildKit resolves a --chown name in the /etc/passwd of what the COPY
// copies onto, and where that is an empty filesystem (a --link layer, or
// a scratch stage nothing has changed yet) its file op has no input to
// read it from (invalid user index: -1); once a COPY or WORKDIR made the
// stage's first layer, a name it does not find there is root, 0:0. root
// is no name: BuildKit's llb reads it as uid 0 (parseUID).
func TestChownNamesOnceTheStageHoldsALayer(t *testing.T) {
	for _, df := range []string{
		"FROM scratch\nWORKDIR /w\nCOPY --chown=nobody bin/hello /",
		"FROM scratch AS s\nCOPY nothing* /\nFROM s\nCOPY --chown=app:staff bin/hello /",
		"FROM scratch\nCOPY --chown=root:root bin/hello /",
		"FROM scratch\nCOPY --link --chown=root bin/hello /",
		"FROM scratch\nUSER root\nWORKDIR /w",
	} {
		if _, err := planFiles(t, map[string]string{"Dockerfile": df + "\n", "bin/hello": "x"}, Options{}); err != nil {
			t.Errorf("%q: %v", df, err)
		}
	}
}

// On a stage FROM scratch, a --chown name (and the USER that owns the
// directory WORKDIR makes) is read from the /etc/passwd and /etc/group
// the stage's COPYs put there from the build context, as BuildKit reads
// them in the stage's filesystem (solver/llbsolver/ops/user_linux.go
// readUser): a user name gives its uid and, without a group, its gid; a
// name the file lacks, or a file the stage lacks, leaves 0 (a group
// name then leaves the user's gid). Where the stage may hold one pallet
// cannot read (an unpacked archive, a base image), a name is refused.
func TestChownNamesFromTheStage(t *testing.T) {
	files := map[string]string{"bin/hello": "x", "passwd": "root:x:0:0::/root:/bin/sh\n# a comment\napp:x:1000:1001::/home/app:/sbin/nologin\nnobody:x:65534:65534:::\n",
		"group": "root:x:0:\nstaff:x:50:\n", "rootfs.tar": tarOf(t, "etc/passwd"), "passwd2": "root:x:0:1::/:\n"}
	for _, tc := range []struct{ df, want string }{
		{"COPY passwd /etc/passwd\nCOPY --chown=app bin/hello /a", "/a<-local:bin/hello owner=1000:1001"},
		{"COPY passwd /etc/\nCOPY group /etc/group\nCOPY --chown=nobody:staff bin/hello /a", "/a<-local:bin/hello owner=65534:50"},
		{"COPY passwd /etc/passwd\nCOPY --chown=7:staff bin/hello /a", "/a<-local:bin/hello owner=7:7"},
		{"COPY passwd /etc/passwd\nCOPY --chown=ghost bin/hello /a", "/a<-local:bin/hello"},
		{"WORKDIR /w\nCOPY --chown=app:staff bin/hello /a", "/a<-local:bin/hello"},
		{"COPY passwd2 /etc/passwd\nCOPY --chown=root:staff bin/hello /a", "/a<-local:bin/hello"},
		{"COPY passwd /etc/passwd\nUSER app\nWORKDIR /w", "/w/<-mkdir owner=1000:1001"},
	} {
		fs := map[string]string{"Dockerfile": "FROM scratch\n" + tc.df + "\n"}
		for k, v := range files {
			fs[k] = v
		}
		p, err := planFiles(t, fs, Options{})
		if err != nil {
			t.Errorf("%q: %v", tc.df, err)
			continue
		}
		got := placements(t, p)
		if got[len(got)-1] != tc.want {
			t.Errorf("%q: the last layer places %q, want %q", tc.df, got[len(got)-1], tc.want)
		}
	}
	for _, df := range []string{
		"FROM example.com/base\nCOPY --chown=app bin/hello /a",
		"FROM scratch\nADD rootfs.tar /\nCOPY --chown=app bin/hello /a",
	} {
		fs := map[string]string{"Dockerfile": df + "\n"}
		for k, v := range files {
			fs[k] = v
		}
		if _, err := planFiles(t, fs, Options{}); err == nil || !strings.Contains(err.Error(), "numeric uid[:gid]") {
			t.Errorf("%q: %v, want it refused", df, err)
		}
	}
}

// BuildKit reads the whole /etc/passwd or /etc/group (moby/sys/user's
// ParsePasswdFilter and ParseGroupFilter keep every match, the first
// wins) and fails on a line longer than its scanner takes (64 KiB in
// passwd, 1 MiB in group), after the name's line too: pallet fails
// there as well, at the --chown, naming the file, rather than take the
// ids BuildKit never gets to.
func TestChownNamesLongLineAfterTheEntry(t *testing.T) {
	files := map[string]string{"bin/hello": "x",
		"passwd":  "app:x:1000:1001::/:\n" + strings.Repeat("y", 70_000) + "\n",
		"group":   "staff:x:50:\n" + strings.Repeat("y", 1<<20+1) + "\n",
		"passwd1": "app:x:1000:1001::/:\n"}
	// BuildKit v0.34 fails on a file over 10 MiB, wherever the name's
	// line is (ops/user_linux.go, openUserFile).
	files["big"] = "app:x:1000:1001::/:\n" + strings.Repeat("x:x:1:1::/:\n", 1<<20)
	for _, tc := range []struct{ df, want string }{
		{"COPY passwd /etc/passwd\nCOPY --chown=app bin/hello /a", "/etc/passwd"},
		{"COPY passwd1 /etc/passwd\nCOPY group /etc/group\nCOPY --chown=app:staff bin/hello /a", "/etc/group"},
		{"COPY big /etc/passwd\nCOPY --chown=app bin/hello /a", "exceeds 10485760 bytes"},
	} {
		fs := map[string]string{"Dockerfile": "FROM scratch\n" + tc.df + "\n"}
		for k, v := range files {
			fs[k] = v
		}
		_, err := planFiles(t, fs, Options{})
		if err == nil {
			t.Errorf("%q: planned", tc.df)
			continue
		}
		pe := located(t, err)
		if pe.Line != strings.Count(tc.df, "\n")+2 || pe.Col != 6 || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "too long") && !strings.Contains(err.Error(), "exceeds") {
			t.Errorf("%q: %v at %s, want it at the --chown, naming %s", tc.df, err, pe.Pos, tc.want)
		}
	}
}

// BuildKit's llb reads an owner's id with strconv.ParseInt (parseUID):
// a sign is part of the number, so --chown=+5 is uid 5, on any base,
// never a name looked up (and not found: 0).
func TestChownSignedID(t *testing.T) {
	for _, tc := range []struct{ df, want string }{
		{"FROM scratch\nWORKDIR /w\nCOPY --chown=+5 bin/hello /a", "/a<-local:bin/hello owner=5:5"},
		{"FROM scratch\nWORKDIR /w\nCOPY --chown=7:+8 bin/hello /a", "/a<-local:bin/hello owner=7:8"},
		{"FROM example.com/base\nCOPY --chown=+5 bin/hello /a", "/a into=hello<-local:bin/hello owner=5:5"},
		{"FROM scratch\nUSER +5\nWORKDIR /w", "/w/<-mkdir owner=5:5"},
	} {
		p, err := planFiles(t, map[string]string{"Dockerfile": tc.df + "\n", "bin/hello": "x"}, Options{})
		if err != nil {
			t.Errorf("%q: %v", tc.df, err)
			continue
		}
		if got := placements(t, p); got[len(got)-1] != tc.want {
			t.Errorf("%q: the last layer places %q, want %q", tc.df, got[len(got)-1], tc.want)
		}
	}
}

// BuildKit opens the stage's /etc/passwd through its links (fs.RootPath):
// a COPY that made /etc a link to another directory has it read there.
// pallet does not follow the stage's links when it plans: it refuses the
// name, rather than take it for absent and give 0.
func TestChownNameThroughALinkedEtc(t *testing.T) {
	df := write(t, map[string]string{"Dockerfile": "FROM scratch\nCOPY root/ /\nCOPY --chown=app bin/hello /a\n", "bin/hello": "x", "root/real/passwd": "app:x:1000:1001::/:\n"})
	if err := os.Symlink("real", filepath.Join(filepath.Dir(df), "root", "etc")); err != nil {
		t.Fatal(err)
	}
	d, err := Load(df)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Plan(Options{})
	if err == nil {
		t.Fatalf("planned %q, want the name refused", placements(t, p))
	}
	if pe := located(t, err); pe.Line != 3 || !strings.Contains(err.Error(), "--chown=app") {
		t.Errorf("got %v at %s, want it at line 3", err, pe.Pos)
	}
}

// BuildKit's llb takes an empty user in --chown=:gid for uid 0 (a
// UserOpt with neither name nor id marshals as ByID 0), on any base,
// and never looks it up.
func TestChownEmptyUser(t *testing.T) {
	for _, tc := range []struct{ df, want string }{
		{"FROM example.com/base\nCOPY --chown=:5 bin/hello /a", "/a into=hello<-local:bin/hello owner=0:5"},
		{"FROM scratch\nCOPY passwd /etc/passwd\nCOPY --chown=:5 bin/hello /a", "/a<-local:bin/hello owner=0:5"},
		{"FROM scratch\nCOPY --link --chown=: bin/hello /a", "/a<-local:bin/hello"},
	} {
		p, err := planFiles(t, map[string]string{"Dockerfile": tc.df + "\n", "bin/hello": "x", "passwd": ":x:7:7::/:\n"}, Options{})
		if err != nil {
			t.Errorf("%q: %v", tc.df, err)
			continue
		}
		if got := placements(t, p); got[len(got)-1] != tc.want {
			t.Errorf("%q: the last layer places %q, want %q", tc.df, got[len(got)-1], tc.want)
		}
	}
}

// A .dockerignore pattern patternmatcher cannot compile is said with its
// line, when the context is opened: patternmatcher compiles at the first
// match and its error names neither pattern nor line.
func TestIgnorePatternErrorAtItsLine(t *testing.T) {
	fs := map[string]string{
		"Dockerfile":    "FROM scratch\nCOPY . /\n",
		"f":             "x",
		".dockerignore": "# build outputs\nout\n\nkeep\\me\n",
	}
	_, err := planFiles(t, fs, Options{})
	if err == nil || !strings.Contains(err.Error(), `.dockerignore:4: "keep\\me": syntax error in pattern`) {
		t.Errorf("got %v, want the pattern at line 4", err)
	}
}

// A pattern that cannot compile fails a build only when a match asks it,
// as in BuildKit's walk, which asks an exclusion only of a path something
// before it matched and an inclusion only of one nothing before it did:
// "*" first, or an exclusion after "*.tmp" with no .tmp file, leaves it
// unasked and the build goes on; where it is asked, it is said at its
// line.
func TestIgnoreBadPatternOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name, ignore string
		files        []string
		want         string // "" for a build
	}{
		{"an exclusion nothing reaches", "*.tmp\n!keep\\me\n", []string{"f"}, ""},
		{"an exclusion reached", "*.tmp\n!keep\\me\n", []string{"f", "a.tmp"}, `.dockerignore:2: "!keep\\me": syntax error in pattern`},
		{"an inclusion after one matching all", "*\n# old\n[z-a]\n", []string{"f"}, ""},
		{"an inclusion asked", "out\n\n[z-a]\n", []string{"f"}, `.dockerignore:3: "[z-a]": syntax error in pattern`},
		{"a Windows-style exclusion asked", "*\n!bin\\kube\n", []string{"f"}, `.dockerignore:2: "!bin\\kube": syntax error in pattern`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": "FROM scratch\nCOPY . /\n", ".dockerignore": tc.ignore}
			for _, f := range tc.files {
				fs[f] = "x"
			}
			_, err := planFiles(t, fs, Options{})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want a build, as BuildKit's", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// A .dockerignore pattern that is not UTF-8, or holds a NUL, is refused
// at its line when the context is opened, and nothing is printed:
// patternmatcher's scanner printed "<input>:1:8: invalid UTF-8 encoding"
// to stderr, naming no file, and went on with U+FFFD, which then matched
// any byte that is no UTF-8 (BuildKit's daemon prints it too).
func TestIgnorePatternNotUTF8AtItsLine(t *testing.T) {
	for _, tc := range []struct{ ignore, want string }{
		{"# build outputs\nout\n\nlogs/a\xffb*\n", `.dockerignore:4: pattern "logs/a\xffb*" is not valid UTF-8`},
		{"out\n!keep\xc3\n", `.dockerignore:2: pattern "!keep\xc3" is not valid UTF-8`},
		{"out\nx\x00y\n", `.dockerignore:2: pattern "x\x00y" holds a NUL byte`},
	} {
		fs := map[string]string{"Dockerfile": "FROM scratch\nCOPY . /\n", "f": "x", ".dockerignore": tc.ignore}
		stderr, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		saved := os.Stderr
		os.Stderr = stderr
		_, err = planFiles(t, fs, Options{})
		os.Stderr = saved
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %s", err, tc.want)
		}
		if printed, _ := os.ReadFile(stderr.Name()); len(printed) > 0 {
			t.Errorf("%q printed %q to stderr", tc.ignore, printed)
		}
		stderr.Close()
	}
}

// Patterns that one path would be asked one by one are refused past
// maxPatternsPerPath, at the line of the one that makes one too many:
// those that begin with a wildcard, every path is asked (150,000 lines
// *x1, *x2, ... over 100,000 files took minutes), and those that begin
// as another does before their first wildcard (bin/*1, b*), every path
// beginning so is. Those no path begins as both (a/*1, b/*1) do not count
// together, nor do names, whatever runes they hold (données/f1.txt),
// asked only of themselves and what is below.
func TestIgnorePatternsBoundedAtTheirLine(t *testing.T) {
	lines := func(format string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, format+"\n", i)
		}
		return b.String()
	}
	const max = maxPatternsPerPath
	// Names, each of a directory the one before names, are each asked
	// of the deepest.
	var nested, deepest string
	for range max + 1 {
		deepest = path.Join(deepest, "n")
		nested += deepest + "\n"
	}
	for _, tc := range []struct {
		name, ignore, want string
	}{
		{"wildcard first, at the bound", "# gen\n" + lines("*x%d", max), ""},
		{"wildcard first, past it", "# gen\n\n" + lines("*x%d", max+1), fmt.Sprintf(`.dockerignore:%d: pattern "*x%d" makes %d that begin with a wildcard`, max+3, max, max+1)},
		{"exceptions count", lines("*x%d", max-1) + "!*.keep\n*.tmp\n", fmt.Sprintf(`.dockerignore:%d: pattern "*.tmp" makes %d that begin with a wildcard`, max+1, max+1)},
		{"nested", "b*\n" + lines("bin/*%d", max), fmt.Sprintf(`.dockerignore:%d: pattern "bin/*%d" makes %d that a path beginning "bin/" is matched against`, max+1, max-1, max+1)},
		{"apart", lines("a/*%d", max) + lines("b/*%d", max), ""},
		{"names", lines("gen/f%d.o", 3*max), ""},
		// Runes that are not ASCII stand for themselves, where the
		// prefix stopped at the first ("donn").
		{"names not ASCII", lines("données/f%d.txt", max+1), ""},
		{"not ASCII before a wildcard", lines("données/日%d/*.txt", max+1), ""},
		{"repeated first", lines("a{2}x%d*", max+1), fmt.Sprintf(`.dockerignore:%d: pattern "a{2}x%d*" makes %d that begin with a wildcard (or are asked of every path for a '|', '{', '^' or escape in them)`, max+1, max, max+1)},
		{"names nested", nested, fmt.Sprintf(`.dockerignore:%d: pattern %q makes %d that a path beginning %q is matched against, those whose text before their first wildcard (all of it, for a name without one) begins that path`, max+1, deepest, max+1, deepest)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := map[string]string{"Dockerfile": "FROM scratch\nCOPY . /\n", "f": "x", ".dockerignore": tc.ignore}
			_, err := planFiles(t, fs, Options{})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want a build", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	// A COPY --exclude's, at the COPY's line.
	var copy strings.Builder
	for i := range max + 1 {
		fmt.Fprintf(&copy, " --exclude=*x%d", i)
	}
	fs := map[string]string{"Dockerfile": "# syntax=docker/dockerfile:1.7-labs\nFROM scratch\nCOPY" + copy.String() + " . /\n", "f": "x"}
	_, err := planFiles(t, fs, Options{})
	if want := fmt.Sprintf(`Dockerfile:3: COPY: --exclude: pattern "*x%d" makes %d that begin with a wildcard`, max, max+1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}

// An ignore file's pattern that patternmatcher refuses outright (a lone
// "!", a class left open) is named at its line, past comments and blank
// lines, as written there.
func TestIgnoreFileRefusedPatternAtItsLine(t *testing.T) {
	for _, tc := range []struct{ ignore, want string }{
		{"# c\n\na\n!\n", `.dockerignore:4: pattern "!": illegal exclusion pattern`},
		{"a\n  ! \n", `.dockerignore:2: pattern "!": illegal exclusion pattern`},
		{"\xef\xbb\xbfa\n#b[\n\n  b[  \nc\n", `.dockerignore:4: pattern "b[": syntax error in pattern`},
	} {
		fs := map[string]string{"Dockerfile": "FROM scratch\nCOPY . /\n", "f": "x", ".dockerignore": tc.ignore}
		_, err := planFiles(t, fs, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.ignore, err, tc.want)
		}
	}
}
