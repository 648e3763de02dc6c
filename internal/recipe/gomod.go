package recipe

import (
	"fmt"
	"strings"

	"golang.org/x/mod/module"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/platform"
)

// GoModule builds Go main packages of a module version fetched through the
// Go module proxy (GOPROXY), pinned by its go.sum hash: a source build
// without git. It takes the settings of a go section, but for the module
// directory; as version names the module's version here, the toolchain is
// pinned by toolchain.
type GoModule struct {
	// Module is the module path ("sigs.k8s.io/cri-tools").
	Module string `yaml:"module"`
	// Version is the module's version: a release tag or pseudo-version,
	// never a query such as latest.
	Version string `yaml:"version"`
	// Sum is the module's go.sum hash ("h1:..."), required.
	Sum string `yaml:"sum"`
	// Commit is the upstream commit the version was made from, for
	// {{commit}} (the revision a program prints): the module's sum does
	// not cover it, so it is checked where something can be: against a
	// pseudo-version's revision, and against the commit the module proxy
	// reports for the version when it reports one.
	Commit string `yaml:"commit"`
	// Path takes this file or directory of the module, relative to its
	// root, instead of building it: the scripts and configuration a
	// module keeps beside its code, pinned by the same sum.
	Path string `yaml:"path"`
	// Packages are relative to the module's root.
	Packages  List              `yaml:"packages"`
	Ldflags   List              `yaml:"ldflags"`
	Tags      List              `yaml:"tags"`
	CGO       bool              `yaml:"cgo"`
	Trimpath  *bool             `yaml:"trimpath"`
	Flags     List              `yaml:"flags"`
	Env       List              `yaml:"env"`
	Toolchain string            `yaml:"toolchain"`
	CC        map[string]string `yaml:"cc"`
}

// goSumRE is an h1: hash as go.sum writes it: base64 of a sha256.
var goSumRE = lazyre.New(`^h1:[A-Za-z0-9+/]{43}=$`)

// goBuild is m's build as a go section says it; the toolchain is left to
// the caller, as its field has another name here.
func (m *GoModule) goBuild() *GoBuild {
	return &GoBuild{Module: ".", Packages: m.Packages, Ldflags: m.Ldflags, Tags: m.Tags, CGO: m.CGO,
		Trimpath: m.Trimpath, Flags: m.Flags, Env: m.Env, CC: m.CC}
}

// checkGoModule checks a gomod section at path at.
func (r *Recipe) checkGoModule(name, at string, m *GoModule) error {
	if m.Module == "" {
		return r.Errorf(at, "artifact %s: gomod.module is required (the module path)", name)
	}
	if m.Version == "" {
		return r.Errorf(at, "artifact %s: gomod.version is required (the module's version, such as v1.2.3)", name)
	}
	if err := r.checkModuleVersion(name, at, m.Module, m.Version); err != nil {
		return err
	}
	if !goSumRE().MatchString(m.Sum) && !(r.unpinned && m.Sum == "") {
		// Say where it comes from.
		v := m.Version
		if a := r.Artifacts[name]; a != nil && a.Version != "" && !strings.Contains(a.Version, "{{") {
			v = strings.ReplaceAll(v, "{{version}}", a.Version)
		}
		if strings.Contains(v, "{{") {
			v = "VERSION"
		}
		return r.Errorf(at+".sum", "artifact %s: gomod.sum must be the module's go.sum hash, h1: and 44 base64 characters (got %q); pallet lock writes it, and `go mod download -json %s@%s` prints it as Sum", name, m.Sum, m.Module, v)
	}
	if m.Commit != "" && !commitRE().MatchString(m.Commit) {
		return r.Errorf(at+".commit", "artifact %s: gomod.commit must be a full commit hash (40 or 64 lower-case hex digits; got %q)", name, m.Commit)
	}
	if _, ok := r.lines[at+".path"]; ok {
		return r.checkModuleFiles(name, at, m)
	}
	if len(m.Packages) == 0 {
		return r.Errorf(at, "artifact %s: gomod.packages is required (to build the module), or gomod.path (to take files of it)", name)
	}
	for i, pkg := range m.Packages {
		// A module the proxy serves has a dot in its path's first element,
		// and so has every module it requires: a package without one is
		// the standard library's, which go reports only after the module
		// is fetched, as "not in std", at the section's line.
		first, _, _ := strings.Cut(pkg, "/")
		if strings.Contains(first, ".") || strings.Contains(pkg, "{{") || strings.HasPrefix(pkg, "-") || outsideModule(pkg) {
			continue
		}
		return r.Errorf(fmt.Sprintf("%s.packages.%d", at, i), "artifact %s: package %q is not a package of %s (as written it is the standard library's); name it relative to the module's root: ./%s", name, pkg, m.Module, pkg)
	}
	if m.Toolchain != "" && !strings.Contains(m.Toolchain, "{{") {
		if err := CheckGoVersion(m.Toolchain); err != nil {
			return r.Errorf(at+".toolchain", "artifact %s: %v", name, err)
		}
	}
	return r.checkGo(name, at, m.goBuild())
}

