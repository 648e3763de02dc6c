package build

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pallet-dev/pallet/internal/fixture"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/progress"
)

// steps keeps the artifact steps a build ended, with their notes.
type steps struct {
	progress.Reporter
	mu    sync.Mutex
	ended []string
}

func (s *steps) Start(name string) func(string, error) {
	end := s.Reporter.Start(name)
	return func(note string, err error) {
		if strings.HasPrefix(name, "artifact ") {
			s.mu.Lock()
			s.ended = append(s.ended, fmt.Sprintf("%s [%s]", name, note))
			s.mu.Unlock()
		}
		end(note, err)
	}
}

// sharedRecipe writes, under dir, a recipe placing a local archive and a
// downloaded one on two platforms, and the archive; srv serves the
// download.
func sharedRecipe(t *testing.T, dir string, srv *fixture.Server, archive []byte) {
	writeFiles(t, dir, map[string]string{
		"tools.tar.gz": string(archive),
		"pallet.yaml": `version: 1
artifacts:
  tools:
    local:
      path: tools.tar.gz
      extract: {}
    licenses: none
  fetched:
    url:
      url: ` + srv.URL + `/fetched.tar.gz
      sha256: ` + fixture.SHA256(archive) + `
      extract: {}
    licenses: none
images:
  app:
    base: scratch
    platforms: [linux/amd64, linux/arm64]
    files:
      - {artifact: tools, dest: /opt/tools/}
      - {artifact: fetched, dest: /opt/fetched/}
`,
	})
}

// A local archive and a download placed on two platforms are fetched and
// unpacked once: the other platform's request takes the result, and its
// record still names its own platform.
func TestPlatformFreeWorkDoneOnce(t *testing.T) {
	var files []fixture.File
	for i := range 50 {
		files = append(files, fixture.File{Name: fmt.Sprintf("d%d/f%d", i%5, i), Content: fmt.Sprint(i), Mode: 0o644})
	}
	archive := fixture.TarGz(files)
	srv := fixture.Serve(t, map[string][]byte{"/fetched.tar.gz": archive})
	dir := t.TempDir()
	sharedRecipe(t, dir, srv, archive)
	rep := &steps{Reporter: quietReporter(t)}
	// No cache: nothing else keeps the second platform from doing the
	// work again.
	res, err := Run(context.Background(), recipePlan(t, dir), Options{Outputs: []output.Target{ociLayout(t, filepath.Join(dir, "out"))}, NoCache: true, Jobs: 4, Progress: rep})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests(); len(got) != 1 {
		t.Errorf("the download was requested %d times: %v", len(got), got)
	}
	slices.Sort(rep.ended)
	want := []string{
		"artifact fetched (linux/amd64) [url]",
		"artifact fetched (linux/arm64) [url, shared with linux/amd64]",
		"artifact tools (linux/amd64) [local]",
		"artifact tools (linux/arm64) [local, shared with linux/amd64]",
	}
	if !slices.Equal(rep.ended, want) {
		t.Errorf("artifact steps:\n%s\nwant\n%s", strings.Join(rep.ended, "\n"), strings.Join(want, "\n"))
	}
	var platforms []string
	for _, a := range res.Record.Artifacts {
		platforms = append(platforms, a.Name+" "+a.Platform)
		if a.SHA256 != fixture.SHA256(archive) || len(a.Files) != len(files) {
			t.Errorf("%s on %s: sha256 %s, %d files; want %s, %d", a.Name, a.Platform, a.SHA256, len(a.Files), fixture.SHA256(archive), len(files))
		}
	}
	if want := []string{"fetched linux/amd64", "fetched linux/arm64", "tools linux/amd64", "tools linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("records name %v, want %v", platforms, want)
	}
	// Each platform's image holds every file: the layer placing the
	// first platform's tree last does not empty the other's.
	layers := platformLayers(t, filepath.Join(dir, "out"))
	if len(layers) != 2 || !slices.Equal(layers["linux/amd64"], layers["linux/arm64"]) {
		t.Errorf("the platforms' layers differ: %v", layers)
	}
}

// platformLayers reads the layers of each platform's manifest in the
// OCI layout at dir.
func platformLayers(t *testing.T, dir string) map[string][]string {
	t.Helper()
	type descriptor struct {
		Digest   string
		Platform *struct{ OS, Architecture string }
	}
	read := func(p string, v any) {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err == nil {
			err = json.Unmarshal(data, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	blob := func(d string) string { return filepath.Join("blobs", strings.Replace(d, ":", "/", 1)) }
	var index struct{ Manifests []descriptor }
	read("index.json", &index)
	out := map[string][]string{}
	for len(index.Manifests) == 1 && index.Manifests[0].Platform == nil {
		// An image index of the platforms.
		d := index.Manifests[0].Digest
		index.Manifests = nil
		read(blob(d), &index)
	}
	for _, m := range index.Manifests {
		var manifest struct{ Layers []descriptor }
		read(blob(m.Digest), &manifest)
		for _, l := range manifest.Layers {
			out[m.Platform.OS+"/"+m.Platform.Architecture] = append(out[m.Platform.OS+"/"+m.Platform.Architecture], l.Digest)
		}
	}
	return out
}

// The failure of work done once for two platforms is said for both, at
// the recipe's line, whichever platform's request did it.
func TestPlatformFreeFailureNamesEveryPlatform(t *testing.T) {
	srv := fixture.Serve(t, nil)
	dir := t.TempDir()
	sharedRecipe(t, dir, srv, []byte("not gzip"))
	if err := os.WriteFile(filepath.Join(dir, "tools.tar.gz"), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), recipePlan(t, dir), Options{Outputs: []output.Target{ociLayout(t, filepath.Join(dir, "out"))}, NoCache: true, Jobs: 4, Progress: quietReporter(t)})
	if err == nil {
		t.Fatal("the build of a broken archive succeeded")
	}
	for _, want := range []string{"pallet.yaml:", "(linux/amd64 and linux/arm64, "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
