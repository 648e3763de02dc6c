package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/regauth"
)

// maxPassword bounds what --password-stdin reads: a token is a few
// kilobytes at most, and a mistaken pipe must not fill memory.
const maxPassword = 64 << 10

func authCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to and out of registries (the docker config, no daemon)",
	}
	cmd.AddCommand(loginCmd(), logoutCmd())
	return cmd
}

func loginCmd() *cobra.Command {
	var user, password string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "login REGISTRY -u USER --password-stdin",
		Short: "Store credentials for a registry in the docker config, as docker login does",
		Example: `  echo "$TOKEN" | pallet auth login ghcr.io -u USER --password-stdin
  pallet auth login registry.example.com:5000 -u ci --password-stdin < token.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case stdin && password != "":
				return errors.New("give the password with --password-stdin or -p, not both")
			case stdin:
				data, err := bounded.ReadAll(cmd.InOrStdin(), maxPassword)
				if err != nil {
					return fmt.Errorf("reading the password from standard input: %w", err)
				}
				password = strings.TrimRight(string(data), "\r\n")
			case password != "":
				fmt.Fprintln(cmd.ErrOrStderr(), "pallet: warning: a password given with -p shows in the process list and stays in the shell history; use --password-stdin")
			default:
				return errors.New("no password: pipe it into --password-stdin (or give -p, which leaves it in the shell history)")
			}
			where, err := regauth.Login(args[0], user, password)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "logged in to %s as %s (credentials in %s)\n", args[0], user, where)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&user, "username", "u", "", "user name")
	f.StringVarP(&password, "password", "p", "", "password (shows in the process list and shell history; prefer --password-stdin)")
	f.BoolVar(&stdin, "password-stdin", false, "read the password from standard input")
	cmd.MarkFlagRequired("username")
	return cmd
}

func logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout REGISTRY",
		Short: "Remove a registry's credentials from the docker config",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			removed, err := regauth.Logout(args[0])
			if err != nil {
				return err
			}
			if !removed {
				fmt.Fprintf(cmd.ErrOrStderr(), "no credentials for %s to remove\n", args[0])
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "logged out of %s\n", args[0])
			return nil
		},
	}
}
