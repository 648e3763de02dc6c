package main

import (
	"archive/tar"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A Dockerfile of many COPY --exclude over a context with a .dockerignore,
// built for two platforms with --jobs 8: the ignore file's patterns and
// each COPY's are shared by walks that run at once (run with -race), and
// every image holds what BuildKit's would. An --exclude naming an ARG is
// matched as written, as BuildKit's Expand leaves it.
func TestDockerfileExcludeSharedAcrossJobs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".dockerignore"), "**/*.tmp\n**/secret*\n!**/secret-ok\n")
	var df strings.Builder
	df.WriteString("FROM --platform=$TARGETPLATFORM scratch\nARG SKIP=keep.txt\n")
	const n = 12
	for i := range n {
		for _, f := range []string{"keep.txt", "drop.log", "x.tmp", "sub/a.log", "sub/b.txt", "$SKIP", "secret-ok", "secret-no"} {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d", i), f), f+"\n")
		}
		fmt.Fprintf(&df, "COPY --exclude=*.log --exclude=sub/*.log --exclude=$SKIP d%d/ /d%d/\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "Dockerfile"), df.String())
	out := filepath.Join(t.TempDir(), "o")
	mustPallet(t, "build", "-q", "--no-cache", "--jobs", "8", "--platform", "linux/amd64,linux/arm64", "-f", filepath.Join(dir, "Dockerfile"), "-o", "oci:"+out)
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		var got []string
		walkImage(t, layoutImage(t, out, p), func(h *tar.Header, _ io.Reader) {
			if h.Typeflag == tar.TypeReg {
				got = append(got, h.Name)
			}
		})
		slices.Sort(got)
		var want []string
		for i := range n {
			// $SKIP is a file named so: the pattern is not expanded, and
			// keep.txt, which SKIP names, stays.
			for _, f := range []string{"keep.txt", "sub/b.txt", "secret-ok"} {
				want = append(want, fmt.Sprintf("d%d/%s", i, f))
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: files %q, want %q", p, got, want)
		}
	}
}
