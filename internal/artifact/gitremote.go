package artifact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// maxGitOutput bounds what pallet keeps of a remote git command's
// output: ls-remote of one tag is two lines, and a fetch prints nothing
// on stdout. A server that answers with more is refused, not buffered.
const maxGitOutput = 1 << 20

// watchEvery is how often remoteGit measures a fetch's repository, at
// most (watchInterval).
const watchEvery = 200 * time.Millisecond

// watchInterval is how long remoteGit waits before it walks a fetch's
// repository again, the last walk having taken took: watchEvery, or 20
// times the walk, so that the walks take at most a twentieth of a core.
// A fetch over the dumb protocol writes each object as a file of its
// own: 60,000 of them, walked every 200 ms, cost pallet 50 s of CPU
// beside git's 60 s. Never more than a quarter of the stall bound, which
// what a walk sees growing keeps off.
func watchInterval(took, stall time.Duration) time.Duration {
	return max(watchEvery, min(20*took, stall/4))
}

// errGitTimeout ends git work that took longer than its DownloadTimeout
// (gitBound), which then fails with a *gitTimeoutError.
var errGitTimeout = errors.New("git took too long")

// gitTimeoutError is the error of git work ended by errGitTimeout: what
// it had done by then.
type gitTimeoutError struct{ msg string }

func (e *gitTimeoutError) Error() string { return e.msg }

// gitBound is the one time bound of a pinned commit's git work: its
// fetch, the full fetch a refused one falls back to, its tag lookup and
// its checkout, or a mirror's clone or update and its checks. Each
// command bounded on its own let a fetch that failed late hand the full
// fetch a fresh bound, and the tag lookup another: one artifact took
// several times limits.download-timeout.
type gitBound struct {
	// what names the work in messages: the repository and commit, or
	// empty for a lone command (pallet lock's tag lookup).
	what string
	// outer is the context the bound was put on: its end is the
	// caller's (an interrupt), not the bound's.
	outer   context.Context
	start   time.Time
	timeout time.Duration
}

type gitBoundKey struct{}

// boundGit holds the git work done with the returned context to lim's
// DownloadTimeout in all, from now, for the commit g; a context already
// so held keeps its bound (a mirror's checkout is the same commit's
// work as its clone). end turns the error of that work, when the bound
// ran out, into a *gitTimeoutError naming g, which a command already
// ended by it (remoteGit) has; the error of a nested call is returned
// as it is, for the bound's owner to say.
func boundGit(ctx context.Context, lim Limits, g gitRef) (bounded context.Context, end func(error) error) {
	if _, ok := ctx.Value(gitBoundKey{}).(*gitBound); ok {
		return ctx, func(err error) error { return err }
	}
	b := &gitBound{what: ShownURL(g.Repo) + " at " + g.Commit, outer: ctx, start: time.Now(), timeout: lim.timeout()}
	bounded, stop := context.WithTimeoutCause(context.WithValue(ctx, gitBoundKey{}, b), b.timeout, errGitTimeout)
	return bounded, func(err error) error {
		defer stop()
		return sayTimeout(bounded, err)
	}
}

// sayTimeout is err, the error of git work done with ctx, as a
// *gitTimeoutError naming the work when the bound ctx holds ran out: a
// local command (a checkout, a check of the objects) killed at the
// deadline says only that it was killed. The bound's owner says it
// (boundGit's end), and so does a shared fetch (gitShare.objects) for
// the platforms that waited on it, whose own bounds had not run out.
func sayTimeout(ctx context.Context, err error) error {
	b, _ := ctx.Value(gitBoundKey{}).(*gitBound)
	if b == nil || err == nil || errors.As(err, new(*gitTimeoutError)) || !b.ranOut(ctx) {
		return err
	}
	return blame("repo", &gitTimeoutError{fmt.Sprintf("%s: %v", b.gaveUp(), err)})
}

// ranOut says whether ctx, under b, ended for b's deadline.
func (b *gitBound) ranOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errGitTimeout) && b.outer.Err() == nil
}

// gaveUp says when and why the work under b was given up.
func (b *gitBound) gaveUp() string {
	took := time.Since(b.start).Round(time.Millisecond)
	if b.what == "" {
		return fmt.Sprintf("gave up after %s, over the %s one transfer may take (limits.download-timeout, --download-timeout)", took, b.timeout)
	}
	return fmt.Sprintf("gave up after %s, over the %s the git work of %s may take in all (limits.download-timeout, --download-timeout)", took, b.timeout, b.what)
}

// errGitOutput stops a command whose output passed maxGitOutput.
var errGitOutput = errors.New("git printed more than it should")

