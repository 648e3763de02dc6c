package sbom

import (
	"fmt"
	"strings"
)

// version is what the documents give as an artifact's version: the
// recipe's, else the module's, else the commit.
func (a *Artifact) version() string {
	switch {
	case a.Version != "":
		return a.Version
	case a.Module != "":
		_, v, _ := strings.Cut(a.Module, "@")
		return v
	case a.Commit != "":
		return a.Commit
	}
	return ""
}

// fileDigest is the sha256 of the one file the artifact was made from (a
// download, a local file), or empty when there is no such file.
func (a *Artifact) fileDigest() string {
	switch {
	case a.URL != "":
		return sha256Hex(a.SHA256)
	case a.Path != "" && a.GoVersion == "" && !a.LocalDir:
		return sha256Hex(a.SHA256)
	}
	return ""
}

// isLocal says the artifact came from the builder's disk (a local file,
// directory or Go module): it has no download location.
func (a *Artifact) isLocal() bool {
	return a.URL == "" && a.Repo == "" && a.Module == ""
}

// downloadLocation is the SPDX download location of an artifact.
func (in *Input) downloadLocation(a *Artifact) string {
	loc := ""
	switch {
	case a.URL != "":
		loc = remote(a.URL)
	case a.Repo != "":
		// SPDX's own form for a part of a repository: #path after the
		// commit.
		if loc = gitLocation(a.Repo, a.Commit); loc != "" && a.GitPath != "" {
			loc += "#" + a.GitPath
		}
	case a.isLocal():
		return none
	}
	if loc == "" {
		return noAssertion
	}
	return loc
}

// origin says in words where an artifact came from and what pins it.
func (in *Input) origin(a *Artifact) string {
	var s string
	switch {
	case a.URL != "":
		s = fmt.Sprintf("Downloaded from %s and checked against its pinned sha256.", in.where(a.URL))
	case a.Repo != "" && a.GitPath != "":
		s = fmt.Sprintf("Taken as it is from %s at commit %s of %s.", a.GitPath, a.Commit, in.where(a.Repo))
	case a.Repo != "":
		s = fmt.Sprintf("Built with %s from commit %s of %s.", orUnknown(a.GoVersion), a.Commit, in.where(a.Repo))
	case a.Module != "" && a.InModule != "":
		s = fmt.Sprintf("Taken as it is from %s of Go module %s (go.sum %s) from the module proxy.", a.InModule, a.Module, a.SHA256)
	case a.Module != "":
		s = fmt.Sprintf("Go module %s (go.sum %s) from the module proxy, built with %s.", a.Module, a.SHA256, orUnknown(a.GoVersion))
	case a.GoVersion != "":
		s = fmt.Sprintf("Built with %s from the local Go module %s.", a.GoVersion, in.localPath(a.Path))
	case a.LocalDir:
		s = fmt.Sprintf("Taken from the local directory %s (pallet tree digest %s).", in.localPath(a.Path), a.SHA256)
	default:
		s = fmt.Sprintf("Taken from the local file %s.", in.localPath(a.Path))
	}
	if a.Mode != "" {
		s += " The build chose its " + a.Mode + " mode."
	}
	return s
}

// where shows a URL or repository: itself without credentials when it is
// another machine's, else as a local path.
func (in *Input) where(u string) string {
	if r := remote(u); r != "" {
		return r
	}
	p := strings.TrimPrefix(u, "file://")
	return "the local path " + in.localPath(p)
}

func orUnknown(goVersion string) string {
	if goVersion == "" {
		return "an unrecorded Go"
	}
	return goVersion
}

// origin says where a module of a binary's build list came from.
func (m *modNode) origin() string {
	var parts []string
	if m.sum != "" {
		parts = append(parts, "go.sum hash "+m.sum)
	}
	switch {
	case m.local:
		parts = append(parts, "replaced by a local directory in the build")
	case m.replaced != "":
		parts = append(parts, "replaces "+m.replaced)
	}
	return strings.Join(parts, "; ")
}
