package artifact

import "syscall"

// dieWithPallet has the kernel kill the tool when pallet dies (kill -9,
// OOM), which no cancellation reaches: a go build left running would
// hold the CPU and the module and build caches while the next build
// runs. The tool's own children (compile, link) are not reached; each
// ends with its one step.
//
// The signal goes when the thread that started the tool ends, not only
// the process; the Go runtime ends a thread only under a goroutine that
// locked it and returns locked, which pallet and its libraries do not do.
func dieWithPallet(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
