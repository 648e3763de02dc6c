package image

import (
	"fmt"
	"strconv"
	"strings"
)

// CheckStopSignal refuses a stop signal that the runtime of an image for
// os cannot parse. containerd and Docker read it with moby's
// signal.ParseSignal when the container is stopped, and a name they do
// not know fails the stop itself, long after the build. BuildKit refuses
// such a STOPSIGNAL when it builds, with the same function; this is its
// table: a number other than 0, or a name with or without SIG in any
// case. The real-time names are Linux's; the Windows table lacks them.
func CheckStopSignal(sig, os string) error {
	if n, err := strconv.Atoi(sig); err == nil {
		if n == 0 {
			return fmt.Errorf("stop signal %q: 0 is no signal", sig)
		}
		return nil
	}
	name := strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	if signalNames[name] {
		return nil
	}
	if os != "windows" && realTimeSignal(name) {
		return nil
	}
	return fmt.Errorf("stop signal %q is no signal the runtime knows: give a name such as SIGTERM (%s), or a number", sig, os)
}

// signalNames are the names moby's signal table has on Linux and, for
// Linux containers, on Windows.
var signalNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields("ABRT ALRM BUS CHLD CLD CONT FPE HUP ILL INT IO IOT KILL PIPE POLL PROF PWR QUIT SEGV STKFLT STOP SYS TERM TRAP TSTP TTIN TTOU URG USR1 USR2 VTALRM WINCH XCPU XFSZ") {
		m[n] = true
	}
	return m
}()

// realTimeSignal says whether name is in moby's Linux table of real-time
// signals: RTMIN, RTMIN+1 to RTMIN+15, RTMAX-14 to RTMAX-1, RTMAX.
func realTimeSignal(name string) bool {
	if name == "RTMIN" || name == "RTMAX" {
		return true
	}
	for _, p := range []string{"RTMIN+", "RTMAX-"} {
		if d, ok := strings.CutPrefix(name, p); ok {
			n, err := strconv.Atoi(d)
			return err == nil && strconv.Itoa(n) == d && ((p == "RTMIN+" && n >= 1 && n <= 15) || (p == "RTMAX-" && n >= 1 && n <= 14))
		}
	}
	return false
}
