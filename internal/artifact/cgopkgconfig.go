package artifact

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pallet-dev/pallet/internal/bounded"
)

// pkgConfigTimeout bounds each pkg-config a key runs: one that hangs (a
// PKG_CONFIG that names a wrapper waiting on something) would hold the
// build, where go build would hang on it too but be stopped with it.
// A variable, so that tests can lower it.
var pkgConfigTimeout = 30 * time.Second

// maxPkgConfigAnswer bounds what pkg-config may answer: flags, not data.
const maxPkgConfigAnswer = 1 << 20

// pkgConfigCflags asks pkg-config, in the package directory dir with the
// build's environment environ, for the compile flags of the arguments of
// a package's #cgo pkg-config lines, as the go command asks: its
// PKG_CONFIG (else pkg-config), "--" flags first, then "--", then the
// packages. One that fails fails go build too, which says why: the key
// takes no flags from it, and says nothing.
func pkgConfigCflags(dir string, args []string, environ []string) (string, error) {
	var flags, pkgs []string
	for _, a := range args {
		switch {
		case a == "--":
		case strings.HasPrefix(a, "--"):
			flags = append(flags, a)
		default:
			pkgs = append(pkgs, a)
		}
	}
	name := "pkg-config"
	if v := splitEnvFlags(EnvValue(environ, "PKG_CONFIG")); len(v) > 0 {
		name = v[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), pkgConfigTimeout)
	defer cancel()
	cmdArgs := append(append(append([]string{"--cflags"}, flags...), "--"), pkgs...)
	cmd := Command(ctx, name, cmdArgs...)
	cmd.Dir, cmd.Env = dir, environ
	out := &bounded.Output{Max: maxPkgConfigAnswer}
	cmd.Stdout = out
	// pkg-config that exited 0 has answered, though a child it left (a
	// wrapper's helper) may hold its output: go build compiles with that
	// answer, which the key must hold as well.
	err := bounded.Answered(cmd, cmd.Run())
	said := name + " " + strings.Join(cmdArgs, " ")
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s did not answer within %v", said, pkgConfigTimeout)
	case out.Over():
		return "", fmt.Errorf("%s answered more than %d bytes", said, maxPkgConfigAnswer)
	case err != nil:
		return "", nil
	}
	return string(bytes.TrimSpace(out.Bytes())), nil
}
