package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/build"
	"github.com/pallet-dev/pallet/internal/output"
)

func indexCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Work with image indexes in a registry",
	}
	cmd.AddCommand(indexCreateCmd())
	return cmd
}

func indexCreateCmd() *cobra.Command {
	var metadata []string
	var imageName string
	// The command's context, its registry requests held to --download-timeout.
	var timed func() (context.Context, error)
	cmd := &cobra.Command{
		Use:   "create REPO:TAG [DIGEST | REPO@DIGEST]... [--from-metadata FILE]...",
		Short: "Merge images pushed by digest (pallet build --push-by-digest on several runners) into one tagged index",
		Long: `Merge images pushed by digest into one index, push it by digest, then tag it.

Each DIGEST names an image (or an index, whose images are taken) in REPO, or
in another repository of the registry as REPO@DIGEST. --from-metadata takes
the image a build wrote to its --metadata-file. Entries keep the order given
(arguments, then metadata files): give them in the recipe's platform order
to get the digest a build of every platform on one machine gives. Every
image must exist, and no two may have one platform (os.version included).
The result, REPO:TAG@DIGEST, is printed on standard output.`,
		Example: `  # on each runner:
  pallet build --platform linux/amd64 -o registry:ghcr.io/org/app --push-by-digest --metadata-file amd64.json
  pallet build --platform windows/amd64 -o registry:ghcr.io/org/app --push-by-digest --metadata-file windows.json
  # then, once:
  pallet index create ghcr.io/org/app:1.0 --from-metadata amd64.json --from-metadata windows.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tag, err := name.NewTag(args[0], name.StrictValidation)
			if err != nil {
				return fmt.Errorf("%s: want REPO:TAG: %w", args[0], err)
			}
			var sources []name.Digest
			for _, a := range args[1:] {
				d, err := digestArg(tag.Context(), a)
				if err != nil {
					return err
				}
				sources = append(sources, d)
			}
			for _, file := range metadata {
				d, err := build.PushedImage(file, tag.Context(), imageName)
				if err != nil {
					return err
				}
				sources = append(sources, d)
			}
			if len(sources) == 0 {
				return fmt.Errorf("no image to put in %s: give digests or --from-metadata files", tag)
			}
			ctx, err := timed()
			if err != nil {
				return err
			}
			d, err := output.CreateIndex(ctx, tag, sources)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", tag, d)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&metadata, "from-metadata", nil, "take the image from `FILE`, written by pallet build --metadata-file (repeatable)")
	cmd.Flags().StringVar(&imageName, "image", "", "with --from-metadata of a recipe with several images: the image `NAME` to take")
	timed = registryTimeout(cmd)
	return cmd
}

// digestArg reads "sha256:..." (in repo) or "REPO@sha256:...".
func digestArg(repo name.Repository, a string) (name.Digest, error) {
	full := a
	if strings.HasPrefix(a, "sha256:") {
		full = repo.Name() + "@" + a
	}
	d, err := name.NewDigest(full, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("%s: want sha256:HEX or REPO@sha256:HEX: %w", a, err)
	}
	return d, nil
}
