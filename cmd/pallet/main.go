// Command pallet builds container images from artifacts, for Linux and
// Windows, without a daemon. The commands are thin: each parses flags and
// hands over to the internal packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/memlimit"
	"github.com/pallet-dev/pallet/internal/progress"
)

func main() {
	memlimit.Start()
	stopProfiles := startProfiles()
	ctx, stop := interruptible(context.Background(), stopGrace, os.Exit)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	code := exit(ctx, err, os.Stderr)
	stopProfiles()
	os.Exit(code)
}

// run executes one pallet command line; tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:           "pallet",
		Short:         "Build container images from artifacts, for Linux and Windows, without a daemon",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(buildCmd(), fetchCmd(), lockCmd(), inspectCmd(), schemaCmd(), versionCmd(), sbomCmd(), authCmd(), indexCmd())
	registerInsecure(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

// interrupted is the cause of the command's cancellation by a signal.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return i.sig.String() + " received" }

// stopGrace is how long a command may take to stop after a signal
// before the process exits without it.
const stopGrace = 10 * time.Second

// interruptible returns a context cancelled, with an interrupted cause,
// at the first SIGINT or SIGTERM. The signals then get their default
// action back, so a second Ctrl-C stops a command whose cleanup hangs;
// and a command that has not stopped grace after the first signal (a
// system call no cancellation reaches) is ended by exit with the
// signal's status, as one signal must do for timeout(1) and CI jobs.
// Everything pallet writes is whole at every moment, as for a kill.
func interruptible(parent context.Context, grace time.Duration, exit func(int)) (context.Context, func()) {
	last := &lastWord{}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, lastWordKey{}, last))
	ch := make(chan os.Signal, 1)
	stopped := make(chan struct{})
	// done is held by whichever ends the process: the command, returning
	// (stop), or the grace running out; never both.
	var done sync.Mutex
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			sig, _ := s.(syscall.Signal)
			cancel(interrupted{sig})
			select {
			case <-time.After(grace):
				if done.TryLock() {
					last.tell(fmt.Sprintf("%s; not stopped %s later, exiting", interrupted{sig}, grace))
					exit(128 + int(sig))
					done.Unlock() // an exit that returns (a test's)
				}
			case <-stopped:
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		done.Lock() // after a grace exit began, this waits for it
		signal.Stop(ch)
		cancel(nil)
		close(stopped)
	}
}

// lastWord is how a process ended after the grace says why: on stderr,
// or through the command's progress reporter, so that a --progress json
// stream gets an error event rather than a line of text.
type lastWord struct {
	mu  sync.Mutex
	say func(msg string)
}

type lastWordKey struct{}

func (w *lastWord) tell(msg string) {
	w.mu.Lock()
	say := w.say
	w.mu.Unlock()
	if say == nil {
		fmt.Fprintln(os.Stderr, "pallet:", msg)
		return
	}
	say(msg)
}

// reportExitThrough makes prog the reporter of a grace exit of the
// command running under ctx (see interruptible).
func reportExitThrough(ctx context.Context, prog progress.Reporter, stderr io.Writer) {
	w, ok := ctx.Value(lastWordKey{}).(*lastWord)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.say = func(msg string) {
		var f progress.Failure
		if errors.As(prog.Fail(errors.New(msg)), &f) {
			f.Report(msg)
			return
		}
		fmt.Fprintln(stderr, "pallet:", msg)
	}
}

// exitStatus maps a command's outcome to the process's exit code and the
// one line that reports it ("" for success). After a signal, whatever
// error the cancelled work returned (context.Canceled, a killed
// compiler) is the signal's doing: 128+signal (130 for Ctrl-C), as shells
// report it. A context.Canceled without a signal is a failure like any.
func exitStatus(ctx context.Context, err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	var sig interrupted
	if errors.As(context.Cause(ctx), &sig) {
		if sig.sig == syscall.SIGTERM {
			return 128 + int(sig.sig), "terminated"
		}
		return 128 + int(sig.sig), "interrupted"
	}
	return 1, err.Error()
}

// exit reports err, if any, and returns the exit code: through the
// progress reporter when it claimed the error (a JSON stream gets an
// error event, never plain text), else as "pallet: ..." on stderr.
func exit(ctx context.Context, err error, stderr io.Writer) int {
	code, msg := exitStatus(ctx, err)
	if msg == "" {
		return code
	}
	var f progress.Failure
	if errors.As(err, &f) {
		f.Report(msg)
	} else {
		fmt.Fprintln(stderr, "pallet:", msg)
	}
	return code
}

// fileArgs refuses the arguments of a command that reads its recipe from
// -f, saying so: cobra's "unknown command" would send a user who wrote
// `pallet build pallet.yaml` (as docker build takes its context), or
// `--sbom none` (a value of an optional-value flag needs =), looking for
// a subcommand.
func fileArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if f := cmd.Flags().Lookup("sbom"); f != nil && f.Changed {
		switch args[0] {
		case "spdx", "cyclonedx", "none", "spdx,cyclonedx", "cyclonedx,spdx":
			return fmt.Errorf("%s takes no arguments, and got %q: a value of --sbom follows = (--sbom=%s)", cmd.CommandPath(), args[0], args[0])
		}
	}
	return fmt.Errorf("%s takes no arguments, and got %q: name the file to read with -f FILE", cmd.CommandPath(), args[0])
}
