//go:build pallet_profile

package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"time"
)

// startProfiles writes a CPU profile to $PALLET_CPUPROFILE, an
// execution trace to $PALLET_TRACE and the heap at its peak to
// $PALLET_MEMPROFILE, for a pallet built with
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
	if p := os.Getenv("PALLET_MEMPROFILE"); p != "" {
		stops = append(stops, peakHeapProfile(p))
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// peakHeapProfile writes to path, when the returned function is called,
// the heap profile taken when the live heap was largest, as sampled every
// 50 ms (within a tenth): what a build holds at its peak, which a profile at exit, after
// the build let go of it, does not show.
func peakHeapProfile(path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	var best bytes.Buffer
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			// A profile a tenth larger than the last one kept: writing
			// one at each sample of a growing heap would weigh on the
			// run it measures.
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak+peak/10 {
				peak = v
				best.Reset()
				_ = pprof.Lookup("heap").WriteTo(&best, 0)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		if err := os.WriteFile(path, best.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "PALLET_MEMPROFILE: %v\n", err)
		}
	}
}
