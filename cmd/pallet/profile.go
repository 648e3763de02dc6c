//go:build pallet_profile

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiles writes a CPU profile to $PALLET_CPUPROFILE and an
// execution trace to $PALLET_TRACE, for a pallet built with
// -tags pallet_profile: a command's whole run, startup to exit, as the
// bench times it, which go test -cpuprofile does not cover. The returned
// function stops them.
func startProfiles() (stop func()) {
	var stops []func()
	if p := os.Getenv("PALLET_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "PALLET_CPUPROFILE: %v\n", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if p := os.Getenv("PALLET_TRACE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "PALLET_TRACE: %v\n", err)
		} else {
			stops = append(stops, func() { trace.Stop(); f.Close() })
		}
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
