package artifact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// GoModuleFiles takes a file or a directory of a Go module version, as it
// is: the scripts and configuration a module keeps beside the packages a
// gomod build of the same version compiles, pinned by the same go.sum
// hash. The module comes through the module proxy as a gomod build's
// does, and is proved against the sum before any file of it is used.
type GoModuleFiles struct {
	// Module and Version name the module ("antrea.io/antrea/v2", "v2.4.0").
	Module  string
	Version string
	// Sum is the module's go.sum hash ("h1:..."), of the whole zip.
	Sum string
	// Commit, when set, is the upstream commit the recipe says the
	// version was made from (recorded; checked against the proxy's word).
	Commit string
	// Path names the file or directory, slash-separated, relative to the
	// module's root (CleanModulePath).
	Path string
}

func (m *GoModuleFiles) Name() string { return "gomod-files" }

func (m *GoModuleFiles) Origin() Origin {
	return Origin{Module: m.pin().ref(), SHA256: m.Sum, Commit: m.Commit, InModule: m.Path}
}

func (m *GoModuleFiles) pin() modulePin {
	return modulePin{Path: m.Module, Version: m.Version, Sum: m.Sum, Commit: m.Commit}
}

// Key: the sum pins every byte of the module, and the path says which of
// them are taken.
func (m *GoModuleFiles) Key(*Fetcher, *Request) ([]string, bool, error) {
	parts := []string{m.Module, m.Version, m.Sum, m.Path}
	if m.Commit != "" {
		parts = append(parts, "commit="+m.Commit)
	}
	return parts, true, nil
}

// Produce downloads the module, proves it against the pin, unpacks it and
// takes Path from it; the licences are those taken, else the module's.
func (m *GoModuleFiles) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	src := filepath.Join(work, "src")
	// No build: the environment is the go command's for downloading, with
	// the build's proxy settings, gate and mirror.
	if _, err := m.pin().fetch(ctx, f, f.goEnv(&Go{}, r.Platform), work, src); err != nil {
		return nil, err
	}
	return takeWithLicenses(src, m.Path, r, "module "+m.pin().ref(), "in that module version")
}

// Mirror puts the module zip in the mirror's module cache, which offline
// builds use as their GOPROXY; the files need nothing else.
func (m *GoModuleFiles) Mirror(ctx context.Context, f *Fetcher, r *Request, dir string) error {
	tmp, err := os.MkdirTemp("", "pallet-fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The files are the same for every platform: said once.
	f.logOnce("mirror %s", m.pin().ref())
	env, err := f.MirrorGoEnv(&Go{}, r.Platform, dir)
	if err != nil {
		return err
	}
	if _, err := m.pin().fetch(ctx, f, env, tmp, filepath.Join(tmp, "src")); err != nil {
		return fmt.Errorf("module %s: %w", m.pin().ref(), err)
	}
	return nil
}
