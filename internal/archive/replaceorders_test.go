package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	stdmaps "maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestReplacementOrdersAsGNUTar unpacks random sequences of files,
// directories, symlinks and hard links at a few names, some spelled
// "./a" or "a/", with and without strip, and wherever both pallet and
// GNU tar unpack one, the trees agree; Written gives each file it names
// the digest of the bytes it holds, and Links gives exactly the groups
// of names that are one file. Where pallet refuses what GNU tar unpacks,
// it is a path through a symlink or a hard link to a directory, which
// pallet refuses on purpose.
func TestReplacementOrdersAsGNUTar(t *testing.T) {
	tarPath := gnuTarPath(t)
	names := []string{"a", "a", "t", "t", "a/x", "b", "d/", "d/y", "./a", "a/"}
	links := []string{"t", "a", "b", "a/x", "d/y"}
	r := rand.New(rand.NewSource(120))
	cases := 120
	if testing.Short() {
		cases = 20
	}
	for i := range cases {
		strip := i % 2
		prefix := func() string {
			if strip == 0 {
				return ""
			}
			return []string{"p/", "q/"}[r.Intn(2)]
		}
		var ents []ent
		for j := range 2 + r.Intn(5) {
			nm := names[r.Intn(len(names))]
			file := prefix() + nm
			if nm[len(nm)-1] == '/' {
				file = file[:len(file)-1]
			}
			switch r.Intn(5) {
			case 0, 1:
				ents = append(ents, ent{name: file, body: fmt.Sprintf("c%d", j)})
			case 2:
				ents = append(ents, ent{name: prefix() + nm, typ: tar.TypeDir})
			case 3:
				ents = append(ents, ent{name: file, typ: tar.TypeSymlink, link: []string{"t", "b", "missing", "."}[r.Intn(4)]})
			case 4:
				ents = append(ents, ent{name: file, typ: tar.TypeLink, link: prefix() + links[r.Intn(len(links))]})
			}
		}
		desc := fmt.Sprintf("strip %d:", strip)
		for _, e := range ents {
			desc += fmt.Sprintf(" %s(%c)%s", e.name, max(e.typ, tar.TypeReg), map[bool]string{true: "->" + e.link}[e.link != ""])
		}
		s := newSandbox(t, Tar, build(t, Tar, ents))
		sums := map[string]string{}
		var groups [][]string
		err := Extract(context.Background(), s.src, Tar, s.out, Options{Strip: strip,
			Written: func(p, sum string) { sums[p] = sum },
			Links:   func(names []string) { groups = append(groups, names) }})
		ref := t.TempDir()
		gnuErr := exec.Command(tarPath, "-xf", s.src, "-C", ref, fmt.Sprintf("--strip-components=%d", strip)).Run()
		if err != nil {
			if gnuErr == nil && !strings.Contains(err.Error(), "passes through symlink") && !strings.Contains(err.Error(), "is a directory") {
				t.Errorf("%s: %v, where GNU tar unpacks it", desc, err)
			}
			continue
		}
		s.checkContained(t)
		if got := shapes(snapshot(t, s.out)); gnuErr == nil && !stdmaps.Equal(got, shapes(snapshot(t, ref))) {
			t.Errorf("%s\npallet unpacks %q\nGNU tar        %q", desc, got, shapes(snapshot(t, ref)))
		}
		for p, sum := range sums {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("%s: Written named %s: %v", desc, p, err)
				continue
			}
			if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
				t.Errorf("%s: Written gave %s the digest %s, not that of %q", desc, p, sum, b)
			}
		}
		// The names of each file, by inode: those of two names or more
		// are the groups Links must give.
		byInode := map[uint64][]string{}
		err = filepath.WalkDir(s.out, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.out, p)
			ino := fi.Sys().(*syscall.Stat_t).Ino
			byInode[ino] = append(byInode[ino], filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want [][]string
		for _, names := range byInode {
			if len(names) > 1 {
				slices.Sort(names)
				want = append(want, names)
			}
		}
		slices.SortFunc(want, func(a, b []string) int { return slices.Compare(a, b) })
		slices.SortFunc(groups, func(a, b []string) int { return slices.Compare(a, b) })
		if fmt.Sprint(groups) != fmt.Sprint(want) {
			t.Errorf("%s: Links gave %q, the files' names are %q", desc, groups, want)
		}
		if t.Failed() {
			return
		}
	}
}
