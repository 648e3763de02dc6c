package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/record"
)

// A top-level local: archive is a file to place, as docs/recipe.md says;
// only extract: unpacks it. (The local *mode*, given an archive at build
// time, unpacks it: that is tested with the kind example.)
func TestLocalArchiveIsPlacedAsAFile(t *testing.T) {
	dir := t.TempDir()
	archive := fixture.TarGz([]fixture.File{{Name: "bin/tool", Content: "tool\n", Mode: 0o755}})
	if err := os.WriteFile(filepath.Join(dir, "bundle.tar.gz"), archive, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  bundle:
    local: {path: bundle.tar.gz}
    licenses: none
  unpacked:
    local: {path: bundle.tar.gz, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: bundle, dest: /opt/}
      - {artifact: unpacked, dest: /usr/}
`)
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+out)
	files := readImageFiles(t, out, "linux/amd64")
	if got, want := files["opt/bundle.tar.gz"], fmt.Sprintf("%s (644)", archive); got != want {
		t.Errorf("opt/bundle.tar.gz is %.40q, want the archive itself", got)
	}
	if files["opt/bin/tool"] != "" {
		t.Error("the archive without extract: was unpacked")
	}
	if files["usr/bin/tool"] != "tool\n (755)" {
		t.Errorf("extract: {} did not unpack: %q", files["usr/bin/tool"])
	}
}

// Licence files are found by one definition: an include filter keeps the
// same licence files a build without one finds.
func TestLicencesFoundAlikeWithAndWithoutInclude(t *testing.T) {
	archive := fixture.TarGz([]fixture.File{
		{Name: "tool-1.0/bin/tool", Content: "tool\n", Mode: 0o755},
		{Name: "tool-1.0/LICENCE", Content: "licence\n", Mode: 0o644},
		{Name: "tool-1.0/COPYRIGHT", Content: "copyright\n", Mode: 0o644},
		{Name: "tool-1.0/notice.txt", Content: "notice\n", Mode: 0o644},
		{Name: "tool-1.0/NOTICE", Content: "NOTICE\n", Mode: 0o644},
		{Name: "tool-1.0/copying-GPL", Content: "gpl\n", Mode: 0o644},
		{Name: "tool-1.0/legal/License.md", Content: "md\n", Mode: 0o644},
		{Name: "tool-1.0/docs/deep/LICENSE", Content: "too deep\n", Mode: 0o644},
		{Name: "tool-1.0/LICENSEE.txt", Content: "not a licence\n", Mode: 0o644},
	})
	srv := fixture.Serve(t, map[string][]byte{"/tool.tgz": archive})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  all:
    url: {url: %[1]s/tool.tgz, sha256: %[2]s, extract: {strip: 1}}
  some:
    url: {url: %[1]s/tool.tgz, sha256: %[2]s, extract: {strip: 1, include: [bin/tool]}}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: all, dest: /a/}
      - {artifact: some, dest: /s/}
`, srv.URL, fixture.SHA256(archive)))
	out := filepath.Join(dir, "out")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+out)
	rec := readRecord(t, out+".record.json")
	lic := map[string][]string{}
	for _, a := range rec.Artifacts {
		lic[a.Name] = a.Licenses
	}
	want := []string{"COPYRIGHT", "LICENCE", "NOTICE", "copying-GPL", "legal/License.md", "notice.txt"}
	for _, name := range []string{"all", "some"} {
		if !slices.Equal(lic[name], want) {
			t.Errorf("%s: licences %v, want %v", name, lic[name], want)
		}
	}
	files := readImageFiles(t, out, "linux/amd64")
	if files["s/bin/tool"] == "" || files["s/LICENCE"] != "" || files["LICENSES/some/notice.txt"] != "notice\n (644)" {
		t.Errorf("the include filter's artifact: tool %q, licence placed as content %q, under /LICENSES %q", files["s/bin/tool"], files["s/LICENCE"], files["LICENSES/some/notice.txt"])
	}
}

