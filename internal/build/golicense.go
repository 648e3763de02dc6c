package build

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/once"
	"github.com/pallet-dev/pallet/internal/tree"
)

// maxGoLicense bounds the Go toolchain's LICENSE read: it is 1.5 KB.
const maxGoLicense = 64 << 10

// goToolchainLicense is the LICENSE of a Go toolchain: the standard
// library's, which every Go binary links.
type goToolchainLicense struct {
	version string // go1.26.8, as go env GOVERSION says
	file    string // a copy in the build's work directory
	size    int64
}

// goLicensePath is where the Go toolchain's licence is shipped, under
// /LICENSES/<artifact>/: beside the modules' directories, named as the
// standard library's module is (GOROOT/src/go.mod says "module std"),
// with the toolchain's version, which no module path can hold ("@"), so
// that binaries of two Go releases ship both.
func goLicensePath(version string) string { return "std@" + version + "/LICENSE" }

// goToolchain is a Go toolchain as go env names it: its version
// (go1.26.8) and GOROOT.
type goToolchain struct{ version, root string }

// goLicense is the LICENSE of the Go toolchain that env runs (the pinned
// one pallet builds with), read once per toolchain in a build. It is
// taken only as the toolchain's own: a regular file at the root of the
// GOROOT go env names, whose VERSION file, where there is one (a
// release's), names the version go env says; it is read bounded and
// copied, so that what is shipped is what was checked.
//
// built is the toolchain that built the binaries, as their build info
// says (go1.26.8): the go command picked it in the module, by its go and
// toolchain lines under GOTOOLCHAIN=auto, where the empty directory this
// asks in has none, so a release is asked for by name (GOTOOLCHAIN), and
// the answer must be it.
//
// ran is the toolchain the build of this run used, as go env said in the
// module while it built (artifact.Result.GoRoot), or zero for binaries
// from the cache. When it is the release that built the binaries, its
// GOROOT is the one GOTOOLCHAIN=built names, and is read without asking
// the go command again: that would take 4-6 ms (10-30 ms on a busy
// machine) after the build, before its layer can be written. It is kept
// in the memo for the rebuild that takes the binaries from the cache
// (keepToolchain).
func (b *builder) goLicense(ctx context.Context, env []string, built string, ran goToolchain) (goToolchainLicense, error) {
	want, _, _ := strings.Cut(built, " ")
	if !version.IsValid(want) { // a devel toolchain, which GOTOOLCHAIN cannot name
		want = ""
	} else {
		env = append(slices.Clip(env), "GOTOOLCHAIN="+want)
	}
	tc := ran
	if want == "" || ran.version != want || ran.root == "" {
		// Once per environment and release in a build, not for every Go
		// binary: each looked for the go command on PATH and its memo
		// again. An error is not kept, and one found from another
		// caller's asking (that one may have been stopped) is asked again
		// (once.Success).
		key := want + "\x00" + strings.Join(env, "\x00")
		var err error
		tc, err = once.Success(&b.goToolchains, key, func() (goToolchain, error) {
			return b.toolchain(ctx, env, want)
		})
		if err != nil {
			return goToolchainLicense{}, err
		}
	} else {
		// Kept, once per environment and toolchain in a build, for the
		// rebuild that takes these binaries from the cache: it has no
		// ran, and asked go env (25-50 ms) where a third build found the
		// answer in the memo.
		key := want + "\x00" + ran.root + "\x00" + strings.Join(env, "\x00")
		once.Value(&b.keptToolchains, key, func() (struct{}, error) {
			b.keepToolchain(env, want, ran)
			return struct{}{}, nil
		})
	}
	gl, err := once.Value(&b.goLicenses, tc.root+"\x00"+tc.version, func() (goToolchainLicense, error) {
		return b.readGoLicenseAt(tc.root, tc.version)
	})
	if err == nil && want != "" && gl.version != want {
		return goToolchainLicense{}, fmt.Errorf("the binaries were built by %s, GOTOOLCHAIN=%s runs %s", want, want, gl.version)
	}
	return gl, err
}

// toolchain is the Go toolchain env runs, as go env GOROOT GOVERSION says
// in the build's work directory, asked once per process for every
// platform (artifact.AskToolchainEnv). Where the go command on PATH is
// itself the release env asks for (want, in GOTOOLCHAIN), the answer is
// kept in the memo of that executable, by its stamp: that release runs
// itself whatever else is on PATH or in the module cache, at its GOROOT,
// so while the executable and the variables that could move its GOROOT
// (GOROOT, GOENV) are as they were, the answer is too, and a rebuild from
// the cache runs no go command: go env was 25-50 ms of the 100 ms no-op
// of examples/hello. Any other answer (a switch to another release, a
// wrapper script) depends on more than that file, and is asked.
func (b *builder) toolchain(ctx context.Context, env []string, want string) (goToolchain, error) {
	ask := func() (goToolchain, error) {
		v, err := artifact.AskToolchainEnv(ctx, b.work, env, "GOROOT", "GOVERSION")
		if err != nil {
			return goToolchain{}, err
		}
		return goToolchain{version: v[1], root: v[0]}, nil
	}
	goenv := artifact.EnvValue(env, "GOENV")
	if want == "" || goenv != "off" {
		return ask() // a go env file could name another GOROOT
	}
	gobin, err := goOnPath()
	if err != nil {
		return ask()
	}
	said, err := b.memo(gobin, tree.Stamp{}, toolchainFact(env, want), func(string) (string, error) {
		tc, err := ask()
		return tc.root + "\n" + tc.version, err
	})
	if err != nil {
		return goToolchain{}, err
	}
	root, version, _ := strings.Cut(said, "\n")
	if version == want && runsItself(root, gobin) {
		return goToolchain{version: version, root: root}, nil
	}
	return ask()
}

