package main

import (
	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/recipe"
)

func schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of pallet.yaml, for editors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(recipe.Schema)
			return err
		},
	}
}
