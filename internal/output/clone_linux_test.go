package output

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// docker:- refuses a terminal, as `docker save` does, and takes a file.
func TestDockerStdoutRefusesTerminal(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open the terminal: %v", err)
	}
	defer tty.Close()
	if _, err := Parse("docker:-", Options{Stdout: tty}); err == nil || !strings.Contains(err.Error(), "terminal") {
		t.Errorf("docker:- to a terminal: %v", err)
	}
	f, err := os.Create(t.TempDir() + "/out.tar")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Parse("docker:-", Options{Stdout: f}); err != nil {
		t.Errorf("docker:- to a file: %v", err)
	}
}
