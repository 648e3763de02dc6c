package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
)

// What an ADD unpacks keeps each tar entry's mode (setuid, setgid and
// sticky included) and, without --chown, its owner, as BuildKit's unpack
// does (go-archive's createTarFile chmods and lchowns each entry as its
// header says): a rootfs ADDed on scratch keeps its sticky /tmp, its
// setuid binaries and its users' homes. --chown owns every entry but the
// directories the archive only implies; a COPY --from of what a stage
// unpacked copies the modes and owners, or gives its own --chown's.
// The expected lines are what BuildKit v0.29 (bench/buildkit.sh, built
// from source) wrote for this Dockerfile and archive, entry by entry.
func TestDockerfileAddKeepsArchiveModesAndOwners(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rootfs.tar"), string(fixture.Tar([]fixture.File{
		{Name: "tmp/", Dir: true, Mode: 0o1777},
		{Name: "usr/", Dir: true, Mode: 0o755},
		{Name: "usr/bin/", Dir: true, Mode: 0o755},
		{Name: "usr/bin/passwd", Content: "p\n", Mode: 0o4755},
		{Name: "usr/bin/wall", Content: "w\n", Mode: 0o2755, GID: 5},
		{Name: "home/u/", Dir: true, Mode: 0o700, UID: 1000, GID: 1000},
		{Name: "home/u/.profile", Content: "x\n", Mode: 0o600, UID: 1000, GID: 1000},
		{Name: "home/u/link", Link: ".profile", Mode: 0o777, UID: 1000, GID: 1000},
		{Name: "etc/", Dir: true, Mode: 0o755},
		{Name: "etc/shadow", Content: "s\n", Mode: 0o640, GID: 42},
		{Name: "opt/x", Content: "x\n", Mode: 0o744},
	})))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch AS s\nADD rootfs.tar /\n"+
		"FROM scratch\nADD rootfs.tar /r/\nADD --chown=5:6 rootfs.tar /c/\nCOPY --from=s / /s/\nCOPY --from=s --chown=7:8 / /t/\n")
	out := filepath.Join(t.TempDir(), "o")
	digest := mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	// The cache keeps them beside the unpacked files: a build that
	// stores the archive's entry, and one that reads it back, give the
	// same image.
	cacheDir := t.TempDir()
	for i := range 2 {
		if got := mustPallet(t, "build", "-q", "--cache-dir", cacheDir, "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "o")); got != digest {
			t.Errorf("build %d with a cache: %s, without: %s", i+1, got, digest)
		}
	}
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	got := layerLines(t, layers, 1, func(h *tar.Header) string { return fmt.Sprintf("%o %d:%d", h.Mode, h.Uid, h.Gid) })
	// The rootfs as each layer holds it under its directory, and the
	// owner of what the archive holds and of what it only implies.
	layer := func(n int, d string, owner func(uid, gid int) string, implied string) []string {
		return []string{
			fmt.Sprintf("%d %s 755 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/etc 755 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/etc/shadow 640 %s", n, d, owner(0, 42)),
			fmt.Sprintf("%d %s/home 755 %s", n, d, implied),
			fmt.Sprintf("%d %s/home/u 700 %s", n, d, owner(1000, 1000)),
			fmt.Sprintf("%d %s/home/u/.profile 600 %s", n, d, owner(1000, 1000)),
			fmt.Sprintf("%d %s/home/u/link 777 %s", n, d, owner(1000, 1000)),
			fmt.Sprintf("%d %s/opt 755 %s", n, d, implied),
			fmt.Sprintf("%d %s/opt/x 744 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/tmp 1777 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/usr 755 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/usr/bin 755 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/usr/bin/passwd 4755 %s", n, d, owner(0, 0)),
			fmt.Sprintf("%d %s/usr/bin/wall 2755 %s", n, d, owner(0, 5)),
		}
	}
	own := func(uid, gid int) string { return fmt.Sprintf("%d:%d", uid, gid) }
	chown := func(u, g int) func(int, int) string {
		return func(int, int) string { return own(u, g) }
	}
	var want []string
	want = append(want, layer(1, "r", own, "0:0")...)
	want = append(want, layer(2, "c", chown(5, 6), "0:0")...)
	want = append(want, layer(3, "s", own, "0:0")...)
	want = append(want, layer(4, "t", chown(7, 8), "7:8")...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layers hold\n got %q\nwant %q", got, want)
	}
}