// A go artifact whose go.mod replaces a module with a local directory is
// rebuilt when that directory changes: go build reads it, so the cache key
// covers it. Relative and absolute replace paths alike.
func TestGoReplaceTargetsAreInTheKey(t *testing.T) {
	for _, absolute := range []bool{false, true} {
		t.Run(fmt.Sprintf("absolute=%v", absolute), func(t *testing.T) {
			dir := t.TempDir()
			target := "../b"
			if absolute {
				target = filepath.Join(dir, "b")
			}
			writeFile(t, filepath.Join(dir, "b", "go.mod"), "module example.com/b\n\ngo 1.22\n")
			writeFile(t, filepath.Join(dir, "b", "b.go"), "package b\n\nconst Greeting = \"one\"\n")
			writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n\nrequire example.com/b v0.0.0\n\nreplace example.com/b => "+target+"\n")
			writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nimport \"example.com/b\"\n\nfunc main() { println(b.Greeting) }\n")
			goAppKeyed(t, dir, "app", "one", goEdit{filepath.Join("b", "b.go"), "package b\n\nconst Greeting = \"two\"\n", "two"})
		})
	}
}

// The key of a Go build covers its module as go build reads it: through
// a link at the module's path (module: ./src, linking to the sources),
// which the key took for an empty module, so that an edit was served the
// binary first built; through a link to a file inside it, and to a
// package's directory, which go build imports through the link. A link
// back up (a loop) is no trouble.
func TestGoModuleThroughLinksIsInTheKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sources", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "sources", "main.go"), "package main\n\nimport \"example.com/app/lib\"\n\nfunc main() { println(greeting, lib.Name) }\n")
	writeFile(t, filepath.Join(dir, "shared", "greeting.go"), "package main\n\nconst greeting = \"one\"\n")
	writeFile(t, filepath.Join(dir, "shared", "lib", "lib.go"), "package lib\n\nconst Name = \"lib-one\"\n")
	for link, target := range map[string]string{
		"src":                                   "sources",
		filepath.Join("sources", "greeting.go"): filepath.Join("..", "shared", "greeting.go"),
		filepath.Join("sources", "lib"):         filepath.Join("..", "shared", "lib"),
		filepath.Join("sources", "up"):          "..",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// An edit through the link to a file, one through the link to a
	// package's directory, then one through the link at the module's path.
	goAppKeyed(t, dir, "./src", "one",
		goEdit{filepath.Join("shared", "greeting.go"), "package main\n\nconst greeting = \"two\"\n", "two"},
		goEdit{filepath.Join("shared", "lib", "lib.go"), "package lib\n\nconst Name = \"lib-two\"\n", "lib-two"},
		goEdit{filepath.Join("sources", "main.go"), "package main\n\nfunc main() { println(greeting, \"three\") }\n", "three"},
	)
}

// goEdit writes content to file (under the build's directory), after
// which the binary built holds want.
type goEdit struct{ file, content, want string }

// goAppKeyed writes dir/pallet.yaml, placing the Go program at module
// (relative to dir) in /bin/app on scratch, and checks that its key
// follows its sources, building it in one cache: the first binary holds
// first, an unchanged rebuild is a cache hit, and after each edit the
// rebuild is not, and its binary holds the edit's want.
func goAppKeyed(t *testing.T, dir, module, first string, edits ...goEdit) {
	t.Helper()
	goAppRecipe(t, dir, module)
	cacheDir := t.TempDir()
	build := func() (binary, log string) {
		out := filepath.Join(t.TempDir(), "out")
		log = mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", cacheDir, "-o", "oci:"+out)
		return readImageFiles(t, out, "linux/amd64")["bin/app"], log
	}
	if got, _ := build(); !strings.Contains(got, first) {
		t.Fatalf("the binary does not hold %q", first)
	}
	if _, log := build(); !strings.Contains(log, "[go, cached]") {
		t.Errorf("an unchanged rebuild was not a cache hit:\n%s", log)
	}
	for _, e := range edits {
		writeFile(t, filepath.Join(dir, e.file), e.content)
		if got, log := build(); strings.Contains(log, "[go, cached]") || !strings.Contains(got, e.want) {
			t.Errorf("%s changed, but the old binary was served:\n%s", e.file, log)
		}
	}
}

