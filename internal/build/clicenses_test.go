package build

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/clibs"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/progress"
	"github.com/pallet-dev/pallet/internal/record"
	"github.com/pallet-dev/pallet/internal/tree"
)

// A copyright file as large as Boost's (2 MB: every file's authors) is
// shipped and its licences named, as the artifact's result kept it; a
// bound of a module licence's size refused it.
func TestCLicensesLargeCopyright(t *testing.T) {
	var out bytes.Buffer
	rep, err := progress.New("plain", &out)
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{opt: Options{Progress: rep, RequireLicenses: true}, work: t.TempDir()}
	text := []byte("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nCopyright: many\nLicense: BSL-1.0\n\n")
	for len(text) < 2<<20 {
		text = append(text, "Files: libs/filesystem/src/path.cpp\nCopyright: someone\nLicense: BSL-1.0\n\n"...)
	}
	src := filepath.Join(t.TempDir(), "copyright")
	if err := os.WriteFile(src, text, 0o644); err != nil {
		t.Fatal(err)
	}
	rel := artifact.CLicenseDir("libboost-filesystem1.74-dev") + "/copyright"
	clic := tree.New()
	if err := clic.Add(tree.Entry{Path: rel, Kind: tree.File, Mode: 0o644, Source: src, Size: int64(len(text))}); err != nil {
		t.Fatal(err)
	}
	res := &artifact.Result{Licenses: tree.New(), CLicenses: clic}
	lib := clibs.Library{File: "/usr/lib/x86_64-linux-gnu/libboost_filesystem.a", Flag: "-lboost_filesystem",
		Package: clibs.Package{Name: "libboost-filesystem1.74-dev", Arch: "amd64", Version: "1.74.0-18.1"}, Copyright: rel}
	a := &record.Artifact{GoBinaries: []record.GoBinary{{Path: "tool"}}}
	a.CLinked = []clibs.Binary{{Path: "tool", Static: true, Libraries: []clibs.Library{lib}}}
	pa := &plan.Artifact{Request: artifact.Request{Name: "tool", Kind: &artifact.Go{}}}
	if err := b.cLicenses(pa, res, a); err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Licenses.Get(rel); !ok {
		t.Errorf("%s is not shipped", rel)
	}
	if got := a.GoBinaries[0].CLibraries; len(got) != 1 || !slices.Equal(got[0].Licenses, []string{"BSL-1.0"}) {
		t.Errorf("recorded %+v", got)
	}
}
