package artifact

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCommandProcess is a pallet that starts a tool and is then killed,
// for TestToolDiesWithPallet; it runs only when that test starts it.
func TestCommandProcess(t *testing.T) {
	if os.Getenv("PALLET_TEST_COMMAND") == "" {
		t.Skip("started by TestToolDiesWithPallet")
	}
	cmd := Command(context.Background(), "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(cmd.Process.Pid)
	cmd.Wait()
}

// A tool (go build, git) does not outlive a pallet killed with SIGKILL,
// which no cancellation reaches: it would run on beside the next build.
func TestToolDiesWithPallet(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestCommandProcess$")
	parent.Env = append(os.Environ(), "PALLET_TEST_COMMAND=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		parent.Process.Kill()
		t.Fatalf("the process did not start its tool: %q %v", line, err)
	}
	// Killed after the test only while it still runs: once it ended, its
	// pid may be another process's.
	ended := false
	t.Cleanup(func() {
		if !ended {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the tool (pid %d) still runs 5s after pallet was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ended = true
}

// alive says whether pid runs: a zombie (killed, not reaped by an init
// that does not reap) does not.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's parenthesis: "pid (comm) S ...".
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
