package refname

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// agree fails t where refname reads s otherwise than
// github.com/distribution/reference: another answer, another error, or
// other parts.
func agree(t *testing.T, s string) {
	t.Helper()
	for _, p := range []struct {
		fn   string
		want func(string) (reference.Named, error)
		got  func(string) (Named, error)
	}{
		{"ParseNormalizedNamed", reference.ParseNormalizedNamed, ParseNormalizedNamed},
		{"Parse", func(s string) (reference.Named, error) {
			r, err := reference.Parse(s)
			if err != nil {
				return nil, err
			}
			return r.(reference.Named), nil
		}, Parse},
	} {
		want, werr := p.want(s)
		got, gerr := p.got(s)
		if werr != nil || gerr != nil {
			if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
				t.Errorf("%s(%q): error %v, distribution/reference's %v", p.fn, s, gerr, werr)
			}
			continue
		}
		var tag, dgst string
		if r, ok := want.(reference.Tagged); ok {
			tag = r.Tag()
		}
		if r, ok := want.(reference.Digested); ok {
			dgst = r.Digest().String()
		}
		if got.String() != want.String() || got.Domain != reference.Domain(want) || got.Path != reference.Path(want) ||
			got.Name() != want.Name() || got.Tag != tag || got.Digest.String() != dgst {
			t.Errorf("%s(%q) = %+v (%s), distribution/reference's %s (domain %q, path %q, tag %q, digest %q)",
				p.fn, s, got, got, want, reference.Domain(want), reference.Path(want), tag, dgst)
		}
	}
	_, werr := reference.WithName(s)
	if gerr := CheckName(s); (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Errorf("CheckName(%q) = %v, reference.WithName's error %v", s, gerr, werr)
	}
	if n, werr := reference.WithName(s); werr == nil {
		if d, p, ok := SplitName(s); !ok || d != reference.Domain(n) || p != reference.Path(n) {
			t.Errorf("SplitName(%q) = %q, %q, %v; reference.WithName's domain %q, path %q", s, d, p, ok, reference.Domain(n), reference.Path(n))
		}
	}
	_, werr = reference.WithTag(placeholder, s)
	if gerr := CheckTag(s); (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Errorf("CheckTag(%q) = %v, reference.WithTag's error %v", s, gerr, werr)
	}
}

var placeholder, _ = reference.WithName("image")

const (
	hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	hex32 = "0123456789ABCDEF0123456789abcdef"
)

func TestAgreesWithDistribution(t *testing.T) {
	for _, s := range []string{
		"", "a", "A", "ubuntu", "ubuntu:22.04", "library/ubuntu", "docker.io/ubuntu", "index.docker.io/ubuntu",
		"index.docker.io/library/ubuntu:latest", "docker.io/library/a/b", "localhost/a", "localhost:5000/a:b",
		"LocalHost/a", "Foo/bar", "foo/Bar", "foo/bar:TAG", "example.com/team/app:v1.0.0", "example.com:/a",
		"example.com:x/a", "example.com:5000:1/a", "-example.com/a", "example-.com/a", "ex--ample.com/a",
		"example..com/a", ".com/a", "[::1]/a", "[::1]:5000/a:t", "[::1]5000/a", "[]/a", "[::g]/a", "[::1/a",
		"a/b/c", "a__b", "a___b", "a_b", "a.b", "a..b", "a--b", "a-", "-a", "a/", "/a", "a//b", "a:", "a:b:c",
		"a@sha256:" + hex64, "a:t@sha256:" + hex64, "a@sha256:" + hex64[:63], "a@sha256:" + hex32,
		"a@md5:" + hex32, "a@sha512:" + hex64 + hex64, "a@sha384:" + hex64, "a@sha+x:" + hex32, "a@:" + hex64,
		"a@sha256:" + strings.ToUpper(hex64), "a@b@sha256:" + hex64, hex64, hex64 + ":t", strings.ToUpper(hex64),
		"a:" + strings.Repeat("t", 128), "a:" + strings.Repeat("t", 129), "a:.t", "a:-t", "a:_t",
		strings.Repeat("a", 255), strings.Repeat("a", 256), "example.com/" + strings.Repeat("a", 256),
		"library/" + strings.Repeat("a", 250), "\u212a", "\u212a/a", "a/\u212a", "é", "a\xff",
		"file:///x", "../img", "registry:5000", "127.0.0.1:5000/a", "a:5000/b",
		// Hosts with ports, IPv6 and case; digests with tags and
		// trailing separators; the length bounds at their edges.
		"localhost", "localhost:5000", "LOCALHOST/a", "localhost/A", "Example.COM/app", "example.com/App",
		"[::1]", "[::1]:5000", "[::1]:/a", "[::1]:5000/a@sha256:" + hex64, "[fe80::1%eth0]:5000/a", "[::ffff:127.0.0.1]/a",
		"[::1]:5000/a:t@sha256:" + hex64, "a.b-c.d:65536/x", "a:t@", "a@", "a/b/", "a/b:", "a:b/", "a@sha256:" + hex64 + "@",
		"a:t@sha256:" + hex64[:32], "a@sha256:" + hex64 + "0", "a@sha512:" + hex64, "a@SHA256:" + hex64, "a@sha256-x:" + hex64,
		"ubuntu:22.04@sha256:" + hex64, "ubuntu@sha256:" + hex64 + ":t", "münchen.de/a", "xn--mnchen-3ya.de/a", "a/b ",
		"example.com/" + strings.Repeat("a", 255), "docker.io/" + strings.Repeat("a", 255), "library/" + strings.Repeat("a", 247),
		"library/" + strings.Repeat("a", 248), strings.Repeat("a", 248), strings.Repeat("a", 249), "a:" + strings.Repeat("t", 128) + "@sha256:" + hex64,
	} {
		agree(t, s)
	}
}

// TestAgreesOnRandomNames reads strings made of the grammar's pieces and
// the characters near its edges.
func TestAgreesOnRandomNames(t *testing.T) {
	pieces := []string{
		"a", "z", "0", "9", "A", "Z", "K", "\u212a", "é", "\xff", ".", "_", "__", "-", "--", "/", "//", ":", "@",
		"[", "]", "::1", "5000", "localhost", "docker.io", "index.docker.io", "library", "example.com", "sha256",
		"sha256:" + hex64, ":" + hex32, hex64, "+", "latest", "v1.0", strings.Repeat("b", 120),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 30000
	if testing.Short() {
		n = 10000
	}
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		agree(t, b.String())
		if t.Failed() {
			return
		}
	}
}

func FuzzAgreesWithDistribution(f *testing.F) {
	for _, s := range []string{"a", "example.com:5000/a/b:t@sha256:" + hex64, "[::1]:5000/a", "a__b-c.d", hex64} {
		f.Add(s)
	}
	f.Fuzz(agree)
}
