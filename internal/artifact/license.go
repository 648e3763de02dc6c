package artifact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/pallet-dev/pallet/internal/tree"
)

// licenseWords are the names licence and notice files go by; a file is one
// when its name is a word, in any case, alone or followed by '.', '_' or
// '-' and anything ("LICENSE", "licence.txt", "NOTICE-APACHE",
// "COPYRIGHT"), at the root of an artifact or one directory down. This is
// the one definition: findLicenses matches names with it, and extraction
// with an include filter keeps the same files through licensePatterns.
var licenseWords = []string{"license", "licence", "copying", "notice", "copyright"}

// licenseDepth is how many directories down licence files are looked for.
const licenseDepth = 1

// IsLicenseName reports whether a file's base name names a licence.
func IsLicenseName(base string) bool {
	lower := strings.ToLower(base)
	for _, w := range licenseWords {
		rest, ok := strings.CutPrefix(lower, w)
		if ok && (rest == "" || strings.ContainsRune("._-", rune(rest[0]))) {
			return true
		}
	}
	return false
}

// isLicensePath is IsLicenseName at a depth licences are looked for, but
// for names of source files and scripts: a licence-like name is no
// licence when it is evidently code ("dist/license-check.sh", as flannel
// ships, "license.go"). go-licenses takes a name only once a classifier
// finds licence text in the file; pallet ships what it finds unread, so
// it leaves out what the name already says is not text.
func isLicensePath(p string) bool {
	return strings.Count(p, "/") <= licenseDepth && IsLicenseName(path.Base(p)) && !isSource(p)
}

// isScript reports whether the file at src begins with "#!": a program
// run by an interpreter, whatever its name, and so no licence text. A
// file that cannot be read is left to the step that reads it to fail.
func isScript(src string) bool {
	f, err := os.Open(src)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [2]byte
	n, _ := io.ReadFull(f, head[:])
	return IsScriptText(head[:n])
}

// IsScriptText reports whether text, a licence-named file's content or
// its beginning, is a program run by an interpreter ("#!"), and so no
// licence, as isScript reads it of a file.
func IsScriptText(text []byte) bool { return bytes.HasPrefix(text, []byte("#!")) }

// licensePatterns are glob patterns selecting the licence files a recipe
// names, or, when it names none, every name IsLicenseName accepts at
// the depth isLicensePath looks (globs have no case-insensitive form, so
// each letter is a class), scripts and sources too (findLicenses leaves
// those out). findLicenses takes the named ones alone when there are any, and the
// globs, which begin with a wildcard, count against the bound on those
// every name is matched against (archive.MaxGlobsPerName).
func licensePatterns(named []string) []string {
	var out []string
	// A named licence is taken by its name, whichever the artifact holds
	// of the names its backslashes may give (tree.UserPath).
	for _, n := range named {
		for _, name := range tree.UserPathNames(n) {
			out = append(out, globEscape(name))
		}
	}
	if len(named) > 0 {
		return out
	}
	for _, w := range licenseWords {
		var b strings.Builder
		for _, c := range w {
			fmt.Fprintf(&b, "[%c%c]", unicode.ToLower(c), unicode.ToUpper(c))
		}
		word := b.String()
		prefix := ""
		for d := 0; d <= licenseDepth; d++ {
			out = append(out, prefix+word, prefix+word+`[._\-]*`)
			prefix += "*/"
		}
	}
	return out
}

// ExtraPatterns are the patterns extraction with include patterns adds to
// keep an artifact's licence files (licensePatterns), none for one
// declared licence-free (licenses: [none]). Their globs are counted with
// include's against archive.MaxGlobsPerName: the recipe's plan counts
// them as extraction does, to refuse at the include line before a
// download.
func ExtraPatterns(named []string, none bool) []string {
	if none {
		return nil
	}
	return licensePatterns(named)
}

// ExtraGlobsHint is what to do when ExtraPatterns' globs are what crowd
// the include patterns past archive.MaxGlobsPerName.
const ExtraGlobsHint = "the extra patterns keep the artifact's licence files: name them in licenses: (looked up, not matched), or give licenses: [none] to an artifact that has none"

