package clibs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// Package is a Debian package as dpkg knows it.
type Package struct {
	// Name is the package's name ("libseccomp-dev"), Arch its
	// architecture ("amd64", "all"), Version its version.
	Name    string `json:"package,omitempty"`
	Arch    string `json:"arch,omitempty"`
	Version string `json:"version,omitempty"`
	// Source is the source package it was built from ("libseccomp",
	// "glibc"), SourceVersion that package's version where it is not
	// Version (a binNMU, a cross package: cross-toolchain-base 66); both
	// empty when dpkg's status names none, the source being the package
	// itself. Debian's security tracker, and the scanners reading it, name
	// vulnerabilities by source package: libseccomp's are not
	// libseccomp-dev's by name.
	Source        string `json:"source,omitempty"`
	SourceVersion string `json:"sourceVersion,omitempty"`
	// OS is the distribution's id, from os-release ("debian"), and
	// Distro its id and version ("debian-12"): the purl's namespace and
	// distro qualifier.
	OS     string `json:"os,omitempty"`
	Distro string `json:"distro,omitempty"`
}

// Dpkg reads dpkg's database and the packages' documentation under Root
// ("/" for the build machine; a directory of fixtures in tests).
type Dpkg struct{ Root string }

// root is Root, "/" when unset.
func (d Dpkg) root() string {
	if d.Root == "" {
		return "/"
	}
	return d.Root
}

// Bounds on what of dpkg's database is read: a .list file names a
// package's files (a few MB for the largest), the status file every
// package (tens of MB for a full desktop).
const (
	maxList      = 16 << 20
	maxStatus    = 128 << 20
	maxOSRelease = 64 << 10
)

// MaxCopyright bounds a package's copyright file: most are kilobytes
// (gcc's 70 KB), but Boost's libraries list every file's authors, 2 MB
// (libboost-filesystem1.74-dev, a C++ archive a cgo build links).
const MaxCopyright = 8 << 20

// usrMerged is the path dpkg may list a file under on a merged-/usr
// system: /lib/x/libc.so.6 is /usr/lib/x/libc.so.6.
func usrMerged(p string) string {
	for _, d := range []string{"/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/"} {
		if strings.HasPrefix(p, d) {
			return "/usr" + p
		}
	}
	return p
}

// Owners finds the package owning each of files (absolute, by a path
// dpkg lists: an archive's links followed, a -dev package's link to its
// shared object not):
// by the .list files of dpkg's info directory, then its version in the
// status file. A file no package owns is not in the map.
func (d Dpkg) Owners(files []string) (map[string]Package, error) {
	want := map[string][]string{} // as listed, usr-merged -> files
	n := 0                        // files, each once
	for _, f := range files {
		if !slices.Contains(want[usrMerged(f)], f) {
			want[usrMerged(f)] = append(want[usrMerged(f)], f)
			n++
		}
	}
	info := filepath.Join(d.root(), "var/lib/dpkg/info")
	lists, err := filepath.Glob(filepath.Join(info, "*.list"))
	if err != nil {
		return nil, err
	}
	slices.Sort(lists)
	owner := map[string]string{} // file -> package[:arch] as named by its list
	for _, l := range lists {
		data, err := bounded.ReadRegular(l, maxList)
		if err != nil {
			return nil, fmt.Errorf("dpkg: %w", err)
		}
		name := strings.TrimSuffix(filepath.Base(l), ".list")
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			for _, f := range want[usrMerged(string(line))] {
				if _, ok := owner[f]; !ok {
					owner[f] = name
				}
			}
		}
		// Every file owned: the other lists (thousands, tens of MB) are
		// not read. A file two binaries link is one.
		if len(owner) == n {
			break
		}
	}
	if len(owner) == 0 {
		return map[string]Package{}, nil
	}
	status, err := d.status()
	if err != nil {
		return nil, err
	}
	osID, distro := d.distro()
	out := map[string]Package{}
	for f, name := range owner {
		p, ok := status[name]
		if !ok {
			return nil, fmt.Errorf("dpkg: %s owns %s but is not installed by dpkg's status", name, f)
		}
		p.OS, p.Distro = osID, distro
		out[f] = p
	}
	return out, nil
}

// status reads the installed packages of dpkg's status file, by the names
// their .list files go by: "name:arch" for a package of a Multi-Arch:
// same package, "name" otherwise; both are kept.
func (d Dpkg) status() (map[string]Package, error) {
	data, err := bounded.ReadRegular(filepath.Join(d.root(), "var/lib/dpkg/status"), maxStatus)
	if err != nil {
		return nil, fmt.Errorf("dpkg: %w", err)
	}
	out := map[string]Package{}
	for para := range bytes.SplitSeq(data, []byte("\n\n")) {
		f := fields(para)
		if !strings.HasSuffix(f["Status"], " installed") || f["Package"] == "" {
			continue
		}
		p := Package{Name: f["Package"], Arch: f["Architecture"], Version: f["Version"]}
		p.Source, p.SourceVersion = source(f["Source"])
		out[p.Name+":"+p.Arch] = p
		if _, ok := out[p.Name]; !ok || f["Multi-Arch"] != "same" {
			out[p.Name] = p
		}
	}
	return out, nil
}

