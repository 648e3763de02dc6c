// Command antctl stands in for Antrea's antctl in pallet's Windows example:
// a Go program cross-compiled with GOOS=windows.
package main

import (
	"fmt"
	"runtime"

	"example.com/antrea/version"
)

func main() {
	fmt.Printf("antctl %s (%s/%s)\n", version.Version, runtime.GOOS, runtime.GOARCH)
}
