package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/inspect"
)

func inspectCmd() *cobra.Command {
	var asJSON bool
	// The command's context, its registry requests held to --download-timeout.
	var timed func() (context.Context, error)
	cmd := &cobra.Command{
		Use:   "inspect oci:DIR[:REF] | docker:FILE | [registry:]REF",
		Short: "Show the platforms, layers, sizes and config of images, one block per digest with its tags",
		Example: `  pallet inspect oci:out
  pallet inspect oci:out:latest        # the entries of the layout named latest
  pallet inspect docker:hello.tar
  pallet inspect localhost:5000/hello:latest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, err := timed()
			if err != nil {
				return err
			}
			r, err := inspect.Open(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			r.Print(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	timed = registryTimeout(cmd)
	return cmd
}