// An owner no runtime reads as written (a PAX uid past 32 bits, or
// negative) is refused at the ADD's line, naming the entry, as GNU tar
// refuses it (out of range), rather than kept as another. Only where it
// would be kept: ADD --chown, and a recipe's extract, which give their
// own owner, place the archive.
func TestDockerfileAddRefusesArchiveOwnerOutOfRange(t *testing.T) {
	dir := t.TempDir()
	recipe := extractRecipe(t, dir, "{}")
	for _, uid := range []int{1 << 33, -5, 1<<32 - 1} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.WriteHeader(&tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Uid: uid, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "r.tar"), buf.String())
		refusedDockerfiles(t, dir, []dockerfileRefusal{
			{"FROM scratch\nADD r.tar /\n", fmt.Sprintf(`Dockerfile:2: image %s (linux/amd64): f: owner %d:0: ids must be 0 to 4294967294`, filepath.Base(dir), uid)},
			{"FROM scratch\nCOPY r.tar /d/\nADD r.tar /d/\n", fmt.Sprintf(`Dockerfile:3: image %s (linux/amd64): d/f: owner %d:0: ids must be 0 to 4294967294`, filepath.Base(dir), uid)},
		})
		writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD --chown=1:1 r.tar /\n")
		cacheDir := t.TempDir()
		for _, f := range []string{recipe, filepath.Join(dir, "Dockerfile")} {
			// Twice: the entry stored, then read back.
			for range 2 {
				mustPallet(t, "build", "-q", "--cache-dir", cacheDir, "-f", f, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
			}
		}
	}
}

// ADD keeps an archive's absolute links as links of the image's root, as
// BuildKit unpacks a root file system's /etc/localtime; one that climbs
// out ("/../x") is refused, as BuildKit's breakout check refuses it. A
// recipe's extract of the same archive refuses absolute links, and says
// how to keep them: with links: keep, it places them so too.
func TestDockerfileAddKeepsRootedLinks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{
		{Name: "etc/", Dir: true, Mode: 0o755},
		{Name: "etc/localtime", Link: "/usr/share/zoneinfo/UTC"},
		{Name: "etc/alternatives/", Dir: true, Mode: 0o755},
		{Name: "etc/alternatives/awk", Link: "/usr/bin/mawk"},
	})))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD r.tar /\n")
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	got := layerLines(t, layers, 1, func(h *tar.Header) string { return h.Linkname })
	want := []string{"1 etc ", "1 etc/alternatives ", "1 etc/alternatives/awk /usr/bin/mawk", "1 etc/localtime /usr/share/zoneinfo/UTC"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer holds\n got %q\nwant %q", got, want)
	}

	writeFile(t, filepath.Join(dir, "up.tar"), string(fixture.Tar([]fixture.File{{Name: "l", Link: "/../x"}})))
	refusedDockerfiles(t, dir, []dockerfileRefusal{
		{"FROM scratch\nADD up.tar /\n", `entry "l": symlink target "/../x" leaves the archive root`},
		// A Windows layer's links are relative: refused as it unpacks.
		{"FROM --platform=windows/amd64 windows-hostprocess-scratch\nADD r.tar /\n", `Dockerfile:2: artifact r.tar (windows/amd64, local): extract ` + filepath.Join(dir, "r.tar") + `: entry "etc/localtime": symlink target "/usr/share/zoneinfo/UTC" is absolute`},
	})
	recipe := extractRecipe(t, dir, "{}")
	if _, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o")); err == nil || !strings.Contains(err.Error(), `pallet.yaml:4: artifact r (linux/amd64, local): extract `+filepath.Join(dir, "r.tar")+`: entry "etc/localtime": symlink target "/usr/share/zoneinfo/UTC" is absolute (a recipe's extract keeps it with links: keep, as a link from a Linux image's root)`) {
		t.Errorf("a recipe's extract of absolute links: %v, want them refused", err)
	}
	extractRecipe(t, dir, "{links: keep}")
	out = filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+out)
	if layers, err = dfImage(t, out).Layers(); err != nil {
		t.Fatal(err)
	}
	if got := layerLines(t, layers, 1, func(h *tar.Header) string { return h.Linkname }); !reflect.DeepEqual(got, want) {
		t.Errorf("with links: keep, the layer holds\n got %q\nwant %q", got, want)
	}
}

