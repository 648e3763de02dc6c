package artifact

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/mod/modfile"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// localModules lists dir and every directory its go.mod replaces a module
// with (relative to dir, or absolute), sorted: a go build of the module
// reads all of them. Only the main module's replace directives count (go
// ignores those of its dependencies, and go.work is off for builds).
func localModules(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	out := []string{dir}
	gomod := filepath.Join(dir, "go.mod")
	data, err := bounded.ReadFile(gomod, MaxGoMod)
	if os.IsNotExist(err) {
		return out, nil // go build will say what is wrong
	}
	if err != nil {
		return nil, err
	}
	mf, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range mf.Replace {
		if !modfile.IsDirectoryPath(r.New.Path) {
			continue
		}
		p := r.New.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if info, err := os.Stat(p); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("%s: replace %s => %s: not a directory", gomod, r.Old.Path, r.New.Path)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}