// goAppRecipe writes dir/pallet.yaml, placing the Go program at module
// (relative to dir; its line is 4) in /bin/app on scratch.
func goAppRecipe(t *testing.T, dir, module string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: `+module+`, packages: .}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
}

// A package go build compiles through a link in the module to a
// directory holding it (up -> .., imported as example.com/app/up/...) is
// in the key: only the link's target as written was, and an edit there
// was served the binary first built.
func TestGoModuleThroughLinkUpIsInTheKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nimport \"example.com/app/up/shared/lib\"\n\nfunc main() { println(lib.Name) }\n")
	writeFile(t, filepath.Join(dir, "shared", "lib", "lib.go"), "package lib\n\nconst Name = \"lib-one\"\n")
	if err := os.Symlink("..", filepath.Join(dir, "app", "up")); err != nil {
		t.Fatal(err)
	}
	goAppKeyed(t, dir, "app", "lib-one", goEdit{filepath.Join("shared", "lib", "lib.go"), "package lib\n\nconst Name = \"lib-two\"\n", "lib-two"})
}

// A Go build's key reads no file the kernel makes up as it is read, and
// says so at the recipe's module line: a link in the module to
// /proc/kmsg had the key wait forever, one to another file of /proc hashed
// what it said at that moment.
func TestGoModuleLinkToKernelFileRefused(t *testing.T) {
	if _, err := os.Stat("/proc/version"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nfunc main() {}\n")
	if err := os.Symlink("/proc/version", filepath.Join(dir, "app", "version")); err != nil {
		t.Fatal(err)
	}
	goAppRecipe(t, dir, "app")
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if want := "pallet.yaml:4:"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "version, a link to /proc/version: /proc/version is on the kernel's proc filesystem") {
		t.Errorf("a module linking to /proc/version: %v, want it refused at %s naming the link", err, want)
	}
}

// The recipe's limits reach extraction, and a flag wins over them.
func TestRecipeLimitsBoundExtraction(t *testing.T) {
	archive := fixture.TarGz([]fixture.File{{Name: "big", Content: strings.Repeat("x", 64<<10), Mode: 0o644}})
	srv := fixture.Serve(t, map[string][]byte{"/a.tgz": archive})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
limits:
  extract: 16KiB
artifacts:
  a:
    url: {url: %s/a.tgz, sha256: %s, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, dest: /a/}
`, srv.URL, fixture.SHA256(archive)))
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml:6:") || !strings.Contains(err.Error(), "16384") {
		t.Errorf("a 64 KiB archive under a 16 KiB extract limit: %v", err)
	}
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "--max-extract", "1MiB", "-o", "oci:"+filepath.Join(dir, "out"))
	writeFile(t, filepath.Join(dir, "bad.yaml"), "version: 1\nlimits: {extract: lots}\nimages: {a: {base: scratch, platforms: linux/amd64}}\n")
	if _, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "bad.yaml"), "-o", "oci:"+filepath.Join(dir, "out2")); err == nil || !strings.Contains(err.Error(), "bad.yaml:2: limits.extract") {
		t.Errorf("a bad limit: %v", err)
	}
}

// A rebuild into the same layout links the blobs that are still what their
// names say instead of copying them, and copies afresh one that was altered
// in place, even with its mtime put back.
func TestRebuildReusesOnlyIntactBlobs(t *testing.T) {
	recipe := copyExample(t, "hello")
	cacheDir := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	build := func() {
		mustPallet(t, "build", "-q", "-f", recipe, "--platform", "linux/amd64", "--cache-dir", cacheDir, "-o", "oci:"+out)
	}
	build()
	m := layoutIndex(t, out).Manifests[0]
	img := layoutImage(t, out, "linux/amd64")
	layers, _ := img.Layers()
	d, _ := layers[len(layers)-1].Digest()
	blob := filepath.Join(out, "blobs", "sha256", d.Hex)
	// An hour old, so that the digest memory trusts it (it rehashes files
	// younger than its clock granularity).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(blob, old, old); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	build()
	after, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("an unchanged blob was copied into the new layout, not linked")
	}
	// Flip a byte in place and put the mtime back: the next build must not
	// carry the damaged blob over.
	data, _ := os.ReadFile(blob)
	data[len(data)/2] ^= 0xff
	f, err := os.OpenFile(blob, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(blob, after.ModTime(), after.ModTime()); err != nil {
		t.Fatal(err)
	}
	build()
	verifyBlobs(t, out)
	if got := layoutIndex(t, out).Manifests[0].Digest; got != m.Digest {
		t.Errorf("the rebuild gave %s, want %s", got, m.Digest)
	}
}

// Two artifacts putting a file at one path in different layers is an
// error naming both, as docs/recipe.md says: the later layer would hide
// the earlier file.
func TestSameFileFromTwoLayersIsAnError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "tool"), "a\n")
	writeFile(t, filepath.Join(dir, "b", "tool"), "b\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  a: {local: {path: a}, licenses: none}
  b: {local: {path: b}, licenses: none}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, dest: /bin/}
      - {artifact: b, dest: /bin/}
`)
	_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
	recipe := filepath.Join(dir, "pallet.yaml")
	if err == nil || !strings.Contains(err.Error(), "pallet.yaml:11: image app (linux/amd64): /bin/tool is placed by layer 0-a (a, at "+recipe+":10:9)") || !strings.Contains(err.Error(), "and again by layer 1-b (b, at "+recipe+":11:9)") {
		t.Errorf("got %v", err)
	}
}

