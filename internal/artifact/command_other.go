//go:build !unix

package artifact

import "os/exec"

// Elsewhere only the process started is stopped (exec's default).
func stopGroupOnCancel(*exec.Cmd) {}
