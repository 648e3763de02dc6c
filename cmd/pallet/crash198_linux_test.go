package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"golang.org/x/sys/unix"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/tempfile"
)

// crashBuild is a pallet build run as a process of its own, as an outside
// fault suite runs it: its own TMPDIR, a cache it is told, and its stderr
// read line by line so that it can be killed at a given progress step.
type crashBuild struct {
	t      *testing.T
	tmp    string // the process's TMPDIR
	cache  string
	recipe string
	args   []string
}

func (b crashBuild) command(ctx context.Context) *exec.Cmd {
	args := append([]string{"build", "-f", b.recipe, "--cache-dir", b.cache, "--progress", "plain"}, b.args...)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPalletProcess$")
	cmd.Env = append(os.Environ(), "PALLET_TEST_PROCESS_ARGS="+strings.Join(args, "\n"), "TMPDIR="+b.tmp)
	return cmd
}

// run runs the build to its end, failing the test when it fails.
func (b crashBuild) run() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := b.command(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("pallet %v: %v\n%s", b.args, err, stderr.String())
	}
}

// kill is where a build is killed: delay after its stderr's line
// (counted from 0), or, when event is above 0, as the event-th entry is
// created or renamed into the directory the outputs are written in.
type kill struct {
	variant string
	line    int
	delay   time.Duration
	event   int
	second  bool // a second build of the same outputs runs meanwhile
}

// killAt starts the build and SIGKILLs it where k says, watching dir for
// k.event, and returns what it was killed after ("" when the build ended
// first), the lines it wrote to stderr and the names created in dir
// meanwhile. started, when not nil, is called once the build runs.
func (b crashBuild) killAt(k kill, dir string, started func()) (string, int, []string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		b.t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		b.t.Fatal(err)
	}
	cmd := b.command(ctx)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	if started != nil {
		started()
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	var at string
	var created []string
	buf := make([]byte, 64<<10)
	for n := 0; ; {
		select {
		case l, ok := <-lines:
			if !ok {
				if err := cmd.Wait(); at == "" && err != nil {
					b.t.Fatalf("pallet %v: %v", b.args, err)
				}
				return at, n, created
			}
			if at == "" && k.event == 0 && n == k.line {
				at = l
				time.Sleep(k.delay)
				cmd.Process.Signal(syscall.SIGKILL)
			}
			n++
		case <-time.After(time.Millisecond):
		}
		// The events are read as they come, a millisecond apart at most:
		// the kill lands within the step the event starts.
		for {
			m, err := unix.Read(fd, buf)
			if err != nil || m <= 0 {
				break
			}
			for off := 0; off+unix.SizeofInotifyEvent <= m; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				off += unix.SizeofInotifyEvent + int(ev.Len)
				created = append(created, name)
				if at == "" && len(created) == k.event {
					at = "event " + name
					cmd.Process.Signal(syscall.SIGKILL)
				}
			}
		}
	}
}

// A build killed (SIGKILL) at each of its progress steps, and within
// its writing of the outputs, leaves every output as it was or whole: an
// existing layout's index names only blobs that are there and match their
// digests, its other tag still resolves and its image is the old one or
// the new; a new layout is absent or whole; a docker archive is the old
// file or the new; SBOMs and the record are absent or whole. The next
// build with that cache succeeds with the digests of a build with a fresh
// one, and leaves nothing of the killed build's temporaries beside the
// outputs, in the cache or in TMPDIR, but for what a build cannot tell
// from a running one's until it has been left a while, which a build
// after that takes: a temporary written without a lock (an hour), a
// memo shard's or the cache tag's (a minute), a work dir made without
// its lock yet (10 s).
// A build started as the other is killed, writing the same outputs,
// succeeds with those digests.

func TestKilledBuildsLeaveOutputsWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a few dozen builds")
	}
	crashSweep(t)
}