// A later layer putting a directory where an earlier one put a file, or
// a file where an earlier one put a directory, would replace it (and
// all the directory held): an error naming both, on Linux and Windows.
func TestFileAndDirectoryFromTwoLayersIsAnError(t *testing.T) {
	for _, pf := range []string{"linux/amd64", "windows/amd64"} {
		for _, order := range [][2]string{{"/k/x", "/k/x/y"}, {"/k/x/y", "/k/x"}} {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "one"), "one\n")
			base := "scratch"
			if strings.HasPrefix(pf, "windows") {
				base = "windows-hostprocess-scratch"
			}
			writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  a: {local: {path: one}, licenses: none}
  b: {local: {path: one}, licenses: none}
images:
  app:
    base: %s
    platforms: %s
    files:
      - {artifact: a, dest: %s}
      - {artifact: b, dest: %s}
`, base, pf, order[0], order[1]))
			_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
			first, later := "file", "directory"
			if order[0] == "/k/x/y" {
				first, later = later, first
			}
			recipe := filepath.Join(dir, "pallet.yaml")
			want := fmt.Sprintf("pallet.yaml:11: image app (%s): /k/x is a %s in layer 0-a (a, at %s:10:9)", pf, first, recipe)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "and a "+later+" in layer 1-b (b, at "+recipe+":11:9)") {
				t.Errorf("%s, %s then %s: got %v", pf, order[0], order[1], err)
			}
		}
	}
}

// Two placements that put one path in an image, in one layer or in two,
// are said at the lines of those two, not of their layers' first
// placements (which placed elsewhere), whether the path is the file
// each puts there, a file where the other puts a directory, or a
// directory the other only implies. Every placement has dest /k/ but
// f's, so that a guess from the destinations names the wrong ones.
func TestCollidingPlacementsNamedByTheirLines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a", "x"), "a\n")
	writeFile(t, filepath.Join(dir, "b", "x"), "b\n")
	writeFile(t, filepath.Join(dir, "c", "cfile"), "c\n")
	writeFile(t, filepath.Join(dir, "d", "dfile"), "d\n")
	writeFile(t, filepath.Join(dir, "f", "y"), "f\n")
	tests := []struct {
		name string
		// The placements at lines 13 to 16, and the layer of each:
		// the colliding ones are at 14 and 16.
		files  [4]string
		layers [4]string
		said   string
	}{
		{"file twice, one layer", [4]string{"c", "a", "d", "b"}, [4]string{"one", "one", "one", "one"}, "/k/x is placed at "},
		{"file twice, two layers", [4]string{"c", "a", "d", "b"}, [4]string{"one", "one", "two", "two"}, "/k/x is placed by layer one (a, at "},
		{"file under a file, one layer", [4]string{"c", "a", "d", "f"}, [4]string{"one", "one", "one", "one"}, "/k/x is placed at "},
		{"file over a directory, one layer", [4]string{"c", "f", "d", "a"}, [4]string{"one", "one", "one", "one"}, "/k/x/y is placed at "},
		{"file then directory, two layers", [4]string{"c", "a", "d", "f"}, [4]string{"one", "one", "two", "two"}, "/k/x is a file in layer one (a, at "},
		{"directory then file, two layers", [4]string{"c", "f", "d", "a"}, [4]string{"one", "one", "two", "two"}, "/k/x is a directory in layer one (f, at "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var files strings.Builder
			for i, a := range tc.files {
				dest := "/k/"
				if a == "f" {
					dest = "/k/x/y"
				}
				fmt.Fprintf(&files, "      - {artifact: %s, dest: %s, layer: %s}\n", a, dest, tc.layers[i])
			}
			recipe := filepath.Join(dir, "pallet.yaml")
			writeFile(t, recipe, `version: 1
artifacts:
  a: {local: {path: a}, licenses: none}
  b: {local: {path: b}, licenses: none}
  c: {local: {path: c}, licenses: none}
  d: {local: {path: d}, licenses: none}
  f: {local: {path: f/y}, licenses: none}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
`+files.String())
			_, err := pallet(t, "build", "-q", "-f", recipe, "--no-cache", "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
			if err == nil {
				t.Fatal("built")
			}
			// Said at the later placement, and naming it too.
			msg := err.Error()
			if !strings.HasPrefix(msg, recipe+":16: ") || !strings.Contains(msg, tc.said+recipe+":14:9") || strings.Count(msg, "pallet.yaml:16") != 2 {
				t.Errorf("want it said at pallet.yaml:16, naming pallet.yaml:14 after %q, and 16 again: %v", tc.said, err)
			}
			for _, wrong := range []string{"pallet.yaml:13", "pallet.yaml:15"} {
				if strings.Contains(msg, wrong) {
					t.Errorf("names %s, which placed elsewhere: %v", wrong, err)
				}
			}
		})
	}
}

// The licences an artifact ships land where its placement is written:
// one colliding with what another placement put there is said at the
// shipping placement's line, naming the other's.
func TestLicencesCollidingNamedByTheirLines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tool", "LICENSE"), "MIT License\n")
	writeFile(t, filepath.Join(dir, "tool", "bin"), "x\n")
	writeFile(t, filepath.Join(dir, "other"), "y\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  tool: {local: {path: tool}, licenses: [LICENSE]}
  clash: {local: {path: other}, licenses: none}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: clash, dest: /LICENSES/tool, layer: one}
      - {artifact: tool, dest: /opt/, layer: one}
`)
	_, err := pallet(t, "build", "-q", "-f", recipe, "--no-cache", "-o", "oci:"+filepath.Join(t.TempDir(), "out"))
	if err == nil {
		t.Fatal("built")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, recipe+":11: ") || !strings.Contains(msg, "licences of tool") || !strings.Contains(msg, "/LICENSES/tool is placed at "+recipe+":10:9 (clash)") {
		t.Errorf("want it said at pallet.yaml:11, the placement shipping tool's licences, naming clash's at pallet.yaml:10: %v", err)
	}
}