// An archive's device nodes and named pipes are not placed (the cache, a
// directory of the build's, has no place for them); the build says so,
// once, at the line that unpacks the archive, where BuildKit's unpack
// (as root) makes them. One left out by include is not named.
func TestArchiveSpecialFilesWarned(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "r.tar"), string(rawTar(t,
		&tar.Header{Name: "dev/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		&tar.Header{Name: "dev/sda", Typeflag: tar.TypeBlock, Mode: 0o660, Devmajor: 8},
		&tar.Header{Name: "run/initctl", Typeflag: tar.TypeFifo, Mode: 0o600},
		&tar.Header{Name: "bin/app", Typeflag: tar.TypeReg, Mode: 0o755},
	)))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD r.tar /\n")
	log := mustPallet(t, "build", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "--platform", "linux/amd64,linux/arm64", "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	// Once for both platforms, naming each.
	want := regexp.MustCompile(`warning: ` + regexp.QuoteMeta(filepath.Join(dir, "Dockerfile")) + `:2:5: artifact r\.tar \(linux/amd64 and linux/arm64, local\): the archive holds 3 entries pallet does not place, which the image will not have: dev/null \(character device\), dev/sda \(block device\), run/initctl \(named pipe\)\n`)
	if n := strings.Count(log, "does not place"); n != 1 || !want.MatchString(log) {
		t.Errorf("the build said\n%s\nwant once: %s", log, want)
	}

	recipe := extractRecipe(t, dir, "{include: [bin]}")
	if log := mustPallet(t, "build", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o")); strings.Contains(log, "does not place") {
		t.Errorf("entries include leaves out were named:\n%s", log)
	}
	extractRecipe(t, dir, "{include: [bin, run]}")
	if log := mustPallet(t, "build", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o")); !strings.Contains(log, "the archive holds 1 entry pallet does not place, which the image will not have: run/initctl (named pipe)") {
		t.Errorf("one entry not placed is said so:\n%s", log)
	}
	// A placement that takes only bin/ of the archive places none of
	// them either: nothing the image misses.
	b, err := os.ReadFile(recipe)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, recipe, strings.Replace(string(b), "{artifact: r, dest: /}", "{artifact: r, dest: /usr/bin/, path: bin}", 1))
	if log := mustPallet(t, "build", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o")); strings.Contains(log, "does not place") {
		t.Errorf("entries the placement's path leaves out were named:\n%s", log)
	}
}

