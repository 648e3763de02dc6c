package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/dockerfile"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// selection is what the command line selects, whatever the front end.
type selection struct {
	file      string
	args      map[string]string
	platforms []string
	images    []string
}

// loadDockerfile reads sel's file as a Dockerfile, when it is named as one
// (Dockerfile, NAME.Dockerfile, Dockerfile.NAME): --arg sets build args
// and one --image names the target stage.
func (sel selection) loadDockerfile() (*dockerfile.Dockerfile, dockerfile.Options, bool, error) {
	if !dockerfile.IsDockerfile(sel.file) {
		return nil, dockerfile.Options{}, false, nil
	}
	if len(sel.images) > 1 {
		return nil, dockerfile.Options{}, true, fmt.Errorf("--image %v: a Dockerfile builds one stage; give one --image, the target stage", sel.images)
	}
	d, err := dockerfile.Load(sel.file)
	opt := dockerfile.Options{Args: sel.args, Platforms: sel.platforms}
	if len(sel.images) == 1 {
		opt.Target = sel.images[0]
	}
	return d, opt, true, err
}

// makePlan reads the -f file with the front end its name calls for, a
// Dockerfile or a recipe, and plans the build. A Dockerfile's front end
// reads a base's config where a word needs it (dockerfile.Options.ReadBase)
// as the build with bopt will read the base.
func makePlan(ctx context.Context, bopt build.Options, file string, args map[string]string, platforms, images []string, modesFile string, modes []string) (*plan.Plan, error) {
	sel := selection{file, args, platforms, images}
	if d, opt, ok, err := sel.loadDockerfile(); ok {
		if err != nil {
			return nil, err
		}
		if modesFile != "" || len(modes) > 0 {
			return nil, fmt.Errorf("--mode and --modes choose the modes of a recipe's artifacts; %s is a Dockerfile, which has none", file)
		}
		opt.ReadBase = baseReader(ctx, bopt, d.Dir)
		return d.Plan(opt)
	}
	r, err := recipe.Load(file)
	if err != nil {
		return nil, noRecipe(file, err)
	}
	choices, err := parseModes(modesFile, modes)
	if err != nil {
		return nil, err
	}
	return r.Plan(recipe.Options{Args: args, Platforms: platforms, Images: images, Modes: choices})
}

// baseReader reads a Dockerfile's base's config where a word needs it
// (dockerfile.Options.ReadBase), as a build with bopt reads the base;
// dir resolves an oci: layout.
func baseReader(ctx context.Context, bopt build.Options, dir string) func(string, platform.Platform) (dockerfile.BaseMeta, error) {
	return func(ref string, p platform.Platform) (dockerfile.BaseMeta, error) {
		cf, digest, err := build.BaseConfig(ctx, bopt, dir, ref, p)
		if err != nil {
			return dockerfile.BaseMeta{}, err
		}
		return dockerfile.BaseMeta{Env: cf.Config.Env, WorkingDir: cf.Config.WorkingDir, Digest: digest.String()}, nil
	}
}

// fetchable lists what the -f file could download or clone, for pallet
// fetch, with the front end its name calls for, and the limits it sets.
// A Dockerfile's base is read where a word needs it, as pallet build
// reads it with bopt: fetch plans what build will.
func fetchable(ctx context.Context, bopt build.Options, file string, args map[string]string, platforms, images []string) ([]*plan.Artifact, plan.Limits, error) {
	sel := selection{file, args, platforms, images}
	if d, opt, ok, err := sel.loadDockerfile(); ok {
		if err != nil {
			return nil, plan.Limits{}, err
		}
		opt.ReadBase = baseReader(ctx, bopt, d.Dir)
		// A Dockerfile sets no limits: the defaults, as its build's.
		arts, err := d.Fetchable(opt)
		return arts, plan.Limits{}, err
	}
	r, err := recipe.Load(file)
	if err != nil {
		return nil, plan.Limits{}, noRecipe(file, err)
	}
	lim, err := r.PlanLimits()
	if err != nil {
		return nil, lim, err
	}
	arts, err := r.Fetchable(recipe.Options{Args: args, Platforms: platforms, Images: images})
	return arts, lim, err
}

// noRecipe adds to the error of a recipe that is not there the
// Dockerfile beside it, when the recipe is -f's default: a user of docker
// build, run where the Dockerfile is, is not told to write a recipe.
func noRecipe(file string, err error) error {
	if file != "pallet.yaml" || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, name := range []string{"Dockerfile", "Containerfile"} {
		if fi, serr := os.Stat(name); serr == nil && fi.Mode().IsRegular() {
			return fmt.Errorf("%w; to build the %s here, give it: -f %s", err, name, name)
		}
	}
	return err
}
