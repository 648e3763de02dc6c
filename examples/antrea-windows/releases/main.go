// Command releases serves stand-ins for the upstream archives that the
// Antrea Windows example downloads (the CNI plugins and Open vSwitch), on
// loopback, so the example builds with no internet:
//
//	go run ./examples/antrea-windows/releases &
//	go run ./cmd/pallet build -f examples/antrea-windows/pallet.yaml
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/pallet-dev/pallet/internal/fixture"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:8765", "address to serve on")
	flag.Parse()
	files := fixture.AntreaReleases()
	for p, b := range files {
		log.Printf("http://%s%s  sha256 %s", *addr, p, fixture.SHA256(b))
	}
	log.Fatal(http.ListenAndServe(*addr, fixture.Handler(files)))
}
