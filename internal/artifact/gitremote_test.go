package artifact_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/fixture"
)

// gitDaemon serves the repositories under base over git:// on loopback.
func gitDaemon(t *testing.T, base string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("git", "daemon", "--export-all", "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), "--base-path="+base, base)
	if err := cmd.Start(); err != nil {
		t.Skipf("git daemon: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not start: %v", err)
		}
	}
	return fmt.Sprintf("git://127.0.0.1:%d", port)
}

// A server that accepts and then says nothing: git has no low-speed
// limit over git:// or ssh, so pallet's own stall bound ends the fetch,
// and the tag lookup, instead of the build waiting for ever.
func TestGitStalledServer(t *testing.T) {
	repo := silentServer(t)
	commit := strings.Repeat("a", 40)
	f := fetcher(t)
	f.Limits.Stall = time.Second
	start := time.Now()
	_, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "nothing received for 1s (limits.stall)") {
		t.Errorf("fetch from a silent server: %v", err)
	}
	// Once: a stalled server is not asked again for everything.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stalled fetch took %s", took)
	}
	if _, err := f.ResolveTag(context.Background(), repo, "v1.0.0"); err == nil || !strings.Contains(err.Error(), "nothing received for 1s") {
		t.Errorf("tag from a silent server: %v", err)
	}
}

// Over git://, with the progress git is told to print, a fetch, a tag
// lookup and a mirror work as they do over a path.
func TestGitDaemon(t *testing.T) {
	repo, commit := filesRepo(t)
	url := gitDaemon(t, filepath.Dir(repo)) + "/" + filepath.Base(repo)
	f := fetcher(t)
	f.Limits.Stall = 5 * time.Second
	res, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: url, Commit: commit, Tag: "v1.0.0", Path: "hack"}), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Tree); !strings.Contains(strings.Join(got, " "), "windows/Install-OVS.ps1") {
		t.Errorf("fetched %v", got)
	}
	if got, err := f.ResolveTag(context.Background(), url, "v1.0.0"); err != nil || got != commit {
		t.Errorf("tag: %s, %v; want %s", got, err, commit)
	}
	mirror := t.TempDir()
	req := filesRequest(t, &artifact.GitFiles{Repo: url, Commit: commit, Path: "hack"})
	for range 2 { // cloned, then updated
		if err := f.MirrorTo(context.Background(), mirror, []*artifact.Request{req}); err != nil {
			t.Fatal(err)
		}
	}
}