// A local directory's symlinks follow the archives' policy: an absolute or
// escaping link is refused, naming it, unless the recipe keeps links.
func TestLocalDirectoryLinkPolicy(t *testing.T) {
	for _, target := range []string{"/etc/passwd", "../../outside", `..\..\Windows`, `C:\Windows`} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "d", "sub", "file"), "x\n")
		if err := os.Symlink(target, filepath.Join(dir, "d", "sub", "link")); err != nil {
			t.Fatal(err)
		}
		recipe := func(links string) string {
			p := filepath.Join(dir, "pallet.yaml")
			writeFile(t, p, "version: 1\nartifacts:\n  d: {local: {path: d"+links+"}, licenses: none}\nimages:\n  app: {base: scratch, platforms: linux/amd64, files: [{artifact: d, dest: /d/}]}\n")
			return p
		}
		_, err := pallet(t, "build", "-q", "-f", recipe(""), "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
		if err == nil || !strings.Contains(err.Error(), "sub/link") || !strings.Contains(err.Error(), "links: keep") {
			t.Errorf("link to %s: %v", target, err)
		}
		mustPallet(t, "build", "-q", "-f", recipe(", links: keep"), "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
		if got := readImageFiles(t, filepath.Join(dir, "out"), "linux/amd64")["d/sub/link"]; got != "-> "+target {
			t.Errorf("kept link: %q", got)
		}
	}
}