// An artifact whose archive leaves out other entries on some platforms
// than on others is warned of once per list, naming the platforms each
// is true of, in their names' order, whichever platform was ready
// first: the warning was given once, for the first.
func TestArchiveSkippedWarnedPerList(t *testing.T) {
	dir := t.TempDir()
	for arch, fifo := range map[string]string{"amd64": "run/initctl", "arm64": "run/initctl", "riscv64": "run/other"} {
		writeFile(t, filepath.Join(dir, "r-"+arch+".tar"), string(rawTar(t,
			&tar.Header{Name: "bin/app", Typeflag: tar.TypeReg, Mode: 0o755},
			&tar.Header{Name: fifo, Typeflag: tar.TypeFifo, Mode: 0o600},
		)))
	}
	recipe := perArchRecipe(t, dir)
	log := mustPallet(t, "build", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	var got []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "does not place") {
			got = append(got, l)
		}
	}
	want := []string{
		"warning: " + recipe + ":4:5: artifact r (linux/amd64 and linux/arm64, local): the archive holds 1 entry pallet does not place, which the image will not have: run/initctl (named pipe)",
		"warning: " + recipe + ":4:5: artifact r (linux/riscv64, local): the archive holds 1 entry pallet does not place, which the image will not have: run/other (named pipe)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the build warned\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A path: written with a '\\' that names a directory whose own name
// holds it takes what is under that directory: an entry there left out
// is warned of. The placed paths were split on '\\' when the build
// worked out which skipped entries (and Go binaries) a placement takes,
// so this one was taken for one the image does not place, and not said.
func TestSkippedUnderBackslashPathWarned(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "r.tar"), string(rawTar(t,
		&tar.Header{Name: `a\b/`, Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: `a\b/tool`, Typeflag: tar.TypeReg, Mode: 0o755},
		&tar.Header{Name: `a\b/pipe`, Typeflag: tar.TypeFifo, Mode: 0o600},
	)))
	recipe := backslashPathRecipe(t, dir)
	log := mustPallet(t, "build", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if want := `the archive holds 1 entry pallet does not place, which the image will not have: a\b/pipe (named pipe)`; !strings.Contains(log, want) {
		t.Errorf("the build said\n%s\nwant: %s", log, want)
	}
}

// extractRecipe writes dir/pallet.yaml, which places the archive
// dir/r.tar at / on scratch, unpacked with extract (YAML flow form), and
// returns its path.
func extractRecipe(t *testing.T, dir, extract string) string {
	t.Helper()
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  r:
    local: {path: ./r.tar, extract: `+extract+`}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: r, dest: /}
