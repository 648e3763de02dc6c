// Command hello is the program of pallet's bundled example: it says which
// platform it was built for, so a test can tell the right binary ran.
package main

import (
	"fmt"
	"os"
	"runtime"
)

var version = "dev"

func main() {
	greet := "hello from pallet"
	if len(os.Args) > 1 {
		greet = "hello, " + os.Args[1]
	}
	fmt.Printf("%s (%s, %s/%s)\n", greet, version, runtime.GOOS, runtime.GOARCH)
}