// buildFields are a gomod section's settings of its build, which files
// taken by path do not have.
var buildFields = []string{"ldflags", "tags", "cgo", "trimpath", "flags", "env", "toolchain", "cc"}

// checkModuleFiles checks a gomod section that takes files of the module
// (path) instead of building it: nothing of a build goes with it.
func (r *Recipe) checkModuleFiles(name, at string, m *GoModule) error {
	if _, ok := r.lines[at+".packages"]; ok {
		return r.Errorf(at+".path", "artifact %s: gomod.path takes files of the module as they are and gomod.packages builds it; give one of them", name)
	}
	for _, f := range buildFields {
		if _, ok := r.lines[at+"."+f]; ok {
			return r.Errorf(at+"."+f, "artifact %s: gomod.%s is a setting of a build, and gomod.path takes files of the module as they are, unbuilt", name, f)
		}
	}
	if strings.Contains(m.Path, "{{") {
		return nil
	}
	if _, err := artifact.CleanModulePath(m.Path); err != nil {
		return r.Errorf(at+".path", "artifact %s: %v", name, err)
	}
	return nil
}

// checkModuleVersion checks a module path and version, each once it holds
// no variable left to expand.
func (r *Recipe) checkModuleVersion(name, at, path, version string) error {
	if strings.Contains(path, "{{") {
		return nil
	}
	if err := module.CheckPath(path); err != nil {
		return r.Errorf(at+".module", "artifact %s: %v", name, err)
	}
	if strings.Contains(version, "{{") {
		return nil
	}
	if err := module.Check(path, version); err != nil {
		// 1.6.2, as releases are named, is a semantic version to the
		// eye; go's "not a semantic version" does not say the v is
		// missing, nor that a Go release meant here belongs elsewhere.
		if !strings.HasPrefix(version, "v") && module.Check(path, "v"+version) == nil {
			return r.Errorf(at+".version", "artifact %s: %s@%s: invalid version: a module version begins with v (write v%s); the Go that builds it is set by toolchain", name, path, version, version)
		}
		return r.Errorf(at+".version", "artifact %s: %v (a version pins the module: a query such as latest does not)", name, err)
	}
	return nil
}

// checkModuleSource checks a source mode that builds a module by version:
// git and go do not go with it.
func (r *Recipe) checkModuleSource(name, at string, s *Source) error {
	for _, k := range []string{"git", "go"} {
		if _, ok := r.lines[at+"."+k]; ok {
			return r.Errorf(at+"."+k, "artifact %s: source mode: give either git and go, or gomod, not both", name)
		}
	}
	return r.checkGoModule(name, at+".gomod", s.Gomod)
}

// goModule is the kind of a gomod section: a build of the module, or
// files of it (path).
func (r *Recipe) goModule(name, at string, m *GoModule, pf platform.Platform, v Vars) (artifact.Kind, error) {
	path, err := r.Expand(at+".module", m.Module, v)
	if err != nil {
		return nil, err
	}
	ver, err := r.Expand(at+".version", m.Version, v)
	if err != nil {
		return nil, err
	}
	if err := r.checkModuleVersion(name, at, path, ver); err != nil {
		return nil, err
	}
	if m.Commit != "" && module.IsPseudoVersion(ver) {
		if rev, err := module.PseudoVersionRev(ver); err == nil && !strings.HasPrefix(m.Commit, rev) {
			return nil, r.Errorf(at+".commit", "artifact %s: commit %s is not the one pseudo-version %s names (%s...)", name, m.Commit, ver, rev)
		}
	}
	if m.Path != "" {
		p, err := r.Expand(at+".path", m.Path, v)
		if err != nil {
			return nil, err
		}
		if p, err = artifact.CleanModulePath(p); err != nil {
			return nil, r.Errorf(at+".path", "artifact %s: %v", name, err)
		}
		return &artifact.GoModuleFiles{Module: path, Version: ver, Sum: m.Sum, Commit: m.Commit, Path: p}, nil
	}
	tc, err := r.Expand(at+".toolchain", m.Toolchain, v)
	if err != nil {
		return nil, err
	}
	if tc != "" {
		if err := CheckGoVersion(tc); err != nil {
			return nil, r.Errorf(at+".toolchain", "artifact %s: %v", name, err)
		}
	}
	g, err := r.goBuild(at, m.goBuild(), pf, v)
	if err != nil {
		return nil, err
	}
	g.Version = tc
	return &artifact.GoModule{Path: path, Version: ver, Sum: m.Sum, Commit: m.Commit, Go: *g}, nil
}
