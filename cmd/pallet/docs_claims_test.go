package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// readmeUsage returns the command lines of the README's "Using it"
// block, by command path ("build", "index create"), continuation lines
// joined to the line they continue.
func readmeUsage(t *testing.T, paths []string) map[string]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "\n## Using it\n")
	if ok {
		_, block, ok = strings.Cut(block, "```sh\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal(`README.md has no sh block under "## Using it"`)
	}
	usage := map[string]string{}
	var last string
	for _, l := range strings.Split(block, "\n") {
		rest, isCmd := strings.CutPrefix(l, "pallet ")
		if !isCmd {
			if last != "" && strings.TrimSpace(l) != "" && strings.HasPrefix(l, " ") {
				usage[last] += " " + strings.TrimSpace(l)
			}
			continue
		}
		last = ""
		for _, p := range paths {
			if (rest == p || strings.HasPrefix(rest, p+" ")) && len(p) > len(last) {
				last = p
			}
		}
		if last == "" {
			t.Errorf("README usage line names no command pallet has: %q", l)
			continue
		}
		usage[last] += " " + strings.TrimPrefix(rest, last)
	}
	return usage
}

// The README's usage block names every flag of each command it lists,
// by its long or short name, and no flag the command lacks: the block
// had lost --download-timeout, index create's --image and fetch's
// selection flags while the commands gained them.
func TestDocsUsageNamesEveryFlag(t *testing.T) {
	root := &cobra.Command{Use: "pallet"}
	root.AddCommand(buildCmd(), fetchCmd(), lockCmd(), inspectCmd(), schemaCmd(), versionCmd(), sbomCmd(), authCmd(), indexCmd())
	registerInsecure(root)
	commands := map[string]*cobra.Command{}
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			p := strings.TrimSpace(prefix + " " + sub.Name())
			if sub.Runnable() {
				commands[p] = sub
			}
			walk(sub, p)
		}
	}
	walk(root, "")
	// The commands above are run's: pallet --help lists no other.
	help := mustPallet(t, "--help")
	_, listed, _ := strings.Cut(help, "Available Commands:\n")
	listed, _, _ = strings.Cut(listed, "\n\n")
	for _, l := range strings.Split(listed, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
			if sub, _, err := root.Find([]string{f[0]}); err != nil || sub == root {
				t.Errorf("pallet --help lists %s, which this test does not build: add it above", f[0])
			}
		}
	}
	var paths []string
	for p := range commands {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	usage := readmeUsage(t, paths)
	named := regexp.MustCompile(`(?:^|[\s\[|(])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b`)
	for _, p := range paths {
		line, ok := usage[p]
		if !ok {
			t.Errorf("README usage block has no line for pallet %s", p)
			continue
		}
		var said []string
		for _, m := range named.FindAllStringSubmatch(line, -1) {
			said = append(said, m[1])
		}
		c := commands[p]
		c.InheritedFlags() // merges the root's persistent flags into c's
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "insecure" {
				return // help is every command's; --insecure, global, is shown once
			}
			if !slices.Contains(said, "--"+f.Name) && (f.Shorthand == "" || !slices.Contains(said, "-"+f.Shorthand)) {
				t.Errorf("README usage of pallet %s does not name --%s", p, f.Name)
			}
		})
		for _, s := range said {
			var f *pflag.Flag
			if name, long := strings.CutPrefix(s, "--"); long {
				f = c.Flags().Lookup(name)
			} else {
				f = c.Flags().ShorthandLookup(s[1:])
			}
			if f == nil {
				t.Errorf("README usage of pallet %s names %s, which it does not have", p, s)
			}
		}
	}
}

// Every test the README and docs/*.md name as proof of a claim
// ([TestName]) exists: tests are renamed and split as the code changes,
// and a claim whose test is gone is no longer proven.
func TestDocsNamedTestsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	docs = append(docs, filepath.Join(root, "README.md"))
	named := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	count := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, name := range named.FindAllString(line, -1) {
				count++
				if !defined[name] {
					t.Errorf("%s:%d names %s, which no test file defines", filepath.Base(doc), i+1, name)
				}
			}
		}
	}
	if count == 0 {
		t.Fatal("the docs name no test: the pattern no longer finds them")
	}
}

// The Dockerfile and the recipe docs/dockerfile.md shows as "the same
// image from a recipe" give the same digest, built from the files they
// name: the example is the page's proof of that claim, and the recipe's
// PATH and workdir, written out by hand, go stale if the front end's
// defaults change.
func TestDocsDockerfileAndRecipeAgree(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dockerfile.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## The same image from a recipe\n")
	block := func(lang string) string {
		_, b, ok := strings.Cut(section, "```"+lang+"\n")
		if ok {
			b, _, ok = strings.Cut(b, "```")
		}
		if !ok {
			t.Fatalf("docs/dockerfile.md: no %s block under \"The same image from a recipe\"", lang)
		}
		return b
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "Dockerfile"), block("dockerfile"))
	writeFile(t, filepath.Join(dir, "pallet.yaml"), block("yaml"))
	writeFile(t, filepath.Join(dir, "bin", "hello"), "#!/bin/sh\necho hello\n")
	writeFile(t, filepath.Join(dir, "etc", "hello.conf"), "greeting = hi\n")
	fromRecipe, fromDockerfile := filepath.Join(t.TempDir(), "r"), filepath.Join(t.TempDir(), "d")
	r := strings.TrimSpace(mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+fromRecipe))
	d := strings.TrimSpace(mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+fromDockerfile))
	if r != d || !strings.HasPrefix(r, "sha256:") {
		rc, _ := dfImage(t, fromRecipe).RawConfigFile()
		dc, _ := dfImage(t, fromDockerfile).RawConfigFile()
		t.Errorf("the recipe gives %s, the Dockerfile %s\nrecipe config:     %s\nDockerfile config: %s", r, d, rc, dc)
	}
}

// The README's table of packages has a row for every package under
// internal/, and names none that is gone: three packages had been added
// with no row.
func TestDocsPackageTableNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(string(readme), "\n## Code\n")
	if !ok {
		t.Fatal(`README.md has no "## Code" section`)
	}
	inTable := map[string]bool{}
	row := regexp.MustCompile("`internal/([a-z0-9]+)`")
	for _, l := range strings.Split(code, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " |")
		for _, m := range row.FindAllStringSubmatch(cell, -1) {
			inTable[m[1]] = true
		}
	}
	entries, err := os.ReadDir(filepath.Join("..", "..", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			packages[e.Name()] = true
			if !inTable[e.Name()] {
				t.Errorf("README's package table has no row for internal/%s", e.Name())
			}
		}
	}
	for p := range inTable {
		if !packages[p] {
			t.Errorf("README's package table names internal/%s, which does not exist", p)
		}
	}
}
