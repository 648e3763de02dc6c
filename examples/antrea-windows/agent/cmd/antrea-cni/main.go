// Command antrea-cni stands in for Antrea's antrea-cni in pallet's Windows example:
// a Go program cross-compiled with GOOS=windows.
package main

import (
	"fmt"
	"runtime"

	"example.com/antrea/version"
)

func main() {
	fmt.Printf("antrea-cni %s (%s/%s)\n", version.Version, runtime.GOOS, runtime.GOARCH)
}
