// Package platform parses and validates the os/arch[/variant] strings a
// recipe names, and maps them onto Go's GOOS/GOARCH/GOARM.
package platform

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/suggest"
)

// Platform is a target image platform.
type Platform struct {
	OS, Arch, Variant string
}

// known lists the platforms pallet can build for, sorted. A typo such as
// "linux/amd46" must fail at parse time, not produce an image nobody can run.
// This package's tables are slices of constants, not maps: the compiler
// lays those out in the binary, where a map literal is built by the
// package's initializer in every pallet command, most of which never
// parse a platform.
var known = []string{
	"linux/386",
	"linux/amd64",
	"linux/amd64/v2",
	"linux/amd64/v3",
	"linux/amd64/v4",
	"linux/arm/v6",
	"linux/arm/v7",
	"linux/arm64",
	"linux/ppc64le",
	"linux/riscv64",
	"linux/s390x",
	"windows/amd64",
	"windows/arm64",
}

func isKnown(p Platform) bool { return slices.Contains(known, p.String()) }

// Parse reads "os/arch" or "os/arch/variant". "linux/arm64/v8" is accepted
// as linux/arm64 (v8 is the only arm64 variant and registries omit it),
// and "linux/amd64/v1" as linux/amd64 (the baseline, which indexes name
// without a variant). linux/amd64/v2, v3 and v4 are the x86-64
// microarchitecture levels Go builds for with GOAMD64 and OCI indexes
// name by variant.
func Parse(s string) (Platform, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) != 2 && len(parts) != 3 {
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant%s", s, meant(s))
	}
	p := canonical(parts)
	if !isKnown(p) {
		if m := meant(s); m != "" {
			return Platform{}, fmt.Errorf("unknown platform %q%s; known: %s", s, m, strings.Join(Known(), ", "))
		}
		return Platform{}, fmt.Errorf("unknown platform %q (known: %s)", s, strings.Join(Known(), ", "))
	}
	return p, nil
}

