package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/progress"
)

func TestExitStatus(t *testing.T) {
	sigint, cancel := context.WithCancelCause(context.Background())
	cancel(interrupted{syscall.SIGINT})
	sigterm, cancel := context.WithCancelCause(context.Background())
	cancel(interrupted{syscall.SIGTERM})
	// Cancelled from within (a failed step stopping the rest), not by a signal.
	inner, stop := context.WithCancel(context.Background())
	stop()
	canceled := fmt.Errorf("building a: %w", context.Canceled)
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		code int
		msg  string
	}{
		{"success", context.Background(), nil, 0, ""},
		{"success despite a late signal", sigint, nil, 0, ""},
		{"failure", context.Background(), errors.New("boom"), 1, "boom"},
		{"cancelled without a signal", inner, canceled, 1, "building a: context canceled"},
		{"Ctrl-C", sigint, canceled, 130, "interrupted"},
		{"Ctrl-C killing a compiler", sigint, errors.New("go build: signal: interrupt"), 130, "interrupted"},
		{"SIGTERM", sigterm, canceled, 143, "terminated"},
	} {
		code, msg := exitStatus(c.ctx, c.err)
		if code != c.code || msg != c.msg {
			t.Errorf("%s: %d %q, want %d %q", c.name, code, msg, c.code, c.msg)
		}
	}
}

// TestExitReportsThroughJSON keeps a --progress json stream JSON to the
// end: the interruption is its last event, not a line of text.
func TestExitReportsThroughJSON(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(interrupted{syscall.SIGINT})
	var events, stderr bytes.Buffer
	prog, err := progress.New("json", &events)
	if err != nil {
		t.Fatal(err)
	}
	code := exit(ctx, prog.Fail(context.Canceled), &stderr)
	if code != 130 || stderr.Len() != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if s := events.String(); !strings.Contains(s, `"event":"error"`) || !strings.Contains(s, `"error":"interrupted"`) || strings.Count(s, "\n") != 1 {
		t.Errorf("events %q", s)
	}
	stderr.Reset()
	if code := exit(context.Background(), errors.New("boom"), &stderr); code != 1 || stderr.String() != "pallet: boom\n" {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestPalletProcess is pallet's main in a process of its own, for
// TestInterrupt; it runs only when that test starts it.
func TestPalletProcess(t *testing.T) {
	args := os.Getenv("PALLET_TEST_PROCESS_ARGS")
	if args == "" {
		t.Skip("started by TestInterrupt")
	}
	os.Args = append([]string{"pallet"}, strings.Split(args, "\n")...)
	main()
}

// TestInterrupt signals a real pallet process waiting on a registry that
// never answers: it must exit 128+signal with one line on stderr.
func TestInterrupt(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals are Unix's")
	}
	waiting := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case waiting <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/hangs:latest"
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		line string
	}{{syscall.SIGINT, 130, "pallet: interrupted\n"}, {syscall.SIGTERM, 143, "pallet: terminated\n"}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPalletProcess$")
			// TMPDIR: the process's TestMain makes a cache directory it
			// cannot remove, since main exits.
			cmd.Env = append(os.Environ(), "PALLET_TEST_PROCESS_ARGS=inspect\nregistry:"+ref, "TMPDIR="+t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-waiting:
			case <-ctx.Done():
				t.Fatal("pallet never reached the registry")
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("pallet ended with %v, want exit %d\nstdout: %s\nstderr: %s", err, c.code, stdout.String(), stderr.String())
			}
			if stderr.String() != c.line {
				t.Errorf("stderr %q, want %q", stderr.String(), c.line)
			}
		})
	}
}

// TestStuckProcess is the process TestStuckCommandExitsAfterGrace signals:
// a command that no cancellation reaches (a blocked system call).
func TestStuckProcess(t *testing.T) {
	if os.Getenv("PALLET_TEST_STUCK") == "" {
		t.Skip("started by TestStuckCommandExitsAfterGrace")
	}
	ctx, stop := interruptible(context.Background(), 200*time.Millisecond, os.Exit)
	defer stop()
	if os.Getenv("PALLET_TEST_STUCK") == "json" {
		prog, err := progress.New("json", os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		reportExitThrough(ctx, prog, os.Stderr)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute) // ignores the context, as a blocked open(2) does
}

// One SIGTERM ends a command stuck where cancellation cannot reach, once
// the grace after the signal is over, with the signal's exit status: a
// timeout(1) or a CI job's cancel sends only one.
func TestStuckCommandExitsAfterGrace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals are Unix's")
	}
	t.Run("plain", func(t *testing.T) {
		if got := stuckExit(t, "1"); got != "pallet: terminated received; not stopped 200ms later, exiting\n" {
			t.Errorf("stderr %q", got)
		}
	})
	// With --progress json, the last word is the stream's error event.
	t.Run("json", func(t *testing.T) {
		got := stuckExit(t, "json")
		var e struct{ Event, Error string }
		if err := json.Unmarshal([]byte(got), &e); err != nil || strings.Count(got, "\n") != 1 || e.Event != "error" || e.Error != "terminated received; not stopped 200ms later, exiting" {
			t.Errorf("stderr %q: %v", got, err)
		}
	})
}