// source splits a status file's Source field, "name" or "name
// (version)" (dpkg writes the version only where it is not the binary
// package's).
func source(field string) (name, version string) {
	name, rest, _ := strings.Cut(strings.TrimSpace(field), " ")
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		version = strings.TrimSpace(rest[1 : len(rest)-1])
	}
	return name, version
}

// fields are the fields of a deb822 paragraph: each value trimmed, its
// continuation lines after it, each on a line of its own (a Files
// field's patterns, a License field's text after its name). A field
// named twice, which dpkg refuses, counts once: its first.
func fields(para []byte) map[string]string {
	lines := map[string][]string{}
	key := "" // the field continuation lines add to
	for line := range strings.SplitSeq(string(para), "\n") {
		if line != "" && (line[0] == ' ' || line[0] == '\t') {
			if key != "" {
				lines[key] = append(lines[key], strings.TrimSpace(line))
			}
			continue
		}
		key = ""
		if k, v, ok := strings.Cut(line, ":"); ok {
			if _, dup := lines[k]; !dup {
				lines[k], key = []string{strings.TrimSpace(v)}, k
			}
		}
	}
	out := make(map[string]string, len(lines))
	for k, ls := range lines {
		out[k] = strings.Join(ls, "\n")
	}
	return out
}

// distro is the build machine's distribution: os-release's ID, and as a
// purl's distro qualifier names it, ID and VERSION_ID ("debian-12"), or
// its ID alone (a testing release has no version).
func (d Dpkg) distro() (id, distro string) {
	data, err := bounded.ReadFile(filepath.Join(d.root(), "etc/os-release"), maxOSRelease)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = bounded.ReadFile(filepath.Join(d.root(), "usr/lib/os-release"), maxOSRelease)
	}
	if err != nil {
		return "", ""
	}
	vals := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			vals[k] = strings.Trim(v, `"'`)
		}
	}
	id = vals["ID"]
	if id != "" && vals["VERSION_ID"] != "" {
		return id, id + "-" + vals["VERSION_ID"]
	}
	return id, id
}

// Copyright is the text of the package's copyright file,
// usr/share/doc/<name>/copyright, following the links Debian makes from a
// -dev package's directory to its library's, within usr/share/doc; nil
// when there is none.
func (d Dpkg) Copyright(name string) ([]byte, error) {
	doc := filepath.Join(d.root(), "usr/share/doc")
	realDoc, err := filepath.EvalSymlinks(doc)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("package name %q", name)
	}
	p, err := filepath.EvalSymlinks(filepath.Join(doc, name, "copyright"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(realDoc, p); err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("the copyright file of %s leads out of %s, to %s", name, doc, p)
	}
	return bounded.ReadRegular(p, MaxCopyright)
}

// Changed names the packages owning the libraries of bins, contained or
// linked against (Shared), that dpkg no longer has at the version
// recorded ("libseccomp-dev:amd64 2.5.4-1, now 2.5.5-1"; "... now not
// installed"), and the files no package owns whose content is no longer
// the digest recorded: a result built with them is not what a build now
// would give. Sorted, each once.
func (d Dpkg) Changed(bins []Binary) ([]string, error) {
	var status map[string]Package
	var out []string
	for _, b := range bins {
		for _, l := range slices.Concat(b.Libraries, b.Shared) {
			if l.Package.Name == "" {
				if l.SHA256 == "" || l.InModule {
					continue
				}
				if now, err := FileDigest(l.File); err != nil || now != l.SHA256 {
					what := l.File + ", owned by no package, changed since"
					if err != nil {
						what = fmt.Sprintf("%s, owned by no package: %v", l.File, err)
					}
					if !slices.Contains(out, what) {
						out = append(out, what)
					}
				}
				continue
			}
			if status == nil {
				var err error
				if status, err = d.status(); err != nil {
					return nil, err
				}
			}
			name := l.Package.Name + ":" + l.Package.Arch
			now, ok := status[name]
			if ok && now.Version == l.Package.Version {
				continue
			}
			what := name + " " + l.Package.Version + ", now "
			if ok {
				what += now.Version
			} else {
				what += "not installed"
			}
			if !slices.Contains(out, what) {
				out = append(out, what)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// maxLibrary bounds a library file hashed: glibc's libc.a is 6 MB.
const maxLibrary = 1 << 30

// FileDigest is the hex sha256 of the regular file at p, read to at most
// maxLibrary bytes.
func FileDigest(p string) (string, error) {
	f, err := bounded.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := bounded.Regular(f); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxLibrary+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if n > maxLibrary {
		return "", fmt.Errorf("%s: over %d bytes", p, int64(maxLibrary))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
