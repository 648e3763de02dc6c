package artifact

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gccDirectIncludes is what gcc includes directly from the file at p,
// the names as written: the file is copied alone into a directory and
// preprocessed with no include path but an empty one, so that no header
// is found and read and each is listed by -MG as it is named. std is
// the -std gcc is given ("" for its default).
func gccDirectIncludes(t *testing.T, p, std string) []string {
	t.Helper()
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "under-test.h")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-M", "-MG", "-nostdinc", "-I" + empty, "-x", "c", "-w"}
	if std != "" {
		args = append(args, "-std="+std)
	}
	cmd := exec.Command("gcc", append(args, file)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		// A header gcc refuses (an #error its configuration reaches)
		// lists nothing to compare.
		return nil
	}
	deps := strings.Fields(strings.ReplaceAll(string(out), "\\\n", " "))
	var names []string
	for _, d := range deps[min(1, len(deps)):] {
		if d != file && d != "under-test.h" {
			names = append(names, d)
		}
	}
	return names
}

// includesCover says which of names the includes do not cover: each is
// named by one, or a macro's include stands for any.
func includesCover(incs []cInclude, names []string) (missed []string) {
	have := map[string]bool{}
	for _, inc := range incs {
		if inc.macro {
			return nil
		}
		have[inc.name] = true
	}
	for _, n := range names {
		if !have[n] {
			missed = append(missed, n)
		}
	}
	return missed
}

// cIncludeHostile are C sources that read one way to a careless
// scanner and another to gcc, with what gcc includes from each (by
// default or with trigraphs): each must be one the scanner gives.
var cIncludeHostile = []struct {
	name, src string
	want      []string
}{
	{"trigraph-hash", "??=include <tri1.h>\n", []string{"tri1.h"}},
	{"trigraph-join", "#inc??/\nlude <tri2.h>\n", []string{"tri2.h"}},
	{"trigraph-comment", "/* x *??/\n/\n#include <tri3.h>\n/* */\n", []string{"tri3.h"}},
	{"trigraph-questions", "int q = 1 ???/\n?;\n#include <q.h>\n", []string{"q.h"}},
	{"after-comment", "/* c */ #include <ac.h>\n/* c */#include \"ac2.h\"\n", []string{"ac.h", "ac2.h"}},
	{"spaces-tabs", "  #  \t include\t<st.h>\n\t#\tinclude_next \t \"st2.h\"\n", []string{"st.h", "st2.h"}},
	{"digraph", "%:include <dig.h>\n %: include \"dig2.h\"\n", []string{"dig.h", "dig2.h"}},
	{"digraph-elif", "#if 0\n%:elif 1\n#include <dige.h>\n#endif\n", []string{"dige.h"}},
	{"comment-in-string", "const char *s = \"/*\";\n#include <cis.h>\n// \"*/\n#include <cis2.h>\n", []string{"cis.h", "cis2.h"}},
	{"star-in-name", "#include <a/*b.h>\n#include <after-star.h>\n", []string{"a/*b.h", "after-star.h"}},
	{"slashes-in-name", "#include <sys//types.h>\n#include <after-slashes.h>\n", []string{"sys//types.h", "after-slashes.h"}},
	{"has-include", "#if __has_include( <a/*b.h>)\n#endif\n#include <after-has.h>\n", []string{"after-has.h"}},
	{"crlf", "#include <crlf.h>\r\n#if 0\r\n#include <no.h>\r\n#else\r\n#include <crlf2.h>\r\n#endif\r\n#include \\\r\n<crlf3.h>\r\n", []string{"crlf.h", "crlf2.h", "crlf3.h"}},
	{"no-final-newline", "#include <nfn.h>\n#include <nfn2.h>", []string{"nfn.h", "nfn2.h"}},
	{"if0-nested", "#if 0\n#ifdef X\n#include <no.h>\n#else\n#include <no2.h>\n#endif\n#elif 1\n#include <nest.h>\n#endif\n", []string{"nest.h"}},
	{"elif-paren", "#if 0\n#elif(1)\n#include <elp.h>\n#endif\n#if 0\n#elif!0\n#include <elp2.h>\n#endif\n", []string{"elp.h", "elp2.h"}},
	{"else-comment", "#if 0\n#else/**/\n#include <elc.h>\n#endif\n#if 0\n#else//x\n#include <elc2.h>\n#endif\n", []string{"elc.h", "elc2.h"}},
	{"if0-comment", "#if/**/0\n#include <no.h>\n#endif\n#if 0/**/\n#else\n#include <ifc.h>\n#endif\n", []string{"ifc.h"}},
	{"include-comment", "#include/**/<ic.h>\n#include/* x */\"ic2.h\"\n", []string{"ic.h", "ic2.h"}},
	{"line-continued", "#include \\\n <lc.h>\n#\\\ninclude <lc2.h>\n", []string{"lc.h", "lc2.h"}},
	{"raw-string", "const char *r = R\"x(\n)\"\n)x\";\n#include <rs.h>\n", []string{"rs.h"}},
	{"long-include", "#include" + strings.Repeat(" ", maxDirectiveLine+1) + "<long1.h>\n", []string{"long1.h"}},
	{"long-endif", "#if 0\n#endif " + strings.Repeat("x", maxDirectiveLine+1) + "\n#include <long2.h>\n", []string{"long2.h"}},
	{"long-elif", "#if 0\n#elif " + strings.Repeat("1+", maxDirectiveLine/2) + "1\n#include <long3.h>\n#endif\n", []string{"long3.h"}},
	{"in-raw-string", "const char *r = R\"x(\n#include <inraw.h>\n)x\";\n", []string{"inraw.h"}},
	{"in-raw-string-tri", "??=define A 1\nconst char *r = R\"x(\n??=include <inraw2.h>\n/* )x\";\n#include <after-raw.h>\n*/\n", []string{"inraw2.h", "after-raw.h"}},
	{"cr-alone", "#define A 1\r#include <cr1.h>\rint x; /* a \\\r*/\r#include <cr2.h>\r// c \\\r\n#include <no.h>\r\n#include <cr3.h>", []string{"cr1.h", "cr2.h", "cr3.h"}},
	{"cr-raw-delim", "const char *r = R\"ab\r#include <crr.h>\r", []string{"crr.h"}},
	{"raw-after-error", "const char *e = \"ERROR\", *r = R\"x(\n#include <inraw3.h>\n)x\";\n", []string{"inraw3.h"}},
	{"raw-joined", "const char *r = u8R\\\n\"x(\n#include <inraw4.h>\n)x\";\n", []string{"inraw4.h"}},
	{"char-quote", "int c = '\\'';\n#include <cq.h>\n", []string{"cq.h"}},
}

