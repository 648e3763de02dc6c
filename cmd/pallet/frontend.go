package main

import (
	"fmt"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/dockerfile"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/recipe"
)

// makePlan reads the -f file with the front end its name calls for, a
// Dockerfile (Dockerfile, NAME.Dockerfile, Dockerfile.NAME) or a recipe,
// and plans the build. For a Dockerfile, --arg sets build args and
// --image names the target stage.
func makePlan(file string, args map[string]string, platforms, images []string, modesFile string, modes []string) (*plan.Plan, error) {
	if dockerfile.IsDockerfile(file) {
		if modesFile != "" || len(modes) > 0 {
			return nil, fmt.Errorf("--mode and --modes choose the modes of a recipe's artifacts; %s is a Dockerfile, which has none", file)
		}
		if len(images) > 1 {
			return nil, fmt.Errorf("--image %v: a Dockerfile builds one stage; give one --image, the target stage", images)
		}
		d, err := dockerfile.Load(file)
		if err != nil {
			return nil, err
		}
		opt := dockerfile.Options{Args: args, Platforms: platforms}
		if len(images) == 1 {
			opt.Target = images[0]
		}
		return d.Plan(opt)
	}
	r, err := recipe.Load(file)
	if err != nil {
		return nil, err
	}
	choices, err := parseModes(modesFile, modes)
	if err != nil {
		return nil, err
	}
	return r.Plan(recipe.Options{Args: args, Platforms: platforms, Images: images, Modes: choices})
}

// fetchable lists what the -f file could download or clone, for pallet
// fetch, with the front end its name calls for.
func fetchable(file string, args map[string]string, platforms, images []string) ([]*artifact.Request, error) {
	if dockerfile.IsDockerfile(file) {
		d, err := dockerfile.Load(file)
		if err != nil {
			return nil, err
		}
		opt := dockerfile.Options{Args: args, Platforms: platforms}
		if len(images) == 1 {
			opt.Target = images[0]
		}
		return d.Fetchable(opt)
	}
	r, err := recipe.Load(file)
	if err != nil {
		return nil, err
	}
	return r.Fetchable(recipe.Options{Args: args, Platforms: platforms, Images: images})
}
