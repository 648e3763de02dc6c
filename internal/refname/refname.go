// Package refname reads image references by the distribution grammar
// (github.com/distribution/reference), which docker, containerd and
// registries read them by, without regular expressions. That package
// compiles eight patterns when the program starts, 3.5 ms of every pallet
// command, a no-op build's included, most of which never reads a
// reference; its answers and errors are the ones given here, which the
// tests check against it.
package refname

import (
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
)

// NameTotalLengthMax is the longest repository path (the name after its
// registry host) the grammar allows.
const NameTotalLengthMax = 255

// The errors of github.com/distribution/reference, word for word.
var (
	ErrReferenceInvalidFormat = errors.New("invalid reference format")
	ErrTagInvalidFormat       = errors.New("invalid tag format")
	ErrNameContainsUppercase  = errors.New("repository name must be lowercase")
	ErrNameEmpty              = errors.New("repository name must have at least one component")
	ErrNameTooLong            = fmt.Errorf("repository name must not be more than %v characters", NameTotalLengthMax)
)

const (
	defaultDomain       = "docker.io"
	legacyDefaultDomain = "index.docker.io"
	officialRepoPrefix  = "library/"
)

// Named is a parsed reference: a repository (Domain may be empty) with
// an optional tag and digest.
type Named struct {
	Domain, Path, Tag string
	Digest            digest.Digest
}

// Name is the repository: DOMAIN/PATH, or PATH without a domain.
func (n Named) Name() string {
	if n.Domain == "" {
		return n.Path
	}
	return n.Domain + "/" + n.Path
}

// String is the reference as written: NAME[:TAG][@DIGEST].
func (n Named) String() string {
	s := n.Name()
	if n.Tag != "" {
		s += ":" + n.Tag
	}
	if n.Digest != "" {
		s += "@" + n.Digest.String()
	}
	return s
}

// CheckName refuses what reference.WithName refuses: a name that is not
// [DOMAIN/]PATH, or whose path is longer than NameTotalLengthMax.
func CheckName(name string) error {
	_, path, ok := splitName(name)
	if !ok {
		return ErrReferenceInvalidFormat
	}
	if len(path) > NameTotalLengthMax {
		return ErrNameTooLong
	}
	return nil
}

// SplitName splits name, by the grammar, into its registry host (empty
// where it has none) and its path, the part NameTotalLengthMax bounds;
// ok is false where name is no [DOMAIN/]PATH.
func SplitName(name string) (domain, path string, ok bool) { return splitName(name) }

// CheckTag refuses what reference.WithTag refuses: a tag that is not
// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func CheckTag(tag string) error {
	if !isTag(tag) {
		return ErrTagInvalidFormat
	}
	return nil
}

// ParseNormalizedNamed reads s as reference.ParseNormalizedNamed does: a
// name without a registry host is docker.io's, and one without a
// namespace there is under library/.
func ParseNormalizedNamed(s string) (Named, error) {
	if len(s) == 64 && all(s, isLowerHex) {
		return Named{}, fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", s)
	}
	domain, remainder := splitDockerDomain(s)
	remote := remainder
	if i := strings.IndexRune(remainder, ':'); i > -1 {
		remote = remainder[:i]
	}
	if strings.ToLower(remote) != remote {
		return Named{}, fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", remote)
	}
	return Parse(domain + "/" + remainder)
}

// Parse reads s as reference.Parse does, which for s with a name (every
// s the grammar takes) is a Named.
func Parse(s string) (Named, error) {
	name, tag, dgst, ok := splitReference(s)
	if !ok {
		if s == "" {
			return Named{}, ErrNameEmpty
		}
		if _, _, _, ok := splitReference(strings.ToLower(s)); ok {
			return Named{}, ErrNameContainsUppercase
		}
		return Named{}, ErrReferenceInvalidFormat
	}
	domain, path, _ := splitName(name)
	if len(path) > NameTotalLengthMax {
		return Named{}, ErrNameTooLong
	}
	n := Named{Domain: domain, Path: path, Tag: tag}
	if dgst != "" {
		d, err := digest.Parse(dgst)
		if err != nil {
			return Named{}, err
		}
		n.Digest = d
	}
	return n, nil
}

// splitDockerDomain is reference's: the first component is a registry
// host when it is localhost, has a '.' or ':', or is not lower-case.
func splitDockerDomain(name string) (domain, remoteName string) {
	maybeDomain, maybeRemoteName, ok := strings.Cut(name, "/")
	if !ok {
		return defaultDomain, officialRepoPrefix + name
	}
	switch {
	case maybeDomain == "localhost":
		domain, remoteName = maybeDomain, maybeRemoteName
	case maybeDomain == legacyDefaultDomain:
		domain, remoteName = defaultDomain, maybeRemoteName
	case strings.ContainsAny(maybeDomain, ".:"):
		domain, remoteName = maybeDomain, maybeRemoteName
	case strings.ToLower(maybeDomain) != maybeDomain:
		domain, remoteName = maybeDomain, maybeRemoteName
	default:
		domain, remoteName = defaultDomain, name
	}
	if domain == defaultDomain && !strings.ContainsRune(remoteName, '/') {
		remoteName = officialRepoPrefix + remoteName
	}
	return domain, remoteName
}

