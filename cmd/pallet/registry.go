package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// registerInsecure adds --insecure to root, for every command (as crane
// has it): pushes, bases, the shared cache, inspect and index create all
// reach registries through the command's context.
func registerInsecure(root *cobra.Command) {
	var insecure []string
	root.PersistentFlags().StringArrayVar(&insecure, "insecure", nil, "reach `REGISTRY` (HOST or HOST:PORT) over plain HTTP, or over TLS without verifying its certificate (repeatable)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		ctx, err := regauth.WithInsecure(cmd.Context(), insecure...)
		if err != nil {
			return fmt.Errorf("--insecure: %w", err)
		}
		cmd.SetContext(ctx)
		return nil
	}
}

// pushByDigest makes the registry outputs push by digest, untagged: one
// runner's share of a build fanned out across CI machines.
func pushByDigest(outputs []output.Target, on bool) error {
	if !on {
		return nil
	}
	n := 0
	for _, t := range outputs {
		r, ok := t.(*output.Registry)
		if !ok {
			continue
		}
		r.ByDigest = true
		if err := r.Check(); err != nil {
			return fmt.Errorf("--push-by-digest: %w", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("--push-by-digest needs a registry output (-o registry:REPO)")
	}
	return nil
}