`)
	return recipe
}

// A recipe's extract normalizes modes and owners, so its cache entry
// keeps none of the headers' (an ADD's does): a release tarball owned by
// 1001:121 costs nothing for them.
func TestRecipeExtractKeepsNoHeaders(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "r.tar"), string(fixture.Tar([]fixture.File{
		{Name: "bin/", Dir: true, Mode: 0o750, UID: 1001, GID: 121},
		{Name: "bin/tool", Content: "t\n", Mode: 0o700, UID: 1001, GID: 121},
	})))
	archived := func(cacheDir string) []string {
		found, _ := filepath.Glob(filepath.Join(cacheDir, "artifacts", "*", "archived"))
		return found
	}
	cacheDir := t.TempDir()
	mustPallet(t, "build", "-q", "--cache-dir", cacheDir, "-f", extractRecipe(t, dir, "{}"), "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if found := archived(cacheDir); len(found) != 0 {
		t.Errorf("a recipe's extract kept headers: %v", found)
	}
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD r.tar /\n")
	mustPallet(t, "build", "-q", "--cache-dir", cacheDir, "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
	if found := archived(cacheDir); len(found) != 1 {
		t.Errorf("an ADD's entry kept headers %v times, want once", found)
	}
}

// ADD of a local .tar.bz2 unpacks it, as BuildKit's ADD does: the layer
// holds what GNU tar unpacks of the same file (names, modes, contents,
// link targets), owned as its headers say.
func TestDockerfileAddBzip2AsGNUTar(t *testing.T) {
	dir := t.TempDir()
	bz := fixture.TarBz2(t, []fixture.File{
		{Name: "busybox-1.36.1/", Dir: true, Mode: 0o755},
		{Name: "busybox-1.36.1/bin/", Dir: true, Mode: 0o755},
		{Name: "busybox-1.36.1/bin/busybox", Content: "#!/bin/sh\necho busybox\n", Mode: 0o755},
		{Name: "busybox-1.36.1/bin/sh", Link: "busybox", Mode: 0o777},
		{Name: "busybox-1.36.1/LICENSE", Content: strings.Repeat("GPL-2.0\n", 1000), Mode: 0o644},
		{Name: "busybox-1.36.1/etc/passwd", Content: "root:x:0:0::/root:/bin/sh\n", Mode: 0o600, UID: 0, GID: 0},
	})
	writeFile(t, filepath.Join(dir, "busybox.tar.bz2"), string(bz))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nADD busybox.tar.bz2 /\n")
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	layers, err := dfImage(t, out).Layers()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range layers {
		walkLayer(t, l, func(h *tar.Header, r io.Reader) {
			body, _ := io.ReadAll(r)
			got = append(got, fmt.Sprintf("%s %o %s %q", strings.TrimSuffix(h.Name, "/"), h.Mode&0o7777, h.Linkname, body))
		})
	}

	gnu := t.TempDir()
	if out, err := exec.Command("tar", "-xjf", filepath.Join(dir, "busybox.tar.bz2"), "-C", gnu).CombinedOutput(); err != nil {
		t.Fatalf("GNU tar: %v\n%s", err, out)
	}
	var want []string
	if err := filepath.WalkDir(gnu, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == gnu {
			return err
		}
		rel, _ := filepath.Rel(gnu, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		var body []byte
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err = os.Readlink(p)
		case d.Type().IsRegular():
			body, err = os.ReadFile(p)
		}
		want = append(want, fmt.Sprintf("%s %o %s %q", rel, info.Mode().Perm(), link, body))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the layer holds\n%s\nGNU tar unpacks\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A .tar.bz2 whose stream is damaged is refused at the line that unpacks
// it, naming the file and what bzip2 found: a block that fails its CRC, or
// a stream cut short.
func TestBzip2DamageSaidAtItsLine(t *testing.T) {
	dir := t.TempDir()
	good := fixture.TarBz2(t, []fixture.File{{Name: "bin/tool", Content: strings.Repeat("tool\n", 500), Mode: 0o755}})
	badCRC := bytes.Clone(good)
	badCRC[10] ^= 1 // the first block's CRC, after "BZh9" and the block magic
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, "version: 1\nartifacts:\n  r:\n    local: {path: ./r.tar.bz2, extract: {}}\n    licenses: none\n"+
		"images:\n  app:\n    base: scratch\n    platforms: [linux/amd64]\n    files:\n      - {artifact: r, dest: /}\n")
	for _, tt := range []struct {
		data []byte
		want string
	}{
		{badCRC, "bzip2 data invalid: block checksum mismatch"},
		{good[:len(good)-4], "bzip2 stream cut short: unexpected EOF"},
	} {
		writeFile(t, filepath.Join(dir, "r.tar.bz2"), string(tt.data))
		prefix := recipe + `:4: artifact r (linux/amd64, local): extract ` + filepath.Join(dir, "r.tar.bz2") + `: `
		_, err := pallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
		if err == nil || !strings.Contains(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v\nwant %s...%s", err, prefix, tt.want)
		}
	}
	writeFile(t, filepath.Join(dir, "r.tar.bz2"), string(good))
	mustPallet(t, "build", "-q", "--no-cache", "-f", recipe, "-o", "oci:"+filepath.Join(t.TempDir(), "o"))
}

// backslashPathRecipe writes into dir a recipe placing the path a\b of
// the archive ./r.tar at /opt/ on scratch, and gives its path.
func backslashPathRecipe(t *testing.T, dir string) string {
	t.Helper()
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  r:
    local: {path: ./r.tar, extract: {}}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: r, path: 'a\b', dest: /opt/}
`)
	return recipe
}
