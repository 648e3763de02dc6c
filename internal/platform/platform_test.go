package platform

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	// A platform spelt as release files name it is refused with the
	// platform it means.
	for in, want := range map[string]string{"windows-amd64": "windows/amd64", "linux_arm64": "linux/arm64", "linux-arm-v6": "linux/arm/v6", "linux:amd64": "linux/amd64"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "(did you mean "+want+"?)") {
			t.Errorf("Parse(%q): %v; want it to suggest %s", in, err, want)
		}
	}
	// Other tools' names of an architecture (uname -m's, Debian's,
	// Windows'), capitals and a slip are said as the name indexes use, and
	// not taken: a recipe names a platform one way.
	for in, want := range map[string]string{
		"linux/aarch64": "linux/arm64", "linux/x86_64": "linux/amd64", "linux/x86-64": "linux/amd64",
		"windows/x64": "windows/amd64", "linux/armhf": "linux/arm/v7", "linux/armv7": "linux/arm/v7",
		"linux/armv6l": "linux/arm/v6", "linux/i686": "linux/386", "linux/ppc64el": "linux/ppc64le",
		"linux/amd46": "linux/amd64", "Linux/AMD64": "linux/amd64", "linux-aarch64": "linux/arm64",
		"lnux/arm64": "linux/arm64",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), "(did you mean "+want+"?)") || !strings.Contains(err.Error(), in) {
			t.Errorf("Parse(%q): %v; want it refused, suggesting %s", in, err, want)
		}
	}
	// Nothing is suggested where two are as near, or none is near.
	for _, in := range []string{"linux/arm/v8", "linux/mips64", "plan9/mips"} {
		if _, err := Parse(in); err == nil || strings.Contains(err.Error(), "did you mean") {
			t.Errorf("Parse(%q): %v; want it refused with no suggestion", in, err)
		}
	}
	for in, want := range map[string]string{"widows": "windows", "linus": "linux", "win": "windows"} {
		if err := ParseSelector(in); err == nil || !strings.Contains(err.Error(), "did you mean "+want+"?") {
			t.Errorf("ParseSelector(%q): %v; want it refused, suggesting %s", in, err, want)
		}
	}
	if err := ParseSelector("macos"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("ParseSelector(macos): %v; want it refused with no suggestion", err)
	}
	if _, err := Parse("darwin-arm64"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Parse(darwin-arm64): %v; want no suggestion of a platform pallet does not know", err)
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

func TestSelectors(t *testing.T) {
	arm7 := Platform{OS: "linux", Arch: "arm", Variant: "v7"}
	win := Platform{OS: "windows", Arch: "amd64"}
	for _, tc := range []struct {
		p    Platform
		sel  string
		rank int
		ok   bool
	}{
		{arm7, "", 0, true},
		{arm7, "linux", 1, true},
		{arm7, "linux/arm/v7", 2, true},
		{arm7, "linux/arm", 2, true}, // arm means arm/v7, as Parse reads it
		{arm7, "windows", 1, false},
		{win, "windows/amd64", 2, true},
		{win, "linux/amd64", 2, false},
	} {
		rank, ok := tc.p.Selects(tc.sel)
		if ok != tc.ok || (ok && rank != tc.rank) {
			t.Errorf("%s selects %s: %d %v, want %d %v", tc.sel, tc.p, rank, ok, tc.rank, tc.ok)
		}
	}
	m := map[string]string{"": "all", "linux": "os", "linux/arm64": "exact"}
	if v, _ := Pick(m, Platform{OS: "linux", Arch: "arm64"}); v != "exact" {
		t.Errorf("pick exact: %s", v)
	}
	if v, _ := Pick(m, arm7); v != "os" {
		t.Errorf("pick os: %s", v)
	}
	if v, _ := Pick(m, win); v != "all" {
		t.Errorf("pick all: %s", v)
	}
	if _, ok := Pick(map[string]string{"linux": "x"}, win); ok {
		t.Error("picked a value for a platform no selector names")
	}
	for _, bad := range []string{"linux/amd46", "plan9", "windows/"} {
		if ParseSelector(bad) == nil {
			t.Errorf("selector %q accepted", bad)
		}
	}
	// An index entry without a variant describes arm/v7; one with another
	// variant does not; os.version on the entry does not matter.
	if !arm7.Describes(v1.Platform{OS: "linux", Architecture: "arm"}) || arm7.Describes(v1.Platform{OS: "linux", Architecture: "arm", Variant: "v6"}) {
		t.Error("variant rule")
	}
	if !win.Describes(v1.Platform{OS: "windows", Architecture: "amd64", OSVersion: "10.0.20348.1"}) {
		t.Error("os.version on the entry must not prevent a match")
	}
}

// The names GNU tools and Debian give a platform: its libraries'
// directory differs from its compilers' prefix on 386, and ARM before v7
// is Debian's armel port, not armhf.
func TestGNUNames(t *testing.T) {
	for in, want := range map[string][3]string{
		"linux/amd64":   {"x86_64-linux-gnu", "x86_64-linux-gnu", "x86_64"},
		"linux/arm64":   {"aarch64-linux-gnu", "aarch64-linux-gnu", "aarch64"},
		"linux/386":     {"i386-linux-gnu", "i686-linux-gnu", "i686"},
		"linux/arm/v7":  {"arm-linux-gnueabihf", "arm-linux-gnueabihf", "v7l"},
		"linux/arm/v6":  {"arm-linux-gnueabi", "arm-linux-gnueabi", "v6l"},
		"linux/ppc64le": {"powerpc64le-linux-gnu", "powerpc64le-linux-gnu", ""},
		"windows/amd64": {"", "x86_64-w64-mingw32", ""},
		"windows/arm64": {"", "", ""},
	} {
		p, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]string{p.Multiarch(), p.GNUTriple(), p.ELFPlatform()}; got != want {
			t.Errorf("%s: multiarch, triple, AT_PLATFORM %q, want %q", in, got, want)
		}
	}
}