const mitLicense = `MIT License

Copyright (c) 2024 Example Authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

// licenses: none declares the artifact's files the project's own: the
// main module of a Go binary built from them is too, so its missing
// licence file is neither a warning nor, with --require-licenses, an error.
func TestModuleLicensesOwnMainModule(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/own\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nfunc main() {}\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: .}
    licenses: none
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	log := mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "--module-licenses", "--require-licenses",
		"--cache-dir", t.TempDir(), "-o", "oci:"+filepath.Join(dir, "out"))
	if strings.Contains(log, "without a licence") {
		t.Errorf("a warning for the project's own main module:\n%s", log)
	}
	rec := readRecord(t, filepath.Join(dir, "out")+".record.json")
	if mods := rec.Artifacts[0].GoBinaries[0].Modules; len(mods) != 1 || mods[0].Path != "example.com/own" || !mods[0].Missing {
		t.Errorf("the record should still say the main module has no licence file: %+v", mods)
	}
}

// --module-licenses ships the licence of every module a Go binary links
// under /LICENSES/<artifact>/<module>/, classified in the record; a module
// without one is a warning, and an error with --require-licenses.
func TestModuleLicenses(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "lib", "go.mod"), "module example.com/lib\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "lib", "lib.go"), "package lib\n\nconst Name = \"lib\"\n")
	writeFile(t, filepath.Join(dir, "lib", "LICENSE"), mitLicense)
	writeFile(t, filepath.Join(dir, "bare", "go.mod"), "module example.com/bare\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "bare", "bare.go"), "package bare\n\nconst Name = \"bare\"\n")
	writeFile(t, filepath.Join(dir, "app", "go.mod"), "module example.com/app\n\ngo 1.22\n\nrequire (\n\texample.com/lib v0.0.0\n\texample.com/bare v0.0.0\n)\n\nreplace example.com/lib => ../lib\n\nreplace example.com/bare => ../bare\n")
	writeFile(t, filepath.Join(dir, "app", "main.go"), "package main\n\nimport (\n\t\"example.com/bare\"\n\t\"example.com/lib\"\n)\n\nfunc main() { println(lib.Name, bare.Name) }\n")
	writeFile(t, filepath.Join(dir, "app", "LICENSE"), mitLicense)
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  app:
    go: {module: app, packages: .}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: app, dest: /bin/}
`)
	out := filepath.Join(dir, "out")
	log := mustPallet(t, "build", "--progress", "plain", "-f", filepath.Join(dir, "pallet.yaml"), "--module-licenses", "--cache-dir", t.TempDir(), "-o", "oci:"+out)
	if !strings.Contains(log, "links modules without a licence file: example.com/bare") {
		t.Errorf("no warning for the module without a licence:\n%s", log)
	}
	files := readImageFiles(t, out, "linux/amd64")
	if files["LICENSES/app/example.com/lib/LICENSE"] != mitLicense+" (644)" {
		t.Errorf("the linked module's licence is not shipped: %v", files)
	}
	rec := readRecord(t, out+".record.json")
	var lib *record.Module
	for _, gb := range rec.Artifacts[0].GoBinaries {
		for i, m := range gb.Modules {
			if m.Path == "example.com/lib" {
				lib = &gb.Modules[i]
			}
		}
	}
	if lib == nil || !slices.Equal(lib.Licenses, []string{"MIT"}) {
		t.Errorf("record: %+v", lib)
	}
	if _, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--module-licenses", "--require-licenses", "--no-cache", "-o", "oci:"+out); err == nil || !strings.Contains(err.Error(), "example.com/bare") {
		t.Errorf("--require-licenses with a module without a licence: %v", err)
	}
}