// remoteGit runs git in dir for a command that talks to a remote, held
// to the download limits, whatever the transport (git's own low-speed
// limit covers http(s) alone; ssh and git:// have none):
//   - a command that neither writes on stderr (the progress a fetch is
//     told to print) nor adds to watch for a whole Stall is stalled,
//     and ended;
//   - watch, when set, is the repository the command writes into: what
//     it adds is the transfer's size, held to MaxBytes as it grows and
//     once it is done;
//   - a command that runs past the bound of the git work it is part of
//     (boundGit), or, alone, takes longer than DownloadTimeout in all,
//     however it keeps moving, is ended (errGitTimeout).
func remoteGit(ctx context.Context, all Limits, dir, watch string, args ...string) (string, error) {
	lim := all.Limits.WithDefaults()
	tooLarge := fmt.Errorf("more than %d bytes (limits.download, --max-download): %w", lim.MaxBytes, errFetchTooLarge)
	// The watchdog holds the command to a sign of life each Stall, and
	// git's low-speed limit http(s) to MinRate: a peer trickling just
	// above both would hold the build for as long as the size limit
	// takes at its pace.
	bound, _ := ctx.Value(gitBoundKey{}).(*gitBound)
	if bound == nil {
		bound = &gitBound{outer: ctx, start: time.Now(), timeout: all.timeout()}
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, bound.timeout, errGitTimeout)
		defer stop()
	}
	// No rate here: a sign of progress is not a count of bytes, and git's
	// own low-speed limit holds http(s) to MinRate. Each counts as one
	// byte, so a Stall without one is a stall.
	wctx, dog, cancel := transfer.Watch(ctx, lim.Stall, 0)
	defer cancel(nil)
	defer dog.Stop()
	kick := func() { dog.Moved(1) }
	// What is already there (a mirror updated) is not this transfer's.
	var before int64
	if watch != "" {
		before = dirSize(watch)
	}
	done := make(chan struct{})
	watched := make(chan struct{})
	if watch == "" {
		close(watched)
	} else {
		go func() {
			defer close(watched)
			t := time.NewTimer(watchEvery)
			defer t.Stop()
			last := before
			for {
				select {
				case <-done:
					return
				case <-wctx.Done():
					return
				case <-t.C:
					start := time.Now()
					n := dirSize(watch)
					if n-before > lim.MaxBytes {
						cancel(tooLarge)
						return
					}
					if n != last {
						kick()
						last = n
					}
					t.Reset(watchInterval(time.Since(start), lim.Stall))
				}
			}
		}()
	}
	full := append([]string{"-c", "http.lowSpeedLimit=" + strconv.FormatInt(lim.MinRate, 10), "-c", "http.lowSpeedTime=" + strconv.Itoa(max(1, int(lim.Stall.Seconds())))}, args...)
	cmd := gitCommand(wctx, dir, full...)
	stdout := &boundedBuffer{max: maxGitOutput, cancel: cancel}
	stderr := &gitStderr{kick: kick}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := bounded.Answered(cmd, cmd.Run())
	close(done)
	<-watched
	cause := context.Cause(wctx)
	switch {
	case cause == tooLarge:
		return "", tooLarge
	case errors.Is(cause, errGitOutput):
		return "", fmt.Errorf("git %s: %w (over %d bytes)", args[0], errGitOutput, maxGitOutput)
	case bound.ranOut(wctx):
		got := fmt.Sprintf("%d bytes of answer received", stdout.Len())
		if watch != "" {
			got = fmt.Sprintf("%d bytes written into the repository", max(0, dirSize(watch)-before))
		}
		return "", &gitTimeoutError{fmt.Sprintf("git %s: %s: %s", args[0], bound.gaveUp(), got)}
	case transfer.StallOf(wctx) != nil:
		return "", fmt.Errorf("git %s: nothing received for %s (limits.stall): %w", args[0], lim.Stall, transfer.StallOf(wctx))
	case err != nil:
		return "", fmt.Errorf("git %s: %w%s", shellJoin(shownArgs(args)), err, Saying(stderr.last()))
	case watch != "" && dirSize(watch)-before > lim.MaxBytes:
		return "", tooLarge
	}
	return strings.TrimSpace(stdout.String()), nil
}

// boundedBuffer keeps up to max bytes, and cancels the command that
// writes more.
type boundedBuffer struct {
	bytes.Buffer
	max    int
	cancel context.CancelCauseFunc
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.cancel(errGitOutput)
		return 0, errGitOutput
	}
	return b.Buffer.Write(p)
}

// gitStderr kicks the watchdog on every write, and keeps the end of what
// was written for the error message.
type gitStderr struct {
	mu   sync.Mutex
	tail []byte
	kick func()
}

const gitStderrTail = 16 << 10

func (g *gitStderr) Write(p []byte) (int, error) {
	g.kick()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tail = append(g.tail, p...)
	if len(g.tail) > 2*gitStderrTail {
		g.tail = append(g.tail[:0], g.tail[len(g.tail)-gitStderrTail:]...)
	}
	return len(p), nil
}

// gitProgress matches the progress lines a fetch prints, which say
// nothing about why it failed.
var gitProgress = lazyre.New(`^(remote: )?(Enumerating|Counting|Compressing|Receiving|Resolving|Unpacking|Total|Finding|Checking)\b`)

// last is the end of stderr without its progress lines: git's reason.
func (g *gitStderr) last() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var keep []string
	for _, line := range strings.FieldsFunc(string(g.tail), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if line = strings.TrimSpace(line); line != "" && !gitProgress().MatchString(line) {
			keep = append(keep, line)
		}
	}
	if len(keep) > 8 {
		keep = keep[len(keep)-8:]
	}
	return strings.Join(keep, "\n")
}
