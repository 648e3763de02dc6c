// Command upstream stands up stand-ins for what kind's base image is built
// from, so the kind-base example builds with no internet: git repositories
// of containerd, runc, cri-tools and the CNI plugins (small Go programs
// with a LICENSE, depending on the stand-in modules of ../modules, which
// each repository carries under third_party/), a Debian-like base image as an OCI layout, and a
// release server on loopback. Commits and archives are reproducible, so
// the example recipe pins them like the real ones.
//
//	go run ./examples/kind-base/upstream -dir /tmp/kind-upstream &
//	go run ./cmd/pallet build -f examples/kind-base/pallet.yaml
package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sort"

	"github.com/pallet-dev/pallet/internal/fixture"
)

func main() {
	dir := flag.String("dir", "/tmp/kind-upstream", "where to write the repositories and the base layout")
	modules := flag.String("modules", "examples/kind-base/modules", "the stand-in modules the repositories carry under third_party/")
	addr := flag.String("listen", "127.0.0.1:8766", "address to serve releases on (empty: do not serve)")
	flag.Parse()

	if err := os.RemoveAll(*dir); err != nil {
		log.Fatal(err)
	}
	commits, err := fixture.WriteKindRepos(filepath.Join(*dir, "git"), *modules)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range fixture.KindRepos {
		log.Printf("git %s  %s  commit %s", filepath.Join(*dir, "git", r.Name), r.Tag, commits[r.Name])
	}
	if err := fixture.WriteDebianBase(filepath.Join(*dir, "base")); err != nil {
		log.Fatal(err)
	}
	log.Printf("base oci:%s:bookworm", filepath.Join(*dir, "base"))

	files := fixture.KindReleases()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		log.Printf("release %s  sha256 %s", p, fixture.SHA256(files[p]))
	}
	if *addr == "" {
		return
	}
	log.Printf("serving releases on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, fixture.Handler(files)))
}