// toolchainFact is what the memo of the go command on PATH keeps the
// toolchain it runs under, with env, as: GOTOOLCHAIN=want and GOROOT
// are what could make it run another.
func toolchainFact(env []string, want string) string {
	return "go-toolchain-v1 GOTOOLCHAIN=" + want + " GOROOT=" + artifact.EnvValue(env, "GOROOT")
}

// keepToolchain keeps in the memo of the go command on PATH the toolchain
// ran that a build of this run used, as toolchain would have asked it:
// only where that go command is the release want, running itself at
// ran's GOROOT. Nothing is kept otherwise, and the memo's errors only
// cost the next build its saving.
func (b *builder) keepToolchain(env []string, want string, ran goToolchain) {
	if artifact.EnvValue(env, "GOENV") != "off" || ran.version != want {
		return
	}
	gobin, err := goOnPath()
	if err != nil || !runsItself(ran.root, gobin) {
		return
	}
	b.memo(gobin, tree.Stamp{}, toolchainFact(env, want), func(string) (string, error) {
		return ran.root + "\n" + ran.version, nil
	})
}

// goOnPath is the go command pallet runs, as exec finds it on PATH, its
// links resolved: the file whose memo keeps what it said. A go that is
// not a toolchain's own (a version manager's shim, artifact.HostGo) is
// refused: it runs whichever Go a file in the directory, or a variable,
// selects, and keeps its stamp when that changes, so nothing it said is
// kept for another build; each asks it.
func goOnPath() (string, error) {
	gobin, own, err := artifact.HostGo()
	if err != nil {
		return "", err
	}
	if !own {
		return "", fmt.Errorf("%s is not the go command of a Go toolchain (no src/cmd/go beside its bin)", gobin)
	}
	return gobin, nil
}

// runsItself says whether root is the GOROOT of the go executable gobin
// (a resolved path): root/bin/go leads to it.
func runsItself(root, gobin string) bool {
	if !filepath.IsAbs(root) {
		return false
	}
	p, err := filepath.EvalSymlinks(filepath.Join(root, "bin", "go"))
	return err == nil && p == gobin
}

// readGoLicenseAt takes the LICENSE of the toolchain version whose GOROOT
// go env said is goroot.
func (b *builder) readGoLicenseAt(goroot, version string) (goToolchainLicense, error) {
	if !filepath.IsAbs(goroot) || !strings.HasPrefix(version, "go") {
		return goToolchainLicense{}, fmt.Errorf("go env GOROOT GOVERSION said %q, %q", goroot, version)
	}
	// A release's VERSION file's first line is its version: a GOROOT
	// that says another is not the toolchain that answered.
	if data, err := bounded.ReadFile(filepath.Join(goroot, "VERSION"), 4096); err == nil {
		first, _, _ := strings.Cut(string(data), "\n")
		if strings.TrimSpace(first) != version {
			return goToolchainLicense{}, fmt.Errorf("toolchain %s: %s/VERSION says %q", version, goroot, first)
		}
	}
	src := filepath.Join(goroot, "LICENSE")
	if st, err := os.Lstat(src); err != nil {
		return goToolchainLicense{}, fmt.Errorf("toolchain %s: %w", version, err)
	} else if !st.Mode().IsRegular() {
		return goToolchainLicense{}, fmt.Errorf("toolchain %s: %s is not a regular file (%s)", version, src, bounded.TypeName(st.Mode()))
	}
	text, err := bounded.ReadRegular(src, maxGoLicense)
	if err != nil {
		return goToolchainLicense{}, fmt.Errorf("toolchain %s: %w", version, err)
	}
	if !isGoLicense(text) {
		return goToolchainLicense{}, fmt.Errorf("toolchain %s: %s is not Go's BSD licence", version, src)
	}
	dir, err := b.licenceWork("go-license-*")
	if err != nil {
		return goToolchainLicense{}, err
	}
	copied := filepath.Join(dir, "LICENSE")
	if err := os.WriteFile(copied, text, 0o644); err != nil {
		return goToolchainLicense{}, err
	}
	return goToolchainLicense{version: version, file: copied, size: int64(len(text))}, nil
}

// isGoLicense says whether text is Go's LICENSE: the BSD 3-clause
// licence of The Go Authors (its copyright line has read both
// "Copyright (c) 2009 The Go Authors. All rights reserved." and
// "Copyright 2009 The Go Authors.").
func isGoLicense(text []byte) bool {
	s := bufio.NewScanner(bytes.NewReader(text))
	first := ""
	for s.Scan() {
		if first = strings.TrimSpace(s.Text()); first != "" {
			break
		}
	}
	return strings.HasPrefix(first, "Copyright") && strings.Contains(first, "The Go Authors") &&
		bytes.Contains(text, []byte("Redistribution and use in source and binary forms")) &&
		bytes.Contains(text, []byte("Neither the name of Google"))
}
