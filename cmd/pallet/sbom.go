package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/inspect"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/sbom"
)

// sbomCmd prints a document attached to an image as an OCI 1.1 referrer,
// or in its index as an attestation manifest (--attest-index).
func sbomCmd() *cobra.Command {
	var plat, format string
	// The command's context, its registry requests held to --download-timeout.
	var timed func() (context.Context, error)
	cmd := &cobra.Command{
		Use:   "sbom oci:DIR[:TAG] | docker:FILE | [registry:]REGISTRY/REPO:TAG",
		Short: "Print the SBOM (or provenance) attached to an image",
		Example: `  pallet sbom oci:out:latest --platform linux/amd64
  pallet sbom registry.example.com/app:v1 --format cyclonedx-json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			types := map[string]string{"spdx-json": sbom.MediaTypeSPDX, "cyclonedx-json": sbom.MediaTypeCycloneDX, "provenance": sbom.MediaTypeInToto}
			want, ok := types[format]
			if !ok {
				return fmt.Errorf("--format %q: want spdx-json, cyclonedx-json or provenance", format)
			}
			var p *platform.Platform
			var osVersion string
			if plat != "" {
				// An index of one Windows platform on several bases
				// (a recipe's base list) holds an image per os.version,
				// named as crane and containerd name it: windows/amd64:10.0.20348.1.
				name, v, _ := strings.Cut(plat, ":")
				pp, err := platform.Parse(name)
				if err != nil {
					return fmt.Errorf("--platform: %w", err)
				}
				p, osVersion = &pp, v
			}
			ctx, err := timed()
			if err != nil {
				return err
			}
			data, err := inspect.Attached(ctx, args[0], p, osVersion, want)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&plat, "platform", "", "the platform's image, when the image has several (os/arch[/variant], with :OSVERSION where an index holds one per Windows version)")
	cmd.Flags().StringVar(&format, "format", "spdx-json", "spdx-json, cyclonedx-json or provenance")
	timed = registryTimeout(cmd)
	return cmd
}
