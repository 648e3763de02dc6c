package artifact_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
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
	repo := "git://" + l.Addr().String() + "/repo.git"
	commit := strings.Repeat("a", 40)
	f := fetcher(t)
	f.Limits.Stall = time.Second
	start := time.Now()
	_, err = f.Fetch(context.Background(), filesRequest(t, &artifact.GitFiles{Repo: repo, Commit: commit, Path: "hack"}), t.TempDir())
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