// x86-64 microarchitecture levels: linux/amd64/v2 to v4 are platforms of
// their own, built with their GOAMD64 (v1 is plain amd64), and nest as
// containerd's matcher has them: a level's image may be built on a base
// of its level or a lower one, the closest ranked highest, never on a
// higher one.
func TestAmd64Levels(t *testing.T) {
	for in, want := range map[string]string{
		"linux/amd64":    "GOAMD64=v1",
		"linux/amd64/v1": "GOAMD64=v1",
		"linux/amd64/v2": "GOAMD64=v2",
		"linux/amd64/v3": "GOAMD64=v3",
		"linux/amd64/v4": "GOAMD64=v4",
	} {
		p, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if env := strings.Join(p.GoEnv(), " "); env != "GOOS=linux GOARCH=amd64 "+want {
			t.Errorf("%s: GoEnv = %s", in, env)
		}
		if in == "linux/amd64/v1" && p.String() != "linux/amd64" {
			t.Errorf("Parse(%q) = %s, want linux/amd64", in, p)
		}
		if in == "linux/amd64/v3" && p.V1().Variant != "v3" {
			t.Errorf("%s: V1 = %+v", in, p.V1())
		}
	}
	for _, bad := range []string{"linux/amd64/v5", "linux/amd64/v0", "linux/amd64/x86-64-v3"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	v3, _ := Parse("linux/amd64/v3")
	plain, _ := Parse("linux/amd64")
	entry := func(variant string) v1.Platform {
		return v1.Platform{OS: "linux", Architecture: "amd64", Variant: variant}
	}
	for _, tc := range []struct {
		p       Platform
		d       v1.Platform
		rank    int
		ok      bool
		comment string
	}{
		{v3, entry(""), 1, true, "a plain amd64 base under a v3 build"},
		{v3, entry("v1"), 1, true, ""},
		{v3, entry("v2"), 2, true, ""},
		{v3, entry("v3"), 3, true, "the closest"},
		{v3, entry("v4"), 0, false, "a v3 machine does not run v4"},
		{v3, entry("v9"), 0, false, "unknown level"},
		{v3, v1.Platform{OS: "windows", Architecture: "amd64"}, 0, false, ""},
		{v3, v1.Platform{OS: "linux", Architecture: "arm64"}, 0, false, ""},
		{plain, entry(""), 1, true, ""},
		{plain, entry("v2"), 0, false, "a v1 machine does not run v2"},
		{plain, v1.Platform{OS: "linux", Architecture: "amd64", OSVersion: "x"}, 1, true, ""},
	} {
		rank, ok := tc.p.Rank(tc.d)
		if ok != tc.ok || ok && rank != tc.rank || tc.p.Describes(tc.d) != ok {
			t.Errorf("%s on %+v (%s): %d %v, want %d %v", tc.p, tc.d, tc.comment, rank, ok, tc.rank, tc.ok)
		}
	}
}

// Closest keeps, of an index's entries, those a machine of the platform
// takes: its own level over a lower one, in the index's order.
func TestClosest(t *testing.T) {
	entry := func(os, arch, variant, digest string) v1.Descriptor {
		return v1.Descriptor{Digest: v1.Hash{Algorithm: "sha256", Hex: digest}, Platform: &v1.Platform{OS: os, Architecture: arch, Variant: variant}}
	}
	index := []v1.Descriptor{
		entry("linux", "amd64", "v3", "v3"),
		{Digest: v1.Hash{Algorithm: "sha256", Hex: "none"}},
		entry("linux", "amd64", "", "plain"),
		entry("linux", "arm64", "", "arm64"),
		entry("linux", "amd64", "v2", "v2"),
		entry("linux", "amd64", "v1", "v1"),
		entry("linux", "arm64", "v8", "arm64v8"),
	}
	for _, tc := range []struct{ platform, want string }{
		{"linux/amd64", "plain v1"},
		{"linux/amd64/v2", "v2"},
		{"linux/amd64/v3", "v3"},
		{"linux/amd64/v4", "v3"},
		{"linux/arm64", "arm64 arm64v8"},
		{"linux/arm/v7", ""},
	} {
		p, err := Parse(tc.platform)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range p.Closest(index) {
			got = append(got, d.Digest.Hex)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: Closest = %v, want %s", tc.platform, got, tc.want)
		}
	}
}

// A recipe's "linux/amd64" names every x86-64 level, less specifically
// than the level itself; a level names no other.
func TestSelectorsOfAmd64Levels(t *testing.T) {
	v3, _ := Parse("linux/amd64/v3")
	plain, _ := Parse("linux/amd64")
	arm, _ := Parse("linux/arm64")
	for _, tc := range []struct {
		p    Platform
		sel  string
		rank int
		ok   bool
	}{
		{v3, "linux/amd64", 2, true},
		{v3, "linux/amd64/v3", 3, true},
		{v3, "linux/amd64/v2", 3, false},
		{v3, "linux", 1, true},
		{plain, "linux/amd64/v3", 3, false},
		{plain, "linux/amd64", 2, true},
		{plain, "linux/amd64/v1", 2, true},
		{arm, "linux/amd64", 2, false},
	} {
		if rank, ok := tc.p.Selects(tc.sel); ok != tc.ok || ok && rank != tc.rank {
			t.Errorf("%s selected by %q: %d %v, want %d %v", tc.p, tc.sel, rank, ok, tc.rank, tc.ok)
		}
	}
	v2, _ := Parse("linux/amd64/v2")
	m := map[string]string{"linux/amd64": "any level", "linux/amd64/v3": "v3", "linux": "linux"}
	for p, want := range map[Platform]string{v3: "v3", v2: "any level", plain: "any level", arm: "linux"} {
		if got, _ := Pick(m, p); got != want {
			t.Errorf("Pick for %s: %q, want %q", p, got, want)
		}
	}
}
