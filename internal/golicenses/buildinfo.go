package golicenses

import (
	"debug/buildinfo"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"golang.org/x/mod/module"
)

// modRef is one module of a binary and where its files are to be found.
type modRef struct {
	Path, Version string
	Main          bool
	// From is the module version whose files were built: the module
	// itself or its replacement. For a directory replacement From.Path is
	// the directory as the main go.mod wrote it and From.Version is "".
	From     module.Version
	Replaced bool
	// Sum is the binary's hash of From; empty when not recorded.
	Sum string
}

func (r modRef) ref() string {
	if r.Version == "" {
		return r.Path
	}
	return r.Path + "@" + r.Version
}

// local tells whether the module's files were a directory on the build
// machine rather than a module version.
func (r modRef) local() bool { return r.From.Version == "" || r.From.Version == "(devel)" }

// readBuildInfo lists the modules linked into binary, sorted by path;
// errors call it name.
// Every path must be a valid import path: they name directories of the
// output, and a binary is not trusted to be well-formed.
func readBuildInfo(binary, name string, maxModules int) (*buildinfo.BuildInfo, []modRef, error) {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the Go build info of %s: %w", name, err)
	}
	if info.Main.Path == "" {
		if len(info.Deps) > 0 {
			return nil, nil, fmt.Errorf("build info of %s lists modules but no main module", name)
		}
		// Built outside module mode: the Go distribution's own
		// commands (cmd/asm, gofmt: Go's licence, as for the standard
		// library of any binary), or a GOPATH build. No module to read.
		return info, nil, nil
	}
	if n := 1 + len(info.Deps); n > maxModules {
		return nil, nil, fmt.Errorf("%s links %d modules, over the limit of %d (MaxModules)", name, n, maxModules)
	}
	refs := []modRef{toRef(info.Main, true)}
	for _, d := range info.Deps {
		if d != nil {
			refs = append(refs, toRef(*d, false))
		}
	}
	seen := map[string]bool{}
	for _, r := range refs {
		if err := checkRef(r); err != nil {
			return nil, nil, fmt.Errorf("build info of %s: %w", binary, err)
		}
		if seen[r.Path] {
			return nil, nil, fmt.Errorf("build info of %s lists module %s twice", binary, r.Path)
		}
		seen[r.Path] = true
	}
	slices.SortFunc(refs, func(a, b modRef) int { return strings.Compare(a.Path, b.Path) })
	return info, refs, nil
}

func toRef(m debug.Module, main bool) modRef {
	r := modRef{Path: m.Path, Version: m.Version, Main: main, From: module.Version{Path: m.Path, Version: m.Version}, Sum: m.Sum}
	if m.Replace != nil {
		r.Replaced = true
		r.From = module.Version{Path: m.Replace.Path, Version: m.Replace.Version}
		r.Sum = m.Replace.Sum
		if r.From.Version == "(devel)" {
			// A directory replacement, as go.mod and modules.txt write it.
			r.From.Version = ""
		}
	}
	return r
}

// checkRef refuses paths that could not be a directory name in the output
// and versions the module cache could not name.
func checkRef(r modRef) error {
	if err := module.CheckImportPath(r.Path); err != nil {
		return fmt.Errorf("module path %q: %w", r.Path, err)
	}
	if r.Sum != "" && !strings.HasPrefix(r.Sum, "h1:") {
		return fmt.Errorf("module %s: hash %q is not an h1: hash", r.ref(), r.Sum)
	}
	// The main module's version may be a VCS stamp ("v1.2.3+dirty"), not
	// a module version: it is then looked for in the source directory.
	if r.local() || (r.Main && r.Sum == "") {
		return nil
	}
	if err := module.Check(r.From.Path, r.From.Version); err != nil {
		return fmt.Errorf("module %s: %w", r.ref(), err)
	}
	return nil
}

// fetchable tells whether the module can be asked of the module cache or
// the proxy by path and version.
func (r modRef) fetchable() bool {
	return !r.local() && module.Check(r.From.Path, r.From.Version) == nil
}

// NeedsSource tells whether Collect needs the source tree the binary was
// built from to find the files of its dependencies: when its build info
// names a module built from a directory (a replace with a path) or one
// without a hash (a vendored build). The main module aside: its files are
// the program's own, found with it.
func NeedsSource(binary string) (bool, error) {
	_, refs, err := readBuildInfo(binary, binary, DefaultMaxModules)
	if err != nil {
		return false, err
	}
	for _, r := range refs {
		if !r.Main && (r.local() || r.Sum == "") {
			return true, nil
		}
	}
	return false, nil
}