// stuckExit runs TestStuckProcess, signals it, and returns its stderr.
func stuckExit(t *testing.T, mode string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStuckProcess$")
	cmd.Env = append(os.Environ(), "PALLET_TEST_STUCK="+mode, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("the process did not start: %q %v", buf, err)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("ended with %v after %s, want exit 143\nstderr: %s", err, time.Since(start), stderr.String())
	}
	return stderr.String()
}

// What net/http's client says through the standard logger reaches a
// --progress json stream as a warning event, not as a line of text.
func TestStandardLogIsAWarning(t *testing.T) {
	var events bytes.Buffer
	prog, err := progress.New("json", &events)
	if err != nil {
		t.Fatal(err)
	}
	before := log.Writer()
	restore := logThrough(prog)
	log.Printf("Unsolicited response received on idle HTTP channel starting with %q; err=%v", "HTTP/1.1 200", nil)
	restore()
	prog.Close()
	lines := strings.Split(strings.TrimSpace(events.String()), "\n")
	var ev map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &ev) != nil || ev["event"] != "warning" || !strings.Contains(fmt.Sprint(ev["message"]), "Unsolicited response") {
		t.Errorf("events %q", events.String())
	}
	if log.Writer() != before {
		t.Error("the standard logger was not given back")
	}
	// Two builds in one process, ending in the order they began: the
	// logger goes back to what it was only when both are done.
	endA := logThrough(prog)
	endB := logThrough(prog)
	endA()
	if log.Writer() == before {
		t.Error("the logger was given back while a build still runs")
	}
	endB()
	if log.Writer() != before {
		t.Error("the standard logger was not given back after two builds")
	}
}

// TestStoppedGoBuildLeavesNoWorkInTMPDIR stops a go build half-way (its C
// compiler never returns; another artifact fails meanwhile): the go
// command, killed, cannot remove its go-build* work directory, which must
// then be inside pallet's own work directory, not left in TMPDIR.
func TestStoppedGoBuildLeavesNoWorkInTMPDIR(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in C compiler is a shell script")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	compiling := filepath.Join(dir, "compiling")
	cc := filepath.Join(dir, "cc.sh")
	if err := os.WriteFile(cc, []byte("#!/bin/sh\ntouch '"+compiling+"'\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), "module example.com/slow\n\ngo 1.22\n")
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\n// int answer(void) { return 42; }\nimport \"C\"\n\nfunc main() { println(C.answer()) }\n")
	// The download fails only once the go build is inside its compiler,
	// its work directory made.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := os.Stat(compiling); err == nil {
				break
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	p := "linux/" + runtime.GOARCH
	writeFile(t, filepath.Join(dir, "pallet.yaml"), fmt.Sprintf(`version: 1
artifacts:
  slow:
    go: {module: ., packages: ., cgo: true, cc: {%s: %s}}
    licenses: none
  gone:
    url: {url: %s/gone, sha256: %s}
    licenses: none
images:
  app:
    base: scratch
    platforms: [%s]
    files:
      - {artifact: slow, dest: /bin/}
      - {artifact: gone, dest: /etc/}
`, p, cc, srv.URL, strings.Repeat("0", 64), p))
	out, err := pallet(t, "build", "--no-cache", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"))
	if err == nil || !strings.Contains(out, "404") {
		t.Fatalf("the build did not fail on the download: %v\n%s", err, out)
	}
	if _, err := os.Stat(compiling); err != nil {
		t.Fatalf("the go build never reached its C compiler: %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("TMPDIR holds %s after the build", e.Name())
	}
}

// TestKilledFileWritesAreSwept: a build killed while it writes its record,
// metadata file or SBOMs leaves a temporary beside each, in a directory
// of the user's; the next build writing the same file removes it once
// abandoned, and leaves one a running build may still be writing.
func TestKilledFileWritesAreSwept(t *testing.T) {
	dir := t.TempDir()
	writeOneFileRecipe(t, dir)
	sboms := filepath.Join(dir, "sboms")
	if err := os.Mkdir(sboms, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	var stale []string
	for _, p := range []string{
		filepath.Join(dir, ".out.record.json.new-killed"),
		filepath.Join(dir, ".meta.json.new-killed"),
		filepath.Join(sboms, ".app_linux-amd64.sbom.spdx.json.new-killed"),
	} {
		writeFile(t, p, "half a file")
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		stale = append(stale, p)
	}
	running := filepath.Join(dir, ".out.record.json.new-running")
	writeFile(t, running, "being written")
	mustPallet(t, "build", "-q", "-f", filepath.Join(dir, "pallet.yaml"), "-o", "oci:"+filepath.Join(dir, "out"),
		"--metadata-file", filepath.Join(dir, "meta.json"), "--sbom=spdx", "--sbom-dir", sboms)
	for _, p := range stale {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if _, err := os.Lstat(running); err != nil {
		t.Errorf("a temporary a running build may own was removed: %v", err)
	}
}

// writeOneFileRecipe writes dir/pallet.yaml, a recipe of the least that
// writes an output: a local file placed in /etc/ of an image on scratch.
func writeOneFileRecipe(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "file.txt"), "data\n")
	writeFile(t, filepath.Join(dir, "pallet.yaml"), `version: 1
artifacts:
  file:
    local: {path: file.txt}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64]
    files:
      - {artifact: file, dest: /etc/}
`)
}
