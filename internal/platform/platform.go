// Package platform parses and validates the os/arch[/variant] strings a
// recipe names, and maps them onto Go's GOOS/GOARCH/GOARM.
package platform

import (
	"fmt"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Platform is a target image platform.
type Platform struct {
	OS, Arch, Variant string
}

// known lists the platforms pallet can build for. A typo such as
// "linux/amd46" must fail at parse time, not produce an image nobody can run.
var known = map[string]bool{
	"linux/amd64":   true,
	"linux/arm64":   true,
	"linux/arm/v6":  true,
	"linux/arm/v7":  true,
	"linux/386":     true,
	"linux/ppc64le": true,
	"linux/s390x":   true,
	"linux/riscv64": true,
	"windows/amd64": true,
	"windows/arm64": true,
}

// Parse reads "os/arch" or "os/arch/variant". "linux/arm64/v8" is accepted
// as linux/arm64 (v8 is the only arm64 variant and registries omit it).
func Parse(s string) (Platform, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	var p Platform
	switch len(parts) {
	case 2:
		p = Platform{OS: parts[0], Arch: parts[1]}
	case 3:
		p = Platform{OS: parts[0], Arch: parts[1], Variant: parts[2]}
	default:
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s)
	}
	if p.Arch == "arm64" && p.Variant == "v8" {
		p.Variant = ""
	}
	if p.Arch == "arm" && p.Variant == "" {
		p.Variant = "v7"
	}
	if !known[p.String()] {
		return Platform{}, fmt.Errorf("unknown platform %q (known: %s)", s, strings.Join(Known(), ", "))
	}
	return p, nil
}

// Known returns the supported platforms, sorted.
func Known() []string {
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (p Platform) String() string {
	if p.Variant != "" {
		return p.OS + "/" + p.Arch + "/" + p.Variant
	}
	return p.OS + "/" + p.Arch
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
		env = append(env, "GOAMD64=v1")
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
