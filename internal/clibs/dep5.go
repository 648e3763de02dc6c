package clibs

import (
	"bytes"
	"slices"
	"strings"
)

// DEP5Licenses are the licence expressions, as the file writes them
// ("LGPL-2.1", "GPL-2+ or Artistic"), of the Files paragraphs of a
// machine-readable Debian copyright file
// (https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/),
// and of its header's License field; sorted, each once. The paragraphs
// for debian/*, the packaging, which no binary contains, are left out.
// ok is false when the file is not in that format: its licences are
// then not known from it.
func DEP5Licenses(text []byte) (exprs []string, ok bool) {
	text = bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n"))
	paras := splitParagraphs(text)
	if len(paras) == 0 {
		return nil, false
	}
	header := fields(paras[0])
	if f := header["Format"]; !strings.Contains(f, "copyright-format") && !strings.Contains(f, "dep5") {
		return nil, false
	}
	add := func(expr string) {
		expr = strings.Join(strings.Fields(expr), " ")
		if expr != "" && !slices.Contains(exprs, expr) {
			exprs = append(exprs, expr)
		}
	}
	// A License field's first line names the licence; the lines after
	// it are its text.
	license := func(f map[string]string) string {
		name, _, _ := strings.Cut(f["License"], "\n")
		return name
	}
	add(license(header))
	for _, p := range paras[1:] {
		f := fields(p)
		if files, isFiles := f["Files"]; isFiles && !packagingOnly(files) {
			add(license(f))
		}
	}
	slices.Sort(exprs)
	return exprs, true
}

// packagingOnly says whether a Files field names only debian/ paths.
func packagingOnly(files string) bool {
	ws := strings.Fields(files)
	for _, w := range ws {
		if !strings.HasPrefix(w, "debian/") {
			return false
		}
	}
	return len(ws) > 0
}

// splitParagraphs splits deb822 text at blank lines (a line of spaces
// alone is blank too).
func splitParagraphs(text []byte) [][]byte {
	var out [][]byte
	var cur []byte
	for line := range bytes.SplitSeq(text, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(append(cur, line...), '\n')
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