// A named pipe nothing writes to, where pallet reads a whole file (the
// recipe, a modes file, a base layout's index.json), is an error at once:
// opening it used to wait for a writer for ever.
func TestNamedPipesAreNotWaitedOn(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("no mkfifo:", err)
		}
		return p
	}
	writeFile(t, filepath.Join(dir, "base", "oci-layout"), `{"imageLayoutVersion":"1.0.0"}`)
	fifo("base/index.json")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), "version: 1\nimages:\n  app: {base: \"oci:base\", platforms: linux/amd64}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", fifo("recipe.yaml")}, "a named pipe that nothing writes to"},
		{[]string{"-f", filepath.Join(dir, "pallet.yaml"), "--modes", fifo("modes.yaml")}, "a named pipe that nothing writes to"},
		{[]string{"-f", filepath.Join(dir, "pallet.yaml")}, "index.json is not a regular file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := pallet(t, append([]string{"build", "-q", "--no-cache", "-o", "oci:" + filepath.Join(t.TempDir(), "out")}, tc.args...)...)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: still waiting after 30 s", tc.args)
		}
	}
}

// A file that changes while its layer is written (a /proc file says it
// has 0 bytes, then has more) is an error at the placement's line.
func TestFileChangingUnderTheBuildNamesItsLine(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  status: {local: {path: /proc/self/status}, licenses: none}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: status, dest: /s/}
`)
	_, err := pallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "pallet.yaml")+":9: ") || !strings.Contains(err.Error(), "grew while being read") {
		t.Errorf("got %v", err)
	}
}

// TestRecordFailureSaysTheOutputIsWritten: the record is written once the
// output beside it is; when it cannot be, the build fails, and says that
// the output was replaced all the same, rather than reading as a failed
// build that changed nothing.
func TestRecordFailureSaysTheOutputIsWritten(t *testing.T) {
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	// A dangling link passes the check made before the build (no record
	// there yet) and fails when the record's directory is made.
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "records")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	msg, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+out,
		"--record", filepath.Join(dir, "records", "record.json"))
	if err == nil {
		t.Fatalf("the record was written through a dangling link:\n%s", msg)
	}
	if want := "oci:" + out + " is written, but the build record is not"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(out, "index.json")); err != nil {
		t.Errorf("the output is not there: %v", err)
	}
}

// A NUL in a placement's dest or path (a YAML escape, "\0") is refused
// at its line, before any layer is written: the tar writer would refuse
// it later, with no line and the NUL raw in the message.
func TestNULInDestIsRefusedAtItsLine(t *testing.T) {
	for _, field := range []string{`dest: "/x\0y"`, `dest: /x/, path: "tool\0"`} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "a", "tool"), "a\n")
		writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  a: {local: {path: a}, licenses: none}
images:
  app:
    base: scratch
    platforms: linux/amd64
    files:
      - {artifact: a, `+field+`}
`)
		_, err := pallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "--no-cache", "-o", "oci:"+filepath.Join(dir, "out"))
		if err == nil || !strings.Contains(err.Error(), "pallet.yaml:9: ") || !strings.Contains(err.Error(), `holds a NUL byte`) || strings.ContainsRune(err.Error(), 0) {
			t.Errorf("%s: got %v", field, err)
		}
	}
}
