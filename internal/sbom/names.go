package sbom

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/lazyre"
)

// newID returns the SPDX id (and CycloneDX bom-ref) of an element: its
// kind, a readable part, and a hash of key, which says what the element
// is; so ids do not depend on the order elements are met in.
func (g *graph) newID(kind, readable, key string) string {
	sum := sha256.Sum256([]byte(key))
	r := idUnsafe().ReplaceAllString(readable, "-")
	r = strings.Trim(r, "-.")
	if len(r) > 64 {
		r = strings.Trim(r[len(r)-64:], "-.")
	}
	id := "SPDXRef-" + kind + "-"
	if r != "" {
		id += r + "-"
	}
	id += hex.EncodeToString(sum[:8])
	if old, ok := g.ids[id]; ok && old != key {
		// Only a sha256 collision on 64 bits gets here.
		g.ids[""] = fmt.Sprintf("%s and %s", old, key)
		return ""
	}
	g.ids[id] = key
	return id
}

// idUnsafe is what SPDX ids may not hold: they are SPDXRef- and then
// letters, digits, '.' and '-'.
var idUnsafe = lazyre.New(`[^A-Za-z0-9.-]+`)

// purlEscape percent-encodes s as a purl component: everything but
// letters, digits and .-_~ (and the characters in keep).
func purlEscape(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".-_~"+keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// purl builds a package URL: type, a slash-separated namespace/name path
// (each segment escaped), version, and qualifiers in key order.
func purl(typ, namePath, version string, qualifiers map[string]string) string {
	segs := strings.Split(namePath, "/")
	for i, s := range segs {
		segs[i] = purlEscape(s, "")
	}
	p := "pkg:" + typ + "/" + strings.Join(segs, "/")
	if version != "" {
		p += "@" + purlEscape(version, "")
	}
	var qs []string
	for _, k := range slices.Sorted(maps.Keys(qualifiers)) {
		if v := qualifiers[k]; v != "" {
			qs = append(qs, k+"="+purlEscape(v, "/"))
		}
	}
	if len(qs) > 0 {
		p += "?" + strings.Join(qs, "&")
	}
	return p
}

// goPurl is the purl of a Go module; a version-less one for a module
// without a version (a local main module, a directory replacement).
func goPurl(modPath, version string) string { return purl("golang", modPath, version, nil) }

// artifactPurl is the purl of an artifact from a Go module: the module's,
// with the path in it as the subpath for files taken from the module (so
// that a scanner does not take a script for the whole module).
func artifactPurl(a *Artifact) string {
	path, version, _ := strings.Cut(a.Module, "@")
	p := goPurl(path, version)
	var segs []string
	for _, s := range strings.Split(a.InModule, "/") {
		if s != "" && s != "." && s != ".." {
			segs = append(segs, purlEscape(s, ""))
		}
	}
	if len(segs) > 0 {
		p += "#" + strings.Join(segs, "/")
	}
	return p
}

// stdlibPurl is the purl scanners match Go's standard library by
// ("pkg:golang/stdlib@1.22.7"): the release, without "go" or the
// experiments a toolchain string may carry.
func stdlibPurl(goVersion string) string {
	v := strings.TrimPrefix(goVersion, "devel ")
	if i := strings.IndexAny(v, " -"); i >= 0 {
		v = v[:i]
	}
	return purl("golang", "stdlib", strings.TrimPrefix(v, "go"), nil)
}

// h1Hex is the hex of a go.sum "h1:" hash (base64 of a SHA-256, which the
// in-toto DigestSet calls dirHash), or empty when sum is not one.
func h1Hex(sum string) string {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != sha256.Size {
		return ""
	}
	return hex.EncodeToString(raw)
}

// ociPurl is the purl of an image by name and manifest digest.
func ociPurl(repo, digest, arch, tag string) string {
	nm := strings.ToLower(path.Base(repo))
	q := map[string]string{"arch": arch, "tag": tag}
	if strings.Contains(repo, "/") {
		q["repository_url"] = repo
	}
	return purl("oci", nm, digest, q)
}

// arch is the architecture of an "os/arch[/variant]" platform.
func arch(platform string) string {
	parts := strings.Split(platform, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// newBase describes the image's base, or nil for scratch (nothing).
func newBase(in *Input) *baseNode {
	ref, digest := in.Base.Ref, in.Base.Digest
	switch {
	case ref == "" || ref == image.Scratch:
		return nil
	case image.IsBuiltin(ref):
		// Built by pallet itself: no repository to name.
		return &baseNode{name: ref, digest: digest, purl: ociPurlIf(ref, digest, arch(in.Platform), "")}
	case strings.HasPrefix(ref, "oci:"):
		// Split as the build split it when it read the base; the path
		// stays relative to the recipe, for localPath.
		dir, tag, _ := image.LayoutRef(ref, "")
		shown := in.localPath(dir)
		nm := shown
		if tag != "" {
			nm += ":" + tag
		}
		return &baseNode{name: "oci:" + nm, digest: digest, purl: ociPurlIf(path.Base(shown), digest, arch(in.Platform), tag)}
	}
	b := &baseNode{name: ref, digest: digest}
	r, err := name.ParseReference(ref)
	if err != nil {
		return b
	}
	reg := r.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	tag := ""
	if t, ok := r.(name.Tag); ok {
		tag = t.TagStr()
	}
	b.purl = ociPurlIf(reg+"/"+r.Context().RepositoryStr(), digest, arch(in.Platform), tag)
	return b
}

// ociPurlIf is ociPurl when the digest is known: a purl without one
// names no particular image.
func ociPurlIf(repo, digest, arch, tag string) string {
	if digest == "" {
		return ""
	}
	return ociPurl(repo, digest, arch, tag)
}

// localPath shows a path of the builder's machine: relative to the
// recipe's directory when under it, else by its base name alone.
func (in *Input) localPath(p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if in.Dir == "" {
			return filepath.ToSlash(filepath.Clean(p))
		}
		p = filepath.Join(in.Dir, p)
	}
	if in.Dir != "" {
		if rel, err := filepath.Rel(in.Dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(p)
}

// remote returns u without credentials when it is a URL of another
// machine, or empty for a local path or file URL (whose path is the
// builder's).
func remote(u string) string {
	if strings.HasPrefix(u, "git@") || scpLike().MatchString(u) {
		// user@host:path, git's scp syntax.
		host, p, _ := strings.Cut(u[strings.IndexByte(u, '@')+1:], ":")
		return "ssh://" + host + "/" + strings.TrimPrefix(p, "/")
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme == "" || pu.Scheme == "file" || pu.Host == "" {
		return ""
	}
	pu.User = nil
	return pu.String()
}

var scpLike = lazyre.New(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]`)

// gitLocation is the SPDX download location of a repository at a commit
// ("git+https://host/repo@<commit>"), or empty for a local repository.
func gitLocation(repo, commit string) string {
	r := remote(repo)
	if r == "" {
		return ""
	}
	if !strings.HasPrefix(r, "git+") {
		r = "git+" + r
	}
	return r + "@" + commit
}

// checkLicenseExpression checks the syntax of an SPDX licence expression
// (SPDX 2.3 annex D): identifiers, LicenseRef-s, AND, OR, WITH and
// parentheses. Whether an identifier is on the SPDX list is not checked.
func checkLicenseExpression(expr string) error {
	toks := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(expr))
	if len(toks) == 0 {
		return errors.New("empty")
	}
	p := &exprParser{toks: toks}
	if err := p.expr(); err != nil {
		return err
	}
	if p.i != len(toks) {
		return fmt.Errorf("unexpected %q", toks[p.i])
	}
	return nil
}

type exprParser struct {
	toks []string
	i    int
}

var licenseIDRE = lazyre.New(`^((DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+|[A-Za-z0-9][A-Za-z0-9.-]*\+?)$`)

func (p *exprParser) next() string {
	if p.i >= len(p.toks) {
		return ""
	}
	t := p.toks[p.i]
	p.i++
	return t
}

func (p *exprParser) expr() error {
	for {
		if err := p.term(); err != nil {
			return err
		}
		if p.i < len(p.toks) && (p.toks[p.i] == "AND" || p.toks[p.i] == "OR") {
			p.i++
			continue
		}
		return nil
	}
}

func (p *exprParser) term() error {
	t := p.next()
	switch {
	case t == "(":
		if err := p.expr(); err != nil {
			return err
		}
		if p.next() != ")" {
			return errors.New("unbalanced parentheses")
		}
		return nil
	case t == "" || t == ")" || isOperator(t) || !licenseIDRE().MatchString(t):
		return fmt.Errorf("want a licence identifier, got %q", t)
	}
	if p.i < len(p.toks) && p.toks[p.i] == "WITH" {
		p.i++
		if e := p.next(); e == "" || isOperator(e) || !licenseIDRE().MatchString(e) {
			return fmt.Errorf("want an exception identifier after WITH, got %q", e)
		}
	}
	return nil
}

func isOperator(t string) bool { return t == "AND" || t == "OR" || t == "WITH" }