// canonical is os/arch or os/arch/variant as Parse names it, known or
// not.
func canonical(parts []string) Platform {
	p := Platform{OS: parts[0], Arch: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	if p.Arch == "arm64" && p.Variant == "v8" || p.Arch == "amd64" && p.Variant == "v1" {
		p.Variant = ""
	}
	if p.Arch == "arm" && p.Variant == "" {
		p.Variant = "v7"
	}
	return p
}

// archAliases are the names other tools give the architectures pallet
// builds for: uname -m's, Debian's, Docker Hub's (arm32v7), Windows'
// (x64). They are said as the name image indexes use, not taken, so that
// a recipe, a --platform and the index agree on one name.
var archAliases = []struct {
	alias string
	arch  []string // the architecture, and the variant it implies
}{
	{"aarch64", []string{"arm64"}}, {"arm64v8", []string{"arm64"}}, {"armv8", []string{"arm64"}},
	{"x86_64", []string{"amd64"}}, {"x86-64", []string{"amd64"}}, {"x64", []string{"amd64"}},
	{"armhf", []string{"arm", "v7"}}, {"armv7", []string{"arm", "v7"}}, {"armv7l", []string{"arm", "v7"}}, {"arm32v7", []string{"arm", "v7"}},
	{"armv6", []string{"arm", "v6"}}, {"armv6l", []string{"arm", "v6"}}, {"arm32v6", []string{"arm", "v6"}},
	{"i386", []string{"386"}}, {"i686", []string{"386"}}, {"x86", []string{"386"}},
	{"ppc64el", []string{"ppc64le"}},
}

// archAlias is the architecture (and variant) alias names; nil for a
// name that is no alias.
func archAlias(alias string) []string {
	for _, a := range archAliases {
		if a.alias == alias {
			return a.arch
		}
	}
	return nil
}

// meant is the "did you mean" for a platform pallet does not know, when
// one it knows is likely meant: the platform written with another
// separator than '/' (windows-amd64 and linux_arm64, as release file
// names spell them; linux:amd64), in capitals, with another name of its
// architecture (linux/aarch64, windows/x64), or with a slip (linux/amd46).
func meant(s string) string {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, sep := range []string{"/", "-", "_", ":", " "} {
		if k := aliased(strings.Split(t, sep)); k != "" {
			return " (did you mean " + k + "?)"
		}
	}
	if k := Nearest(t, Known()); k != "" {
		return " (did you mean " + k + "?)"
	}
	return ""
}

// Nearest is the one of names (platforms or OSes) that s is most likely
// a slip for: at most two edits from it (linux/amd46, linux/arm for
// linux/arm64), and nearer than any other; "" when none is.
func Nearest(s string, names []string) string { return suggest.Nearest(s, names, 2) }

// aliased is the known platform that parts (os, arch and perhaps a
// variant) names, its architecture perhaps by another name; "" for none.
func aliased(parts []string) string {
	if len(parts) != 2 && len(parts) != 3 {
		return ""
	}
	if a := archAlias(parts[1]); a != nil {
		if len(a) == 2 && len(parts) == 3 {
			return "" // armv7/v6 names two variants
		}
		parts = append(append([]string{parts[0]}, a...), parts[2:]...)
	}
	if p := canonical(parts); isKnown(p) {
		return p.String()
	}
	return ""
}

// Known returns the supported platforms, sorted.
func Known() []string { return slices.Clone(known) }

func (p Platform) String() string {
	if p.Variant != "" {
		return p.OS + "/" + p.Arch + "/" + p.Variant
	}
	return p.OS + "/" + p.Arch
}

// Name is an image's os/arch[/variant] (an index entry's or a config's)
// as --platform takes it, saying so where it leaves the os or the
// architecture out, for messages about what a base or an index holds.
func Name(os, arch, variant string) string {
	if os == "" {
		os = "(no os)"
	}
	if arch == "" {
		arch = "(no architecture)"
	}
	return Platform{OS: os, Arch: arch, Variant: variant}.String()
}

// IsWindows reports whether layers for p use the Windows layer format.
func (p Platform) IsWindows() bool { return p.OS == "windows" }

// GoEnv returns the environment that makes the Go toolchain target p,
// microarchitecture level included. The level is always set, to the
// baseline every machine of the platform runs: left unset, a GOAMD64=v3 in
// a developer's environment or go env file would change the binary, and
// the image would no longer run on every amd64 machine.
func (p Platform) GoEnv() []string {
	env := []string{"GOOS=" + p.OS, "GOARCH=" + p.Arch}
	switch p.Arch {
	case "arm":
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	case "amd64":
		env = append(env, "GOAMD64="+cmp.Or(p.Variant, "v1"))
	case "arm64":
		env = append(env, "GOARM64=v8.0")
	case "386":
		env = append(env, "GO386=sse2")
	case "ppc64le":
		env = append(env, "GOPPC64=power8")
	case "riscv64":
		env = append(env, "GORISCV64=rva20u64")
	}
	return env
}

// gnuNames are the names GNU tools and Debian give a GOARCH's Linux
// machine: Debian's multiarch tuple (the directory under /usr/lib of its
// libraries) and the GNU target triple (the prefix of Debian's cross
// compilers: i686 where the directory says i386).
var gnuNames = []struct{ arch, multiarch, triple string }{
	{"amd64", "x86_64-linux-gnu", "x86_64-linux-gnu"},
	{"arm64", "aarch64-linux-gnu", "aarch64-linux-gnu"},
	{"arm", "arm-linux-gnueabihf", "arm-linux-gnueabihf"},
	{"386", "i386-linux-gnu", "i686-linux-gnu"},
	{"ppc64le", "powerpc64le-linux-gnu", "powerpc64le-linux-gnu"},
	{"ppc64", "powerpc64-linux-gnu", "powerpc64-linux-gnu"},
	{"s390x", "s390x-linux-gnu", "s390x-linux-gnu"},
	{"riscv64", "riscv64-linux-gnu", "riscv64-linux-gnu"},
	{"mips64le", "mips64el-linux-gnuabi64", "mips64el-linux-gnuabi64"},
	{"mipsle", "mipsel-linux-gnu", "mipsel-linux-gnu"},
	{"loong64", "loongarch64-linux-gnu", "loongarch64-linux-gnu"},
}

// gnuName is arch's entry in gnuNames, empty for an architecture
// Debian has no port for.
func gnuName(arch string) (multiarch, triple string) {
	for _, n := range gnuNames {
		if n.arch == arch {
			return n.multiarch, n.triple
		}
	}
	return "", ""
}

// armel is Debian's arm port for the machines before ARMv7, which armhf
// (the hard-float one, ARMv7) does not run on.
func (p Platform) armel() bool { return p.Arch == "arm" && (p.Variant == "v5" || p.Variant == "v6") }

// Multiarch is Debian's multiarch tuple of a Linux platform
// ("aarch64-linux-gnu"): where Debian and Ubuntu keep its libraries
// (/usr/lib/aarch64-linux-gnu) and their pkg-config files. Empty for
// other systems and for machines Debian has no port for.
func (p Platform) Multiarch() string {
	if p.OS != "linux" {
		return ""
	}
	if p.armel() {
		return "arm-linux-gnueabi"
	}
	multiarch, _ := gnuName(p.Arch)
	return multiarch
}

// GNUTriple is the target of GNU tools building for p, the prefix of
// Debian's cross compilers ("aarch64-linux-gnu" for aarch64-linux-gnu-gcc,
// "x86_64-w64-mingw32" for Windows' mingw-w64); empty when there is no
// usual one.
func (p Platform) GNUTriple() string {
	switch {
	case p.OS == "windows":
		return map[string]string{"amd64": "x86_64-w64-mingw32", "386": "i686-w64-mingw32"}[p.Arch]
	case p.OS != "linux":
		return ""
	case p.armel():
		return "arm-linux-gnueabi"
	}
	_, triple := gnuName(p.Arch)
	return triple
}

// ELFPlatform is what the Linux kernel tells a process of p its platform
// is (AT_PLATFORM), which $PLATFORM in a run path stands for; empty where
// it depends on the processor (ppc64le's "power9", s390x's "z15") or is
// not known.
func (p Platform) ELFPlatform() string {
	if p.OS != "linux" {
		return ""
	}
	switch p.Arch {
	case "arm":
		return "v" + strings.TrimPrefix(p.Variant, "v") + "l"
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	}
	return ""
}

// ExeSuffix is ".exe" for Windows and empty elsewhere.
func (p Platform) ExeSuffix() string {
	if p.IsWindows() {
		return ".exe"
	}
	return ""
}

// V1 converts p to go-containerregistry's platform type.
func (p Platform) V1() v1.Platform {
	return v1.Platform{OS: p.OS, Architecture: p.Arch, Variant: p.Variant}
}
