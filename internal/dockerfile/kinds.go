package dockerfile

import (
	"context"
	"fmt"
	"os"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/tree"
)

// The two kinds below exist for what a Dockerfile can say and a recipe's
// local artifact cannot: a context directory with entries left out, and
// the empty directory WORKDIR creates. Like a plain local directory they
// are read where they are, never cached.

// localDir is a directory of the build context with the entries its
// filter leaves out (.dockerignore, --exclude, files a later instruction
// of a flattened stage replaced).
type localDir struct {
	Path   string
	filter *filter
}

// Name is the kind the record shows: a local directory, as artifact.Local.
func (k *localDir) Name() string { return "local" }

func (k *localDir) Origin() artifact.Origin { return artifact.Origin{Path: k.Path} }

func (k *localDir) Key(*artifact.Fetcher, *artifact.Request) ([]string, bool, error) {
	return nil, false, nil
}

func (k *localDir) Mirror(context.Context, *artifact.Fetcher, *artifact.Request, string) error {
	return nil
}

// Produce scans the directory again: what is built is what is on disk
// now, filtered by the same rules the plan was made with.
func (k *localDir) Produce(_ context.Context, f *artifact.Fetcher, _ *artifact.Request, _ string) (*artifact.Result, error) {
	info, err := os.Stat(k.Path)
	if err != nil {
		return nil, fmt.Errorf("local path: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is no longer a directory", k.Path)
	}
	entries, _, err := scan(k.Path, k.filter)
	if err != nil {
		return nil, err
	}
	t, err := treeOf(entries)
	if err != nil {
		return nil, err
	}
	digest := tree.Hashing(cache.HashFile)
	if f.Cache != nil {
		digest = f.Cache.FileDigest
	}
	sum, err := tree.Digest(t, digest)
	if err != nil {
		return nil, err
	}
	return &artifact.Result{Tree: t, Record: artifact.Record{Digest: sum}}, nil
}

// emptyDir is the directory WORKDIR makes: BuildKit writes it as a layer
// of its own, and so does pallet.
type emptyDir struct{}

func (emptyDir) Name() string { return "dir" }

func (emptyDir) Origin() artifact.Origin { return artifact.Origin{} }

func (emptyDir) Key(*artifact.Fetcher, *artifact.Request) ([]string, bool, error) {
	return nil, false, nil
}

func (emptyDir) Mirror(context.Context, *artifact.Fetcher, *artifact.Request, string) error {
	return nil
}

func (emptyDir) Produce(context.Context, *artifact.Fetcher, *artifact.Request, string) (*artifact.Result, error) {
	return &artifact.Result{Tree: tree.New()}, nil
}