// The hostile sources' includes are found with no gcc to ask, fed
// whole or a byte at a time (a trigraph split between pieces).
func TestParseIncludesHostile(t *testing.T) {
	for _, c := range cIncludeHostile {
		if missed := includesCover(parseIncludes(c.src), c.want); missed != nil {
			t.Errorf("%s: parseIncludes misses %q", c.name, missed)
		}
		var got []cInclude
		s := newIncludeScan(func(line []byte) {
			if inc, ok := includeOf(string(line)); ok {
				got = append(got, inc)
			}
		})
		for i := range len(c.src) {
			s.feed([]byte{c.src[i]})
		}
		s.finish()
		if missed := includesCover(got, c.want); missed != nil {
			t.Errorf("%s, fed a byte at a time: misses %q", c.name, missed)
		}
	}
}

// parseIncludes follows every include gcc follows, in C as gcc reads it
// by default, with trigraphs and without raw strings (-std=c11, which a
// recipe's CGO_CFLAGS may give) and with neither (-std=gnu89): for the headers of this machine and hostile sources, each
// name gcc -M -MG lists as included directly is one the scanner gives
// (it may give more, never fewer: one missed is a header out of the key,
// its edit served the binary first built).
func TestParseIncludesCoversGcc(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed; skipping")
	}
	dir := t.TempDir()
	var files []string
	for _, c := range cIncludeHostile {
		p := filepath.Join(dir, c.name+".h")
		if err := os.WriteFile(p, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	// A sample, spread over the directories: gcc is run twice a file.
	// PALLET_GCC_INCLUDES_ALL=1 takes every one.
	n := 20
	if testing.Short() {
		n = 5
	}
	for _, pattern := range []string{"/usr/include/*.h", "/usr/include/linux/*.h", "/usr/include/*/*.h", "/usr/include/seccomp.h"} {
		m, _ := filepath.Glob(pattern)
		step := max(1, len(m)/n)
		if os.Getenv("PALLET_GCC_INCLUDES_ALL") != "" {
			step = 1
		}
		for i := 0; i < len(m); i += step {
			files = append(files, m[i])
		}
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		incs := parseIncludes(string(src))
		streamed := headerSource(p).cgo.includes
		stds := []string{""}
		if bytes.Contains(src, []byte("??")) || bytes.Contains(src, []byte(`R"`)) {
			// Strict C reads trigraphs, and no raw strings; gnu89 reads
			// neither.
			stds = append(stds, "c11", "gnu89")
		}
		for _, std := range stds {
			names := gccDirectIncludes(t, p, std)
			if missed := includesCover(incs, names); missed != nil {
				t.Errorf("%s (-std=%s): parseIncludes misses %q, which gcc includes", p, std, missed)
			}
			if missed := includesCover(streamed, names); missed != nil {
				t.Errorf("%s (-std=%s): headerSource misses %q, which gcc includes", p, std, missed)
			}
		}
	}
}

// The source is read once more without raw strings only from an R"
// that may start one: a string ending in R ("ERROR") starts none.
func TestRawAt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`x = "ERROR";`, -1},
		{`x = fooR"(`, -1},
		{`x = R"(`, 4},
		{`x = "ERROR", LR"(`, 14},
		{" u8R\\\n\"(", 3},
		{`R"(`, 0},
		{`xR"(`, 1}, // what precedes it is not here
	} {
		if got := rawAt([]byte(c.in)); got != c.want {
			t.Errorf("rawAt(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
