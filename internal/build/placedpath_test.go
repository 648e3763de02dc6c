package build

import (
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// The licences a placement of a path written with a '\' ships are those
// of the Go binaries under the name it took: a binary under a directory
// whose own name holds the '\' (a\b/tool) was taken, by the path split,
// for one left out, and the licences of the modules it links were not
// shipped, though it was placed.
func TestLicencesOfBackslashPathPlaced(t *testing.T) {
	files := tree.New()
	for _, e := range []tree.Entry{
		{Path: `a\b`, Kind: tree.Dir, Mode: 0o755},
		{Path: `a\b/tool`, Kind: tree.File, Mode: 0o755},
		{Path: "c", Kind: tree.Dir, Mode: 0o755},
		{Path: "c/other", Kind: tree.File, Mode: 0o755},
	} {
		if err := files.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	licences := tree.New()
	for _, p := range []string{"LICENSE", "example.com/m/LICENSE", "example.com/o/LICENSE"} {
		if err := licences.Add(tree.Entry{Path: p, Kind: tree.File, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	rec := record.Artifact{GoBinaries: []record.GoBinary{
		{Path: `a\b/tool`, Modules: []record.Module{{Path: "example.com/m", Files: []string{"LICENSE"}}}},
		{Path: "c/other", Modules: []record.Module{{Path: "example.com/o", Files: []string{"LICENSE"}}}},
	}}
	const key = "r@linux/amd64"
	pi := &plan.PlatformImage{Layers: []*plan.Layer{{Name: "r", Placements: []plan.Placement{{Artifact: key, Path: `a\b`, Dest: "/opt/"}}}}}
	p := &plan.Plan{Images: []*plan.Image{{Name: "app", Platforms: []*plan.PlatformImage{pi}}}}
	b := &builder{plan: p, ready: map[string]*ready{key: {record: rec, paths: takenPaths(p, key, files)}}}
	shipped, err := b.licencesPlaced(pi, &pi.Layers[0].Placements[0], &artifact.Result{Licenses: licences})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for e := range shipped.All() {
		if e.Kind == tree.File {
			got = append(got, e.Path)
		}
	}
	if want := []string{"LICENSE", "example.com/m/LICENSE"}; !slices.Equal(got, want) {
		t.Errorf("the placement ships %v, want %v", got, want)
	}
}
