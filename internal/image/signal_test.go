package image

import (
	"strings"
	"testing"
)

// The stop signals accepted are those moby's signal.ParseSignal takes,
// which BuildKit checks STOPSIGNAL with and runtimes read when they stop
// a container.
func TestCheckStopSignal(t *testing.T) {
	for _, tc := range []struct {
		sig, os string
		ok      bool
	}{
		{"SIGTERM", "linux", true},
		{"term", "linux", true},
		{"sigkill", "windows", true},
		{"9", "linux", true},
		{"-5", "linux", true}, // Atoi takes it, and so does ParseSignal
		{"SIGRTMIN+3", "linux", true},
		{"RTMAX-14", "linux", true},
		{"RTMAX", "linux", true},
		{"SIGRTMIN+3", "windows", false},
		{"SIGRTMIN+16", "linux", false},
		{"RTMAX-15", "linux", false},
		{"RTMIN+03", "linux", false},
		{"0", "linux", false},
		{"SIGFOO", "linux", false},
		{"", "linux", false},
		{"SIG", "linux", false},
		{"SIGTERM ", "linux", false},
	} {
		err := CheckStopSignal(tc.sig, tc.os)
		if (err == nil) != tc.ok {
			t.Errorf("CheckStopSignal(%q, %s) = %v, want ok %v", tc.sig, tc.os, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "stop signal") {
			t.Errorf("error %q does not say what it refuses", err)
		}
	}
}