// A build killed while it writes the stray list beside an existing
// layout leaves its temporary (..DIR.strays.new-*); once abandoned, the
// next build of the layout takes it, as it takes the layout's own
// temporaries. The kill is made here by leaving the temporary as it
// would: crashSweep's kills land on so small a write only now and then.
// (--sbom-dir's writability probe, which could leave .document.new-*,
// names no file on Linux: TestCheckWritableNamesNoFile.)
func TestKilledStrayListWriteIsSwept(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "files", "a.txt"), "a\n")
	recipe := filepath.Join(dir, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  files:
    local: {path: files}
    licenses: none
images:
  app:
    tags: [v1]
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: files, dest: /etc/app/}
`)
	out := filepath.Join(dir, "out")
	build := func() {
		mustPallet(t, "build", "-f", recipe, "-o", "oci:"+filepath.Join(out, "layout"), "--sbom", "--sbom-dir", filepath.Join(out, "sbom"))
	}
	build()
	left := []string{filepath.Join(out, "..layout.strays.new-2pl1ezp9iih96")}
	long := time.Now().Add(-tempfile.Abandoned - time.Minute)
	for _, p := range left {
		writeFile(t, p, "sha256:"+strings.Repeat("ab", 32)+"\n")
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "files", "a.txt"), "b\n")
	build()
	for _, p := range left {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, abandoned, is left", strings.TrimPrefix(p, dir))
		}
	}
}

// crashSweep kills builds as TestKilledBuildsLeaveOutputsWhole says.
func crashSweep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kills with SIGKILL, watches with inotify, and needs the kernel to drop the killed build's locks at once")
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "src", "app", "go.mod"), "module app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(root, "src", "app", "main.go"), "package main\n\nfunc main() { println(\"app\") }\n")
	writeFile(t, filepath.Join(root, "files", "a.txt"), "old\n")
	writeFile(t, filepath.Join(root, "files", "sub", "b.conf"), "conf\n")
	archive := fixture.TarGz([]fixture.File{
		{Name: "tool/", Dir: true, Mode: 0o755},
		{Name: "tool/bin/tool", Content: strings.Repeat("tool binary\n", 40000), Mode: 0o755},
		{Name: "tool/README", Content: "readme\n", Mode: 0o644},
	})
	srv := fixture.Serve(t, map[string][]byte{"/tool.tar.gz": archive})
	recipe := filepath.Join(root, "pallet.yaml")
	writeFile(t, recipe, `version: 1
artifacts:
  app:
    go: {module: src/app, packages: .}
    licenses: none
  tool:
    url:
      url: `+srv.URL+`/tool.tar.gz
      sha256: `+fixture.SHA256(archive)+`
      extract: {strip: 1}
    licenses: none
  files:
    local: {path: files}
    licenses: none
images:
  app:
    tags: [v1]
    base: {linux: scratch, windows: windows-hostprocess-scratch}
    platforms: [linux/amd64, linux/arm64, windows/amd64]
    files:
      - {artifact: app, dest: /app/}
      - {artifact: tool, dest: /opt/tool/}
      - {artifact: files, dest: /etc/app/}
