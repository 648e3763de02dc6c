package golicenses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/bounded"
)

// downloadBatch is how many modules one go mod download is asked for:
// one command per module would cost a process start each, one for all
// an unbounded command line.
const downloadBatch = 100

// maxGoOutput bounds what is kept of a go command's output: each module's
// JSON is under 1 KiB.
const maxGoOutput = 4 << 20

// goEnv is the go command's environment.
func (c *collector) goEnv() []string {
	if c.opt.Env == nil {
		return os.Environ()
	}
	return c.opt.Env
}

// modCache is the module cache to read: Options.ModCache, else what the
// go command says with Env.
func (c *collector) modCache(ctx context.Context) (string, error) {
	if c.opt.ModCache != "" {
		return c.opt.ModCache, nil
	}
	if c.cache != "" {
		return c.cache, nil
	}
	dir, err := ModuleCache(ctx, c.goEnv(), c.opt.Work)
	if err != nil {
		return "", err
	}
	c.cache = dir
	return dir, nil
}

// ModuleCache asks the go command, run in dir with env, where its module
// cache is (go env GOMODCACHE), once per process for every target
// (artifact.AskToolchainEnv): a caller collecting for many binaries with
// one environment asks once and passes it as Options.ModCache.
func ModuleCache(ctx context.Context, env []string, dir string) (string, error) {
	v, err := artifact.AskToolchainEnv(ctx, dir, env, "GOMODCACHE")
	if err != nil {
		return "", err
	}
	return v[0], nil
}

// downloaded is one object of go mod download -json's output.
type downloaded struct {
	Path, Version, Error, Zip, Sum string
}

// download fetches modules with the go command and proves each zip,
// against the binary's hash when it has one, else against the hash the go
// command reports (which it checked with GOSUMDB, unless that is off or
// GONOSUMDB exempts the module).
func (c *collector) download(ctx context.Context, refs []modRef) ([]found, error) {
	out := make([]found, len(refs))
	for start := 0; start < len(refs); start += downloadBatch {
		batch := refs[start:min(start+downloadBatch, len(refs))]
		got, err := c.runDownload(ctx, batch)
		if err != nil {
			return nil, err
		}
		for i, r := range batch {
			f, err := c.provenDownload(r, got[r.From.Path+"@"+r.From.Version])
			if err != nil {
				return nil, err
			}
			out[start+i] = f
		}
	}
	return out, nil
}

func (c *collector) provenDownload(r modRef, d downloaded) (found, error) {
	if d.Error != "" || d.Zip == "" {
		msg := d.Error
		if msg == "" {
			msg = "the go command did not report it"
		}
		if c.vendorEmpty[r.Path] {
			return found{source: FromVendor, files: licenseFiles{}, reason: "no licence file in vendor/, where go mod vendor copies only capitalised LICENSE*, COPYING*, NOTICE* and COPYRIGHT* files, and the module could not be fetched: " + msg}, nil
		}
		if r.Main && r.Sum == "" {
			// The version is the tag the binary was stamped with, a
			// guess at a module version: not having it is no failure.
			return found{reason: "the main module's version (stamped from its VCS tag) could not be fetched: " + msg}, nil
		}
		if c.opt.Offline {
			return found{}, fmt.Errorf("offline: module %s is not in the module cache or the mirror: %s", r.ref(), msg)
		}
		return found{}, fmt.Errorf("go mod download %s: %s", r.ref(), msg)
	}
	sum, pinned := r.Sum, true
	if sum == "" {
		sum, pinned = d.Sum, false
		if !strings.HasPrefix(sum, "h1:") {
			return found{}, fmt.Errorf("module %s: go mod download reported no h1: hash (%q)", r.ref(), d.Sum)
		}
	}
	files, err := verifyZip(d.Zip, r.ref(), r.From, sum, c.opt)
	return found{source: FromProxy, sum: sum, pinned: pinned, files: files}, err
}

// runDownload runs go mod download -json for refs in an empty directory
// of the work dir (no go.mod there changes what is resolved).
func (c *collector) runDownload(ctx context.Context, refs []modRef) (map[string]downloaded, error) {
	dir := filepath.Join(c.opt.Work, "download")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"mod", "download", "-json"}
	for _, r := range refs {
		args = append(args, r.From.Path+"@"+r.From.Version)
	}
	// Stopped with its children when the build is cancelled, killed
	// when pallet is: a go mod download left behind would hold the
	// module cache's locks while the next build runs.
	env, err := artifact.VerifyGoToolchain(ctx, dir, c.goEnv())
	if err != nil {
		return nil, err
	}
	cmd := artifact.Command(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	stdout := &bounded.Output{Max: maxGoOutput}
	stderr := &bounded.Output{Max: 32 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runErr := bounded.Answered(cmd, cmd.Run())
	if stdout.Over() {
		return nil, fmt.Errorf("go mod download: output over %d bytes", maxGoOutput)
	}
	got := map[string]downloaded{}
	dec := json.NewDecoder(bytes.NewReader(stdout.Bytes()))
	for {
		var d downloaded
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("go mod download: reading its output: %w (%v%s)", err, runErr, artifact.Saying(strings.TrimSpace(stderr.String())))
		}
		got[d.Path+"@"+d.Version] = d
	}
	if runErr != nil && len(got) == 0 {
		return nil, fmt.Errorf("go mod download: %w%s", runErr, artifact.Saying(strings.TrimSpace(stderr.String())))
	}
	return got, nil
}

// checkOffline refuses an environment in which the go command could reach
// the network: every GOPROXY entry must be a file:// URL or "off", and
// GOSUMDB must be off (with a file:// proxy the go command would ask the
// checksum database directly).
func checkOffline(env []string) error {
	if env == nil {
		env = os.Environ()
	}
	proxy := artifact.EnvValue(env, "GOPROXY")
	if proxy == "" {
		return errors.New("offline, but GOPROXY is not set (the go command's default reaches proxy.golang.org)")
	}
	for _, p := range strings.FieldsFunc(proxy, func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "off" && !strings.HasPrefix(p, "file://") {
			return fmt.Errorf("offline, but GOPROXY=%s reaches the network", proxy)
		}
	}
	if sumdb := artifact.EnvValue(env, "GOSUMDB"); sumdb != "off" {
		return fmt.Errorf("offline, but GOSUMDB=%q is not off", sumdb)
	}
	return nil
}

// sourceOfferName is the note written beside the licences of a module
// whose licence calls for the source to be offered.
const sourceOfferName = "SOURCE-OFFER.txt"

// sourceOffer says where the module's source is. The module version and
// its hash identify the source exactly; every Go module proxy serves it.
func sourceOffer(m Module, ids []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is licensed under %s, which requires that its source code be made\n", m.Path, strings.Join(ids, ", "))
	b.WriteString("available to those who receive this software.\n\n")
	from := m.Path
	version := m.Version
	if m.Replace != nil {
		from, version = m.Replace.Path, m.Replace.Version
	}
	switch {
	case m.Source == FromSourceDir || m.Source == FromVendor:
		fmt.Fprintf(&b, "The source used is that of Go module %s %s, shipped with the source of\nthe program it is part of (vendored or local).\n", from, version)
	default:
		fmt.Fprintf(&b, "The source used is Go module %s@%s, go.sum hash %s,\n", from, version, m.Sum)
		fmt.Fprintf(&b, "available from any Go module proxy:\n\n    go mod download %s@%s\n", from, version)
	}
	return []byte(b.String())
}