// trickle forwards TCP connections to target, holding what target sends
// back to chunk bytes every tick: a peer slow enough to take many
// seconds over a repository, yet always moving.
func trickle(t *testing.T, target string, chunk int, tick time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { io.Copy(s, c); s.(*net.TCPConn).CloseWrite() }()
				buf := make([]byte, chunk)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
					select {
					case <-done:
						return
					case <-time.After(tick):
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// A git peer that keeps sending, too fast for the stall bound to end it
// but too slowly to be done within the download timeout, is given up
// at the timeout, fetching or cloning a mirror, naming the repository,
// the time taken and the bytes received; a fetch given up is not tried
// again as a full fetch. Without the bound, the fetch would go on for
// as long as the trickle takes (tens of seconds here, hours for a
// repository at 1 KiB/s).
func TestGitTimeoutBoundsATrickle(t *testing.T) {
	repo, _ := filesRepo(t)
	// Incompressible, so the pack is as large as the file: 2 MiB at
	// ~50 KiB/s takes 40 s.
	noise := make([]byte, 2<<20)
	rand.Read(noise)
	if err := os.WriteFile(filepath.Join(repo, "noise"), noise, 0o644); err != nil {
		t.Fatal(err)
	}
	fixture.Git(t, repo, "add", "noise")
	fixture.Git(t, repo, "commit", "-q", "-m", "noise")
	commit := fixture.Git(t, repo, "rev-parse", "HEAD")
	daemon := strings.TrimPrefix(gitDaemon(t, filepath.Dir(repo)), "git://")
	url := "git://" + trickle(t, daemon, 512, 10*time.Millisecond) + "/" + filepath.Base(repo)

	f := fetcher(t)
	f.Limits.Stall = time.Minute // the trickle never stalls: the timeout alone can end it
	f.Limits.DownloadTimeout = time.Second
	want := "over the 1s the git work of " + url + " at " + commit + " may take in all (limits.download-timeout, --download-timeout)"
	start := time.Now()
	_, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: url, Commit: commit, Path: "hack"}), t.TempDir())
	took := time.Since(start)
	var fe *artifact.FieldError
	if err == nil || !errors.As(err, &fe) || fe.Field != "repo" || !strings.Contains(err.Error(), "fetch "+url+": git fetch: gave up after 1") ||
		!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "bytes written into the repository") {
		t.Errorf("fetch through a trickle: %v, want a FieldError of repo, %q", err, want)
	}
	// Once, not again as a full fetch.
	if took > 8*time.Second {
		t.Errorf("the fetch through a trickle took %s", took)
	}

	start = time.Now()
	err = f.MirrorTo(context.Background(), t.TempDir(), []*artifact.Request{filesRequest(t, &artifact.GitFiles{Repo: url, Commit: commit, Path: "hack"})})
	if err == nil || !strings.Contains(err.Error(), "clone "+url+": git clone: gave up after 1") || !strings.Contains(err.Error(), want) {
		t.Errorf("mirror through a trickle: %v", err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the mirror through a trickle took %s", took)
	}

	// A tag lookup is a transfer too: one the peer never answers, which
	// only the stall bound would end (after a minute here).
	want = "over the 1s one transfer may take (limits.download-timeout, --download-timeout)"
	silent := silentServer(t)
	start = time.Now()
	if _, err := f.ResolveTag(context.Background(), silent, "v1.0.0"); err == nil ||
		!strings.Contains(err.Error(), "ask "+silent+" for tag v1.0.0: git ls-remote: gave up after 1") || !strings.Contains(err.Error(), want) {
		t.Errorf("tag from a silent server: %v", err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the tag lookup from a silent server took %s", took)
	}
}

// The time bound is the commit's git work's in all, not each command's:
// a fetch of the commit alone that a server refuses late (a dumb-http
// one, after its list of refs has trickled in for most of the bound)
// leaves the full fetch it falls back to what is left of the bound, not
// a bound of its own, and the error names the repository and commit.
// With a bound per command, each fetch, alone within it, succeeded, and
// the artifact took nearly twice the bound.
func TestGitTimeoutBoundsTheFallbackToo(t *testing.T) {
	repo, commit := filesRepo(t)
	bare := filepath.Join(t.TempDir(), "files.git")
	fixture.Git(t, repo, "clone", "-q", "--bare", repo, bare)
	// 1,500 refs: an info/refs of some 90 KB, which the trickle below
	// takes some 2 s to send each time it is asked for; the full fetch
	// takes under 3 s, within the 4 s bound alone, but not after the
	// first.
	var refs strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&refs, "create refs/tags/pad-%05d %s\n", i, commit)
	}
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Dir, cmd.Stdin = bare, strings.NewReader(refs.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git update-ref: %v\n%s", err, out)
	}
	fixture.Git(t, bare, "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(bare)))
	t.Cleanup(srv.Close)
	url := "http://" + trickle(t, strings.TrimPrefix(srv.URL, "http://"), 512, 10*time.Millisecond)

	f := fetcher(t)
	f.Limits.Stall = time.Minute
	f.Limits.DownloadTimeout = 4 * time.Second
	start := time.Now()
	_, err := f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: url, Commit: commit, Path: "hack"}), t.TempDir())
	var fe *artifact.FieldError
	if err == nil || !errors.As(err, &fe) || fe.Field != "repo" || !strings.Contains(err.Error(), "fetch "+url+": git fetch: gave up after 4") ||
		!strings.Contains(err.Error(), "over the 4s the git work of "+url+" at "+commit+" may take in all") {
		t.Errorf("fetch falling back to a full fetch through a trickle: %v, want it given up 4s after the first fetch began", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the fetch took %s", took)
	}
}

// silentServer is a git:// repository whose server accepts and then
// says nothing.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "git://" + l.Addr().String() + "/repo.git"
}