// globEscape is the path.Match pattern that matches name alone.
func globEscape(name string) string {
	var b strings.Builder
	for _, c := range name {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// licenceNotFound is a licence file the recipe names that the artifact
// does not hold.
type licenceNotFound struct{ name string }

func (e *licenceNotFound) Error() string {
	return fmt.Sprintf("licence file %q not found in the artifact", e.name)
}

// findLicenses returns the licence files of t: the named ones (each must
// exist), or those found by name near the root.
func findLicenses(t *tree.Tree, names []string, none bool) (*tree.Tree, error) {
	out := tree.New()
	if none {
		return out, nil
	}
	if len(names) > 0 {
		for _, n := range names {
			file := func(p string) bool {
				e, ok := t.Get(p)
				return ok && e.Kind == tree.File
			}
			p, err := tree.UserPath(n, file)
			if errors.Is(err, tree.ErrAmbiguousPath) {
				return nil, blame("licenses", fmt.Errorf("licence %w", err))
			}
			if err != nil {
				return nil, fmt.Errorf("licence %q: %w", n, err)
			}
			e, ok := t.Get(p)
			if !ok || e.Kind != tree.File {
				return nil, blame("licenses", &licenceNotFound{name: n})
			}
			if err := out.Add(*e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for e := range t.All() {
		if e.Kind != tree.File || !isLicensePath(e.Path) || isScript(e.Source) {
			continue
		}
		le := e
		le.Mode = 0o644
		if err := out.Add(le); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// The licence files of a Go module: what pallet ships for every module a
// Go binary links (internal/golicenses), and what a Go build keeps of its
// source for that (moduleSnapshot).

// packageDir tells whether a directory of a module can hold packages of a
// build: the go command ignores testdata, vendor and names starting with
// "." or "_".
func packageDir(name string) bool {
	return name != "testdata" && name != "vendor" && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_")
}

// sourceExts are the extensions of source and data files, which a
// licence-like name ("license.go", "copyright_test.go", "license.json")
// does not make a licence file.
var sourceExts = []string{".go", ".s", ".c", ".h", ".cc", ".cpp", ".py", ".js", ".ts", ".sh", ".bash", ".ps1", ".bat", ".cmd", ".pl", ".rb", ".proto", ".json", ".yaml", ".yml"}

func isSource(name string) bool {
	return slices.Contains(sourceExts, strings.ToLower(path.Ext(name)))
}

// ModuleLicenseFilter decides, from every file of a module
// (slash-separated paths in it), which are licence files: those at the
// root, and those in a directory that holds Go files or has one below it,
// through directories that can hold packages. go-licenses looks for a
// package's licence from its directory up to the module root, so a
// licence there (a forked package with its own LICENSE and NOTICE, as
// sigs.k8s.io/yaml/goyaml.v2) can be the one it ships; a licence-named
// file elsewhere is data (the licence texts of a classifier's corpus).
func ModuleLicenseFilter(names []string) func(rel string) bool {
	code := map[string]bool{".": true}
	for _, n := range names {
		if !strings.HasSuffix(n, ".go") {
			continue
		}
		for d := path.Dir(n); d != "." && !code[d]; d = path.Dir(d) {
			code[d] = true
		}
	}
	return func(rel string) bool {
		if !IsLicenseName(path.Base(rel)) || isSource(rel) || !code[path.Dir(rel)] {
			return false
		}
		for _, d := range strings.Split(path.Dir(rel), "/") {
			if d != "." && !packageDir(d) {
				return false
			}
		}
		return true
	}
}

// ModuleLicenseFiles lists the licence files (ModuleLicenseFilter) of
// the module in dir, as slash-separated paths in it, sorted: regular files
// only, leaving out nested modules (a directory with a go.mod, which the
// go command leaves out of the module's zip) and the subdirectories skip
// names (another module's, as in a vendor directory).
//
// selected says dir is a snapshot a build kept (moduleSnapshot), holding
// only files already chosen: every licence-named file there is one.
func ModuleLicenseFiles(dir string, skip func(rel string) bool, selected bool) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel == "." {
				return nil
			}
			if !packageDir(e.Name()) || isRegular(filepath.Join(p, "go.mod")) || (skip != nil && skip(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if e.Type().IsRegular() {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	keep := ModuleLicenseFilter(names)
	if selected {
		keep = func(n string) bool { return IsLicenseName(path.Base(n)) && !isSource(n) }
	}
	out := slices.DeleteFunc(names, func(n string) bool { return !keep(n) })
	slices.Sort(out)
	return out, nil
}

func isRegular(p string) bool {
	info, err := os.Lstat(p)
	return err == nil && info.Mode().IsRegular()
}

// moduleSnapshot lists what module licences read of a Go build's source,
// by path under root (the checkout, or the unpacked module), so that a
// build taken from the cache reads the same files without the source:
// the module's go.mod and vendor/modules.txt, its licence files, those of
// its vendor directory, and the go.mod and licence files of every
// directory inside root its go.mod replaces a module with.
func moduleSnapshot(root, moduleDir string) (*tree.Tree, error) {
	t := tree.New()
	add := func(dir string, names ...string) error {
		for _, n := range names {
			p := filepath.Join(dir, filepath.FromSlash(n))
			info, err := os.Lstat(p)
			if err != nil || !info.Mode().IsRegular() {
				continue // an optional file (vendor/modules.txt), or not a file
			}
			rel, err := filepath.Rel(root, p)
			if err != nil || !within(p, root) {
				continue
			}
			if _, dup := t.Get(filepath.ToSlash(rel)); dup {
				continue
			}
			if err := t.Add(tree.Entry{Path: filepath.ToSlash(rel), Kind: tree.File, Mode: 0o644, Source: p, Size: info.Size()}); err != nil {
				return err
			}
		}
		return nil
	}
	dirs, err := localModules(moduleDir)
	if err != nil {
		return nil, err
	}
	if vendor := filepath.Join(moduleDir, "vendor"); isRegular(filepath.Join(vendor, "modules.txt")) {
		dirs = append(dirs, vendor)
	}
	for _, d := range dirs {
		if !within(d, root) {
			continue // outside the pinned source: not kept
		}
		names, err := ModuleLicenseFiles(d, nil, false)
		if err != nil {
			return nil, fmt.Errorf("licence files of %s: %w", d, err)
		}
		if err := add(d, append(names, "go.mod", "modules.txt")...); err != nil {
			return nil, err
		}
	}
	return t, nil
}
