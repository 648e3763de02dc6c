//go:build unix && !linux

package artifact

import "syscall"

// dieWithPallet: only Linux can tie a child's life to its parent's.
func dieWithPallet(*syscall.SysProcAttr) {}
