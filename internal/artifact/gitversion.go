package artifact

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// ModuleTagVersion is the version tag gives the module modPath kept in the
// repository's directory dir, if it gives one. As for the go command, the
// tags of a module in a subdirectory carry the directory as a prefix, less
// a major-version directory: module .../api/v2 in api/v2 is tagged
// api/v2.0.0.
func ModuleTagVersion(dir, modPath, tag string) (string, bool) {
	prefix := path.Clean(filepath.ToSlash(dir))
	if _, major, ok := module.SplitPathVersion(modPath); ok && major != "" && path.Base(prefix) == strings.TrimPrefix(major, "/") {
		prefix = path.Dir(prefix)
	}
	if prefix == "." {
		prefix = ""
	} else {
		prefix += "/"
	}
	v, ok := strings.CutPrefix(tag, prefix)
	// The go command takes only canonical tags as versions (not v1.2).
	if !ok || semver.Canonical(v) != v || module.Check(modPath, v) != nil {
		return "", false
	}
	return v, true
}

// tagCheckout leaves the checkout at src with one tag, g.Tag at g.Commit
// (which the fetch proved upstream's), when that tag is a version of the
// module in moduleDir (its directory in the checkout, as the recipe names
// it, and on disk). It tells whether it did: go build -buildvcs=true then
// names the main module by that version and stamps the commit, as a build
// in upstream's clone at the tag does (Go 1.24 and later), so that
// scanners reading the binary (govulncheck, trivy, grype) match it
// against advisories instead of finding (devel). Every other tag goes: a
// fetch of the whole repository brings all of upstream's and one of the
// commit alone brings none, and the go command would stamp a version
// derived from whichever it found.
func tagCheckout(ctx context.Context, src, moduleDir, dirOnDisk string, g gitRef) (bool, error) {
	if g.Tag == "" {
		return false, nil
	}
	data, err := bounded.ReadFile(filepath.Join(dirOnDisk, "go.mod"), MaxGoMod)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // no module to name: go build says so
	}
	if err != nil {
		return false, fmt.Errorf("%s at %s: %w", ShownURL(g.Repo), g.Commit, err)
	}
	if _, ok := ModuleTagVersion(moduleDir, modfile.ModulePath(data), g.Tag); !ok {
		return false, nil
	}
	refs, err := git(ctx, src, "for-each-ref", "--format=%(refname)", "refs/tags/")
	if err != nil {
		return false, err
	}
	// One transaction, and no configuration read: a lightweight tag is
	// what the go command needs, never a signed one.
	tagRef := "refs/tags/" + g.Tag
	var input strings.Builder
	for _, ref := range strings.Fields(refs) {
		if ref != tagRef {
			fmt.Fprintf(&input, "delete %s\n", ref)
		}
	}
	fmt.Fprintf(&input, "update %s %s\n", tagRef, g.Commit)
	cmd := gitCommand(ctx, src, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(input.String())
	stderr := &bounded.Output{Max: maxCommandComplaint}
	cmd.Stderr = stderr
	if err := bounded.Answered(cmd, cmd.Run()); err != nil {
		return false, fmt.Errorf("%s: tagging the checkout %s: %w%s", ShownURL(g.Repo), g.Tag, err, Saying(strings.TrimSpace(stderr.String())))
	}
	return true, nil
}
