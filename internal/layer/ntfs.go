package layer

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/rangetable"
)

// NTFS compares names by mapping every UTF-16 code unit through the
// volume's $UpCase table, one code unit to one code unit, and comparing the
// results. The table is a copy of Windows' NLS uppercase table burned into
// the volume when it is formatted. Two names that map alike are one name to
// the importer, which then fails with "file exists"; names that map apart
// are two files, however alike Unicode case folding thinks they are.
//
// ntfsUnicode is the Unicode version of the table in use. The $UpCase that
// ntfs-3g reconstructed from Windows 7 and 8 volumes (its
// ntfs_upcase_table_build, identified by the md5 of the real files) is
// exactly what ntfsUpper computes from this version: every BMP code point's
// simple uppercase mapping, kept only when both characters were assigned in
// Unicode 5.1 and the mapping round-trips (the uppercase's lowercase is the
// character itself). This was checked for all 65536 code units against
// that reconstruction. The round-trip condition is what keeps apart, among
// others: U+03C2 ς final sigma (the table maps it to itself since Windows
// 7, so ς and σ are two names, while σ and Σ are one), U+0131 ı, U+017F ſ,
// U+00B5 µ, the titlecase digraphs ǅ ǈ ǋ ǲ, and the Greek symbol forms
// ϐ ϑ ϕ ϖ ϰ ϱ ϵ. The version condition keeps apart pairs Unicode made
// later: Georgian Mkhedruli and Mtavruli, Cherokee small letters, the later
// Latin Extended-D letters. Characters outside the BMP are two code units,
// surrogates, which the table maps to themselves: 𐐀 and 𐐨 are two names.
// And U+212A KELVIN SIGN is its own uppercase, so it is kept apart from k
// and K, which strings.ToLower would fold it into.
//
// A volume formatted by Windows Vista or earlier has an older table (it
// still maps ς to Σ); container hosts run Windows Server 2019 or later.
const ntfsUnicode = "5.1.0"

var ntfsAssigned = rangetable.Assigned(ntfsUnicode)

// ntfsUpper maps one character as $UpCase does.
func ntfsUpper(r rune) rune {
	if r < 0x80 {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	if r > 0xFFFF {
		return r
	}
	u := unicode.ToUpper(r)
	if u == r || u > 0xFFFF || unicode.ToLower(u) != r || !unicode.Is(ntfsAssigned, r) || !unicode.Is(ntfsAssigned, u) {
		return r
	}
	return u
}

// ntfsKey returns the form of a path under which NTFS finds it: two paths
// with the same key are the same file on Windows. Invalid UTF-8 bytes
// become U+FFFD each, as they do when Windows tooling converts the tar
// name to UTF-16.
func NTFSKey(p string) string { return strings.Map(ntfsUpper, p) }

// collisionKey is the form under which two Windows paths are refused as
// one. It folds more than ntfsKey: Unicode simple case folding, of which
// the Windows 7+ $UpCase is a refinement (every pair it maps alike is
// one folding orbit; the tests check all 65536 code units). A layer is
// imported onto volumes and read by tools pallet cannot see: a volume
// formatted by Windows Vista or earlier maps ς to Σ, and tools that fold
// case as Unicode does take the Kelvin sign for k and ſ for s. Refusing
// those pairs too costs two names no one ships side by side; accepting
// one that collides costs an image that fails to import. Links are still
// resolved by ntfsKey, as NTFS finds their targets.
func collisionKey(p string) string { return strings.Map(foldRune, p) }

// foldRune is the smallest character of r's case folding orbit.
func foldRune(r rune) rune {
	if r < 0x80 {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}