`)
	tmp := filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}

	// The outputs as they were before: a layout holding another tool's
	// image and an older app:v1, and an older docker archive.
	pristine := filepath.Join(root, "pristine")
	oldCache := filepath.Join(root, "cache-old")
	old := crashBuild{t, tmp, oldCache, recipe, []string{"-o", "oci:" + filepath.Join(pristine, "layout")}}
	old.run()
	winOld := crashBuild{t, tmp, oldCache, recipe, []string{"--platform", "windows/amd64", "-o", "docker:" + filepath.Join(pristine, "app.tar")}}
	winOld.run()
	p, err := layout.FromPath(filepath.Join(pristine, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := random.Image(4096, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(other, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "other"})); err != nil {
		t.Fatal(err)
	}
	otherDigest, err := other.Digest()
	if err != nil {
		t.Fatal(err)
	}
	oldApp := refDigest(t, filepath.Join(pristine, "layout"), "v1")
	oldArchive := fileSumAt(t, filepath.Join(pristine, "app.tar"))
	writeFile(t, filepath.Join(root, "files", "a.txt"), "new\n")

	// Where each variant writes, fresh for every kill: the existing
	// layout and archive copied from pristine.
	out := filepath.Join(root, "out")
	linuxArgs := []string{
		"-o", "oci:" + filepath.Join(out, "layout"), "-o", "oci:" + filepath.Join(out, "fresh"),
		"--sbom", "--sbom-dir", filepath.Join(out, "sbom"), "--record", filepath.Join(out, "record.json"),
	}
	winArgs := []string{"--platform", "windows/amd64", "-o", "docker:" + filepath.Join(out, "app.tar"), "--record", filepath.Join(out, "record.json")}
	reset := func() {
		t.Helper()
		if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
		copyTree(t, pristine, out)
	}

	// What the outputs hold, in short: the image digests and SBOM sums
	// to compare with what a build with a fresh cache gives.
	result := func(variant string) string {
		t.Helper()
		if variant == "windows" {
			return "archive " + fileSumAt(t, filepath.Join(out, "app.tar"))
		}
		return fmt.Sprintf("layout v1 %s other %s, fresh v1 %s, sbom %s %s",
			refDigest(t, filepath.Join(out, "layout"), "v1"), refDigest(t, filepath.Join(out, "layout"), "other"),
			refDigest(t, filepath.Join(out, "fresh"), "v1"),
			fileSumAt(t, filepath.Join(out, "sbom", "app_linux-amd64.sbom.spdx.json")),
			fileSumAt(t, filepath.Join(out, "sbom", "app_windows-amd64.sbom.cdx.json")))
	}
	reset()
	want := map[string]string{}
	_, linuxSteps, linuxEvents := crashBuild{t, tmp, filepath.Join(root, "cache-ref"), recipe, linuxArgs}.killAt(kill{line: -1}, out, nil)
	want["linux"] = result("linux")
	newApp := refDigest(t, filepath.Join(out, "layout"), "v1")
	sbomSums := map[string]string{}
	for _, f := range dirNames(t, filepath.Join(out, "sbom")) {
		sbomSums[f] = fileSumAt(t, filepath.Join(out, "sbom", f))
	}
	reset()
	_, winSteps, winEvents := crashBuild{t, tmp, filepath.Join(root, "cache-ref2"), recipe, winArgs}.killAt(kill{line: -1}, out, nil)
	t.Logf("%d and %d steps; in the outputs' directory %q and %q", linuxSteps, winSteps, linuxEvents, winEvents)
	want["windows"] = result("windows")
	newArchive := fileSumAt(t, filepath.Join(out, "app.tar"))
	if newApp == oldApp || newArchive == oldArchive {
		t.Fatal("the change to the recipe's files did not change the image")
	}

	var kills []kill
	// Every fifth step of the cold build, a few moments after the
	// outputs start, then at each entry made in the outputs' directory
	// (the temporaries, the renames into place), where most of what can
	// be half written is.
	for n := 0; n < linuxSteps; n += 6 {
		kills = append(kills, kill{variant: "linux", line: n, second: n == 12})
	}
	for n := range linuxEvents {
		kills = append(kills, kill{variant: "linux", event: n + 1, second: n == 1})
	}
	for n := 0; n < winSteps; n += 5 {
		kills = append(kills, kill{variant: "windows", line: n, second: n == 5})
	}
	for n := range winEvents {
		kills = append(kills, kill{variant: "windows", event: n + 1, second: n == 1})
	}
	landed := 0
	var unlocked []string
	for i, k := range kills {
		reset()
		cache := filepath.Join(root, fmt.Sprintf("cache-%d", i))
		args := linuxArgs
		if k.variant == "windows" {
			args = winArgs
		}
		b := crashBuild{t, tmp, cache, recipe, args}
		var second chan string
		start := func() {}
		if k.second {
			second = make(chan string, 1)
			start = func() {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					cmd := b.command(ctx)
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					if err := cmd.Run(); err != nil {
						second <- fmt.Sprintf("%v\n%s", err, stderr.String())
						return
					}
					second <- ""
				}()
			}
		}
		at, _, _ := b.killAt(k, out, start)
		where := fmt.Sprintf("%s build killed %v after %q (step %d)", k.variant, k.delay, at, k.line)
		if k.event > 0 {
			where = fmt.Sprintf("%s build killed at %q", k.variant, at)
		}
		if at != "" {
			landed++
		}
		if second != nil {
			if failed := <-second; failed != "" {
				t.Errorf("%s: the build running beside it failed: %s", where, failed)
			} else if got := result(k.variant); got != want[k.variant] {
				t.Errorf("%s: the build running beside it wrote %s, want %s", where, got, want[k.variant])
			}
		}

		// (1) Every output as it was, or whole.
		if k.variant == "linux" {
			checkLayoutWhole(t, where, filepath.Join(out, "layout"))
			if d := refDigest(t, filepath.Join(out, "layout"), "other"); d != otherDigest.String() {
				t.Errorf("%s: the layout's other tag is %q, want %s", where, d, otherDigest)
			}
			if d := refDigest(t, filepath.Join(out, "layout"), "v1"); d != oldApp && d != newApp {
				t.Errorf("%s: the layout's v1 is %q, neither the old %s nor the new %s", where, d, oldApp, newApp)
			}
			if _, err := os.Lstat(filepath.Join(out, "fresh")); err == nil {
				checkLayoutWhole(t, where, filepath.Join(out, "fresh"))
				if d := refDigest(t, filepath.Join(out, "fresh"), "v1"); d != newApp {
					t.Errorf("%s: the new layout's v1 is %q, want %s", where, d, newApp)
				}
			}
			for f, sum := range sbomSums {
				if got := fileSumAt(t, filepath.Join(out, "sbom", f)); got != "" && got != sum {
					t.Errorf("%s: %s is not the SBOM a whole build writes", where, f)
				}
			}
		} else if sum := fileSumAt(t, filepath.Join(out, "app.tar")); sum != oldArchive && sum != newArchive {
			t.Errorf("%s: the docker archive is neither the old one nor the new", where)
		}
		if data, err := os.ReadFile(filepath.Join(out, "record.json")); err == nil && !json.Valid(data) {
			t.Errorf("%s: the record is not whole: %q", where, data)
		}

		// (2) The next build with the same cache gives what a fresh
		// cache gives.
		b.run()
		if got := result(k.variant); got != want[k.variant] {
			t.Errorf("%s: the next build wrote %s, want %s", where, got, want[k.variant])
		}

		// (3) Nothing of the killed build is left, but for what was
		// written without a lock beside it (an output's probe for
		// writability, an SBOM): that the next build of the output
		// takes once tempfile.Abandoned has passed.
		if left := leftBeside(t, out); len(left) > 0 {
			unlocked = append(unlocked, fmt.Sprintf("%s: %v", where, left))
			long := time.Now().Add(-tempfile.Abandoned - time.Minute)
			for _, l := range left {
				p := filepath.Join(out, l)
				if _, err := os.Lstat(p + ".lock"); err == nil || strings.HasSuffix(l, ".lock") {
					t.Errorf("%s: the next build left %s, locked, whose owner is dead", where, l)
				}
				if err := os.Chtimes(p, long, long); err != nil {
					t.Fatal(err)
				}
			}
			b.run()
			for _, l := range leftBeside(t, out) {
				t.Errorf("%s: a build once they were abandoned left %s", where, l)
			}
		}
		if k.variant == "linux" {
			if strays := unnamedBlobs(t, filepath.Join(out, "layout")); len(strays) > 0 {
				t.Errorf("%s: the next build left blobs no entry names in the layout: %v", where, strays)
			}
		}
		// In the cache, a memo shard's temporary, and the tag's, are
		// taken once a minute old; anything else at once.
		leftInCache := func() []string {
			var left []string
			filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
				if err == nil && (strings.Contains(d.Name(), ".new-") || filepath.Dir(p) == filepath.Join(cache, "tmp")) {
					left = append(left, p)
				}
				return nil
			})
			return left
		}
		if left := leftInCache(); len(left) > 0 {
			long := time.Now().Add(-2 * time.Minute)
			for _, p := range left {
				if filepath.Base(filepath.Dir(p)) != "memo" && !strings.HasPrefix(filepath.Base(p), ".CACHEDIR.TAG.new-") {
					t.Errorf("%s: the next build left in the cache %s", where, p)
				}
				os.Chtimes(p, long, long)
			}
			b.run()
			for _, p := range leftInCache() {
				t.Errorf("%s: a build a minute later left in the cache %s", where, p)
			}
		}
		// A work dir the killed build was making, before its lock was
		// in place, is the next build's to take only after a grace:
		// from a minute on.
		if work := workDirs(t, tmp); len(work) > 0 {
			long := time.Now().Add(-time.Minute)
			for _, w := range work {
				if err := os.Chtimes(filepath.Join(tmp, w), long, long); err != nil {
					t.Fatal(err)
				}
			}
			b.run()
			for _, n := range workDirs(t, tmp) {
				var inside []string
				filepath.WalkDir(filepath.Join(tmp, n), func(p string, d fs.DirEntry, err error) error {
					if fi, err := os.Lstat(p); err == nil {
						inside = append(inside, fmt.Sprintf("%s %v", strings.TrimPrefix(p, tmp), fi.Mode()))
					}
					return nil
				})
				t.Errorf("%s: the next builds left in TMPDIR %s: %v", where, n, inside)
				os.RemoveAll(filepath.Join(tmp, n))
			}
		}
		os.RemoveAll(cache)
	}
	// A build that ended before its step came killed nothing: the
	// sweep must land almost everywhere it aims.
	if landed < len(kills)*3/4 {
		t.Errorf("only %d of %d kills landed before the build ended", landed, len(kills))
	}
	t.Logf("%d of %d kills landed; temporaries without a lock, left until abandoned: %q", landed, len(kills), unlocked)
}

// workDirs lists what is in TMPDIR but the test binary's own cache.
func workDirs(t *testing.T, tmp string) []string {
	t.Helper()
	var work []string
	for _, n := range dirNames(t, tmp) {
		if !strings.HasPrefix(n, "pallet-test-cache-") { // TestMain's, not pallet's
			work = append(work, n)
		}
	}
	return work
}

// leftBeside lists the hidden names (pallet's temporaries, their locks)
// anywhere under dir.
func leftBeside(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			left = append(left, strings.TrimPrefix(p, dir+string(filepath.Separator)))
		}
		return nil
	})
	return left
}

// checkLayoutWhole reads the layout's index and every blob it names,
// through indexes and manifests, checking each against its digest and
// size.
func checkLayoutWhole(t *testing.T, where, dir string) map[v1.Hash]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return nil
	}
	var seen = map[v1.Hash]bool{}
	var walk func(data []byte)
	walk = func(data []byte) {
		var m struct {
			Manifests []v1.Descriptor `json:"manifests"`
			Config    *v1.Descriptor  `json:"config"`
			Layers    []v1.Descriptor `json:"layers"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Errorf("%s: %s: %v", where, dir, err)
			return
		}
		descs := append(m.Manifests, m.Layers...)
		if m.Config != nil {
			descs = append(descs, *m.Config)
		}
		for _, d := range descs {
			if seen[d.Digest] || !d.MediaType.IsDistributable() {
				continue
			}
			seen[d.Digest] = true
			blob, err := os.ReadFile(filepath.Join(dir, "blobs", d.Digest.Algorithm, d.Digest.Hex))
			if err != nil {
				t.Errorf("%s: %s names a blob that is not there: %v", where, dir, err)
				continue
			}
			if sum := sha256.Sum256(blob); hex.EncodeToString(sum[:]) != d.Digest.Hex || int64(len(blob)) != d.Size {
				t.Errorf("%s: %s's blob %s does not match its digest or size", where, dir, d.Digest)
				continue
			}
			if d.MediaType.IsIndex() || d.MediaType.IsImage() {
				walk(blob)
			}
		}
	}
	walk(data)
	return seen
}

// unnamedBlobs lists the blobs of the layout its index does not reach.
func unnamedBlobs(t *testing.T, dir string) []string {
	t.Helper()
	named := checkLayoutWhole(t, "", dir)
	var strays []string
	for _, n := range dirNames(t, filepath.Join(dir, "blobs", "sha256")) {
		if !named[v1.Hash{Algorithm: "sha256", Hex: n}] {
			strays = append(strays, n)
		}
	}
	return strays
}

// refDigest is the digest the layout's index gives the ref name, "" when
// none or there is no index.
func refDigest(t *testing.T, dir, ref string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	var m v1.IndexManifest
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		t.Errorf("%s: %v", dir, err)
		return ""
	}
	for _, d := range m.Manifests {
		if d.Annotations["org.opencontainers.image.ref.name"] == ref {
			return d.Digest.String()
		}
	}
	return ""
}

// fileSumAt is the sha256 of the file, "" when it is not there.
func fileSumAt(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