// splitReference matches s against the grammar's whole reference,
// NAME[:TAG][@DIGEST]. No part can hold an '@', and neither a tag nor a
// digest a '/', so a ':' after the last '/' (before any '@') starts the
// tag: a host's port is always followed by a '/'.
func splitReference(s string) (name, tag, dgst string, ok bool) {
	name = s
	if i := strings.IndexByte(s, '@'); i >= 0 {
		name, dgst = s[:i], s[i+1:]
		if !isDigest(dgst) {
			return "", "", "", false
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
		if !isTag(tag) {
			return "", "", "", false
		}
	}
	if _, _, ok := splitName(name); !ok {
		return "", "", "", false
	}
	return name, tag, dgst, true
}

// splitName matches [DOMAIN/]PATH. A domain cannot hold a '/', so it can
// only be the first component; the pattern tries it as a domain first,
// and reads the whole as a path when that fails.
func splitName(s string) (domain, path string, ok bool) {
	if d, p, found := strings.Cut(s, "/"); found && isDomain(d) && isRemoteName(p) {
		return d, p, true
	}
	if isRemoteName(s) {
		return "", s, true
	}
	return "", "", false
}

// isRemoteName matches path components joined by '/'.
func isRemoteName(s string) bool {
	for {
		c, rest, more := strings.Cut(s, "/")
		if !isPathComponent(c) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// isPathComponent matches [a-z0-9]+ runs joined by one '.', one '_',
// "__" or any number of '-'.
func isPathComponent(s string) bool {
	i := 0
	for {
		start := i
		for i < len(s) && isLowerAlnum(s[i]) {
			i++
		}
		if i == start {
			return false
		}
		if i == len(s) {
			return true
		}
		switch {
		case s[i] == '.':
			i++
		case strings.HasPrefix(s[i:], "__"):
			i += 2
		case s[i] == '_':
			i++
		case s[i] == '-':
			for i < len(s) && s[i] == '-' {
				i++
			}
		default:
			return false
		}
	}
}

// isDomain matches a host (DNS labels joined by '.', or an IPv6 address
// in brackets) with an optional :PORT.
func isDomain(s string) bool {
	host, port, hasPort := cutPort(s)
	if hasPort && (port == "" || !all(port, isDigit)) {
		return false
	}
	if strings.HasPrefix(host, "[") {
		inner, ok := strings.CutSuffix(host[1:], "]")
		return ok && inner != "" && all(inner, func(c byte) bool { return c == ':' || isHex(c) })
	}
	for {
		label, rest, more := strings.Cut(host, ".")
		if !isDomainLabel(label) {
			return false
		}
		if !more {
			return true
		}
		host = rest
	}
}

// cutPort splits a trailing :PORT off a host: after the ']' of an IPv6
// address, or at the only ':' of any other host.
func cutPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, ']')
		if i < 0 || i+1 == len(s) {
			return s, "", false
		}
		if s[i+1] != ':' {
			return s, "", false
		}
		return s[:i+1], s[i+2:], true
	}
	return strings.Cut(s, ":")
}

// isDomainLabel matches [a-zA-Z0-9] or [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9].
func isDomainLabel(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	return all(s, func(c byte) bool { return isAlnum(c) || c == '-' })
}

// isTag matches [\w][\w.-]{0,127}.
func isTag(s string) bool {
	if s == "" || len(s) > 128 || !isWord(s[0]) {
		return false
	}
	return all(s, func(c byte) bool { return isWord(c) || c == '.' || c == '-' })
}

// isDigest matches
// [A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}.
func isDigest(s string) bool {
	alg, hex, ok := strings.Cut(s, ":")
	if !ok || len(hex) < 32 || !all(hex, isHex) {
		return false
	}
	for i := 0; ; {
		if i == len(alg) || !isLetter(alg[i]) {
			return false
		}
		for i++; i < len(alg) && isAlnum(alg[i]); i++ {
		}
		if i == len(alg) {
			return true
		}
		switch alg[i] {
		case '-', '_', '+', '.':
			i++
		default:
			return false
		}
	}
}

func all(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isLetter(c byte) bool     { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool      { return isDigit(c) || isLetter(c) }
func isLowerAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' }
func isWord(c byte) bool       { return isAlnum(c) || c == '_' }
func isHex(c byte) bool        { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isLowerHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' }
