package artifact

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/transfer"
)

// Git builds a module of a git repository pinned by commit.
type Git struct {
	Repo   string
	Commit string
	// Tag, when given, must point at Commit.
	Tag string
	// Go is the build; its Module is relative to the checkout.
	Go Go
}

func (g *Git) Name() string { return "git" }

// Origin shows the repository without credentials written into its URL
// (ShownURL): records are shared, credentials are not.
func (g *Git) Origin() Origin { return Origin{Repo: ShownURL(g.Repo), Commit: g.Commit, Tag: g.Tag} }

func (g *Git) ref() gitRef { return gitRef{Repo: g.Repo, Commit: g.Commit, Tag: g.Tag} }

// gitRef is what pins a checkout, whatever is then done with it.
type gitRef struct {
	Repo, Commit string
	// Tag, when given, must point at Commit.
	Tag string
}

// Key: the commit pins every file of the checkout, local replaces
// included; the repository is there for the record, without the
// credentials, which change nothing fetched (ShownURL).
func (g *Git) Key(*Fetcher, *Request) ([]string, bool, error) {
	parts, err := g.Go.settingsKey()
	if err != nil {
		return nil, false, err
	}
	parts = append(parts, ShownURL(g.Repo), g.Commit, g.Tag)
	if g.Tag != "" {
		// A tag that is a version of the module is stamped into the
		// binaries (tagCheckout): those cached before, which said
		// (devel), are not reused; v2, nor those stamped where the build
		// machine's git attributes reached the checkout (+dirty, CRLF);
		// v3, nor those where an attributes file named in the
		// environment (GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS) reached
		// the go command's git status, or a template's hook the
		// checkout (+dirty).
		parts = append(parts, "vcs-v3")
	}
	return parts, true, nil
}

// Produce checks out the pinned commit and builds the module in it.
func (g *Git) Produce(ctx context.Context, f *Fetcher, r *Request, work string) (*Result, error) {
	src := filepath.Join(work, "src")
	if err := f.checkout(ctx, g.ref(), src); err != nil {
		return nil, err
	}
	if err := dropOutwardLinks(src, f.Log); err != nil {
		return nil, err
	}
	dir, err := g.Go.moduleIn(src)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", ShownURL(g.Repo), g.Commit, err)
	}
	build := g.Go
	if build.vcs, err = tagCheckout(ctx, src, g.Go.Module, dir, g.ref()); err != nil {
		return nil, err
	}
	res, err := f.goBuild(ctx, r, &build, dir, work)
	if err != nil {
		return nil, withSubmodules(ctx, src, g.ref(), err)
	}
	if res.ModuleSource, err = moduleSnapshot(src, dir); err != nil {
		return nil, err
	}
	// Licences are the repository's, even when the module is a subdirectory.
	if r.Licenses == nil && !r.NoLicense && res.Licenses.Len() == 0 {
		if res.Licenses, err = findLicenses(shallowTree(src), nil, false); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// withSubmodules is err, a build of the checkout at src that failed,
// saying which git submodules the commit has, when it has any: their
// directories are empty, as pallet fetches no submodule, and the go
// command, finding no package there, says only that no module provides
// it ("go get").
func withSubmodules(ctx context.Context, src string, g gitRef, err error) error {
	_, subs, lerr := trackedFiles(ctx, src, ".")
	if lerr != nil || len(subs) == 0 {
		return err
	}
	return fmt.Errorf("%w\n(%s at %s has git submodules, whose files pallet does not fetch, so their directories are empty: %s)", err, ShownURL(g.Repo), g.Commit, strings.Join(subs, ", "))
}

// trackedFiles lists what the commit checked out at dir tracks under
// pathspec (taken literally): its files, and apart its submodules (mode
// 160000), whose directories the checkout leaves empty. Names are as
// git gives them with -z, spaces at either end kept.
func trackedFiles(ctx context.Context, dir, pathspec string) (files, submodules []string, err error) {
	out, err := gitOutput(ctx, dir, nil, "--literal-pathspecs", "ls-files", "--stage", "-z", "--", pathspec)
	if err != nil {
		return nil, nil, err
	}
	for _, rec := range strings.Split(out, "\x00") {
		// <mode> SP <object> SP <stage> TAB <path>
		info, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		if mode, _, _ := strings.Cut(info, " "); mode == "160000" {
			submodules = append(submodules, name)
		} else {
			files = append(files, name)
		}
	}
	return files, submodules, nil
}

// Mirror keeps a bare copy of the repository holding the commit, and the
// module's dependencies and toolchain.
func (g *Git) Mirror(ctx context.Context, f *Fetcher, r *Request, dir string) error {
	tmp, err := os.MkdirTemp("", "pallet-fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if err := g.mirrorCheckout(ctx, f, dir, src); err != nil {
		return err
	}
	return f.mirrorGoModules(ctx, dir, r.Platform, &g.Go, filepath.Join(src, filepath.FromSlash(g.Go.Module)))
}

// mirrorCheckout keeps the repository in the mirror dir and checks the
// commit out of it at src, under one bound: the module's dependencies,
// fetched after, are not git work.
func (g *Git) mirrorCheckout(ctx context.Context, f *Fetcher, dir, src string) (err error) {
	ctx, end := boundGit(ctx, f.Limits, g.ref())
	defer func() { err = end(err) }()
	if err := f.mirrorRepo(ctx, dir, g.ref()); err != nil {
		return err
	}
	// From the mirror just written, not the upstream again.
	m := *f
	m.Mirror, m.Offline, m.shared = dir, true, nil
	return m.checkout(ctx, g.ref(), src)
}

// checkout puts g.Commit of g.Repo in dir and proves it: the commit must
// exist, HEAD must be it, and a tag, when given, must point at it. All
// of it is held to one bound (boundGit).
func (f *Fetcher) checkout(ctx context.Context, g gitRef, dir string) (err error) {
	ctx, end := boundGit(ctx, f.Limits, g)
	defer func() { err = end(err) }()
	if f.shared != nil {
		objects, err := f.shared.objects(ctx, f, g)
		if err != nil {
			return err
		}
		return checkoutShared(ctx, objects, g, dir)
	}
	return f.fetchCommit(ctx, g, dir, false)
}

// fetchCommit fetches g.Commit into a new repository at dir, bare or
// checked out, and proves it.
func (f *Fetcher) fetchCommit(ctx context.Context, g gitRef, dir string, bare bool) error {
	from, err := f.repoSource(g.Repo)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	run := func(args ...string) (string, error) { return git(ctx, dir, args...) }
	init := append([]string{"init", "-q"}, objectFormat(g.Commit)...)
	if bare {
		init = append(init, "--bare")
	}
	if _, err := run(init...); err != nil {
		return err
	}
	if _, err := run("remote", "add", "origin", from); err != nil {
		return err
	}
	if err := f.fetchObjects(ctx, dir, g); err != nil {
		return err
	}
	head, err := run("rev-parse", "--verify", "--quiet", g.Commit+"^{commit}")
	if err != nil {
		// A tree's or a blob's name, which a fetch by name brings as
		// readily as a commit's, is in the repository all the same:
		// "not in" would send its reader looking for a missing push.
		if typ, terr := run("cat-file", "-t", g.Commit); terr == nil && typ != "commit" {
			return blame("commit", fmt.Errorf("commit %s of %s names a %s, not a commit, which is what a source checks out: pin the commit (git rev-parse TAG^{commit}; pallet lock resolves a tag to it)", g.Commit, ShownURL(g.Repo), typ))
		}
		return blame("commit", fmt.Errorf("commit %s is not in %s", g.Commit, ShownURL(g.Repo)))
	}
	if head != g.Commit {
		return fmt.Errorf("%s: fetched %s, but the recipe pins %s", ShownURL(g.Repo), head, g.Commit)
	}
	// Before a file is written: the fetch was compressed, and a small
	// pack can hold a tree as large as any archive bomb.
	if err := checkTreeSize(ctx, dir, g, f.Limits.Unpack); err != nil {
		return err
	}
	if !bare {
		if err := checkoutCommit(ctx, dir, g); err != nil {
			return err
		}
	}
	return checkTag(ctx, f.Limits, dir, "origin", g)
}

// checkTag proves that g.Tag, when given, points at g.Commit in remote
// (a name or URL, run in dir): a tag moved since pallet lock pinned it
// is blamed on the tag's line.
func checkTag(ctx context.Context, lim Limits, dir, remote string, g gitRef) error {
	if g.Tag == "" {
		return nil
	}
	tagged, err := tagCommit(ctx, lim, dir, remote, ShownURL(g.Repo), g.Tag)
	if err != nil {
		return blame("tag", err)
	}
	if tagged != g.Commit {
		return blame("tag", fmt.Errorf("%s: tag %s points at %s, but the recipe pins %s", ShownURL(g.Repo), g.Tag, tagged, g.Commit))
	}
	return nil
}

// objectFormat is what git init is told of the object format of a
// repository made to fetch commit into: git fetch keeps the format init
// gave, and git init, told nothing, makes SHA-1, which cannot take a
// SHA-256 repository's objects ("mismatched algorithms"). A commit's
// length says its format. SHA-1 is asked for by saying nothing, which a
// git older than --object-format (2.29) understands too.
func objectFormat(commit string) []string {
	if len(commit) == sha256.Size*2 {
		return []string{"--object-format=sha256"}
	}
	return nil
}

// checkoutCommit checks out g.Commit, already proven present, in the
// repository at dir and proves HEAD is it. What git refuses now is the
// commit's tree (a path it will not write, such as a .git inside it),
// not the pin.
func checkoutCommit(ctx context.Context, dir string, g gitRef) error {
	if _, err := git(ctx, dir, "checkout", "-q", "--detach", g.Commit); err != nil {
		return fmt.Errorf("%s at %s cannot be checked out: %w", ShownURL(g.Repo), g.Commit, err)
	}
	head, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head != g.Commit {
		return fmt.Errorf("%s: checked out %s, but the recipe pins %s", ShownURL(g.Repo), head, g.Commit)
	}
	return nil
}

// errFetchTooLarge stops a fetch that has written more than a download
// may be.
var errFetchTooLarge = errors.New("fetch too large")

// fetchObjects fetches g.Commit from origin into the repository at dir.
func (f *Fetcher) fetchObjects(ctx context.Context, dir string, g gitRef) error {
	// Fetching just the commit is fast where the server allows it; a
	// server that does not (or a dumb-http mirror) gets a full fetch.
	// --progress: what it prints is how a transfer over ssh or git://,
	// which has no low-speed limit, is seen to go on.
	err := f.gitTransfer(ctx, dir, dir, "fetch", "--progress", "--depth", "1", "origin", g.Commit)
	if err != nil && !errors.Is(err, errFetchTooLarge) && !errors.As(err, new(*gitTimeoutError)) && !errors.As(err, new(*transfer.StallError)) {
		err = f.gitTransfer(ctx, dir, dir, "fetch", "--progress", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*")
	}
	if err != nil {
		return blame("repo", fmt.Errorf("fetch %s: %w", ShownURL(g.Repo), err))
	}
	return nil
}

// gitTransfer runs a git command that fetches (in dir, writing into
// repo), held to the download limits (see remoteGit): git's transfer is
// an input like any other.
func (f *Fetcher) gitTransfer(ctx context.Context, dir, repo string, args ...string) error {
	_, err := remoteGit(ctx, f.Limits, dir, repo, args...)
	return err
}

// dirSize is the bytes of the regular files under dir, as far as it can
// be read.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// ResolveTag returns the commit tag names in repo now, asking the
// repository itself (never a mirror): what pallet lock pins, and what it
// compares a pinned commit with.
func (f *Fetcher) ResolveTag(ctx context.Context, repo, tag string) (string, error) {
	if f.Offline {
		return "", fmt.Errorf("offline: cannot ask %s for tag %s", ShownURL(repo), tag)
	}
	// git would read a leading dash as an option (--upload-pack runs a
	// command); a recipe names a repository, never an option.
	if strings.HasPrefix(repo, "-") {
		return "", fmt.Errorf("repository %q: a URL or path cannot start with -", ShownURL(repo))
	}
	return tagCommit(ctx, f.Limits, "", repo, ShownURL(repo), tag)
}

// tagCommit asks remote (a name or URL, run in dir) for the commit tag
// points at; repo names it in messages.
func tagCommit(ctx context.Context, lim Limits, dir, remote, repo, tag string) (string, error) {
	out, err := remoteGit(ctx, lim, dir, "", "ls-remote", remote, "refs/tags/"+tag, "refs/tags/"+tag+"^{}")
	if err != nil {
		return "", fmt.Errorf("ask %s for tag %s: %w", repo, tag, err)
	}
	// An annotated tag lists its own object, then the commit it peels to
	// (^{}); the commit is what a checkout is, so the peeled line wins
	// whatever order the server lists them in.
	var tagged, peeled string
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		switch fields[1] {
		case "refs/tags/" + tag + "^{}":
			peeled = fields[0]
		case "refs/tags/" + tag:
			tagged = fields[0]
		}
	}
	if peeled != "" {
		tagged = peeled
	}
	if tagged == "" {
		return "", fmt.Errorf("%s has no tag %s", repo, tag)
	}
	return tagged, nil
}

// repoSource says where to clone repo from: the mirror when it has it.
func (f *Fetcher) repoSource(repo string) (string, error) {
	if f.Mirror != "" {
		m := MirrorRepo(f.Mirror, repo)
		if _, err := os.Stat(m); err == nil {
			return m, nil
		}
	}
	if f.Offline {
		return "", fmt.Errorf("offline: repository %s is not %s", ShownURL(repo), f.offlineWhere())
	}
	if f.MirrorURL != "" {
		return strings.TrimSuffix(f.MirrorURL, "/") + "/git/" + repoKey(repo), nil
	}
	return repo, nil
}

// MirrorRepo is where a mirror keeps a bare copy of repo.
func MirrorRepo(mirror, repo string) string {
	return filepath.Join(mirror, "git", repoKey(repo))
}

// shownArgs are a git command's arguments as messages show them: a
// repository's URL among them as ShownURL says.
func shownArgs(args []string) []string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = ShownURL(a)
	}
	return shown
}

// repoKey names a repository in a mirror: readable, and unique per URL,
// the credentials in it aside (ShownURL): a token handed to each CI job
// (--arg) is the same repository, which an offline build given the next
// token must find.
func repoKey(repo string) string {
	sum := sha256.Sum256([]byte(ShownURL(repo)))
	base := strings.TrimSuffix(path.Base(strings.TrimRight(repo, "/")), ".git")
	return base + "-" + hex.EncodeToString(sum[:6]) + ".git"
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := gitOutput(ctx, dir, nil, args...)
	return strings.TrimSpace(out), err
}

// gitOutput is git's output as it printed it, stdin (if any) its input:
// git's answer with -z, whose names may begin or end with a space.
func gitOutput(ctx context.Context, dir string, stdin io.Reader, args ...string) (string, error) {
	cmd := gitCommand(ctx, dir, args...)
	cmd.Stdin = stdin
	stdout, stderr := &bounded.Output{Max: maxCommandOutput}, &bounded.Output{Max: maxCommandComplaint}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := bounded.Answered(cmd, cmd.Run()); err != nil {
		return "", fmt.Errorf("git %s: %w%s", shellJoin(shownArgs(args)), err, Saying(strings.TrimSpace(stderr.String())))
	}
	if stdout.Over() {
		return "", fmt.Errorf("git %s: over %d bytes of output", shellJoin(shownArgs(args)), maxCommandOutput)
	}
	return string(stdout.Bytes()), nil
}

// maxCommandOutput bounds what pallet reads of a command's standard
// output to parse it (git ls-files of a large repository, go list -deps
// -json of a large module: a few megabytes); maxCommandComplaint what it
// keeps of its standard error, or of a build's chatter, to quote when it
// fails. A command printing without end is held to them, not to memory.
const (
	maxCommandOutput    = 64 << 20
	maxCommandComplaint = 64 << 10
)

// checkTreeSize refuses a commit whose files, checked out, would pass
// the limits an archive's extraction keeps: their bytes and their number.
// git ls-tree says both from the tree objects alone, which are read as
// they stream, so a tree of a million entries costs no memory to refuse.
func checkTreeSize(ctx context.Context, dir string, g gitRef, lim UnpackLimits) error {
	maxBytes, maxEntries := cmp.Or(lim.MaxBytes, archive.DefaultMaxBytes), cmp.Or(lim.MaxEntries, archive.DefaultMaxEntries)
	var over error
	scanned, stderr, waitErr := gitStream(ctx, dir, nil, func(out io.Reader) error {
		var (
			entries int
			total   int64
		)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		sc.Split(splitNUL)
		for sc.Scan() {
			// <mode> SP <type> SP <object> SP+ <size> TAB <path>
			meta, _, _ := strings.Cut(sc.Text(), "\t")
			fields := strings.Fields(meta)
			entries++
			if len(fields) == 4 && fields[1] == "blob" {
				n, err := strconv.ParseInt(fields[3], 10, 64)
				if err == nil {
					total += n
				}
			}
			switch {
			case entries > maxEntries:
				over = fmt.Errorf("%s at %s: more than %d files (limits.entries)", ShownURL(g.Repo), g.Commit, maxEntries)
			case total > maxBytes:
				over = fmt.Errorf("%s at %s: its files hold more than %d bytes (limits.extract, --max-extract)", ShownURL(g.Repo), g.Commit, maxBytes)
			}
			if over != nil {
				return over
			}
		}
		return sc.Err()
	}, "ls-tree", "-r", "-l", "--full-tree", "-z", g.Commit)
	switch {
	case over != nil:
		return over
	case scanned != nil:
		return fmt.Errorf("git ls-tree %s: %w", g.Commit, scanned)
	case waitErr != nil:
		return fmt.Errorf("git ls-tree %s: %w%s", g.Commit, waitErr, Saying(stderr))
	}
	return nil
}

// gitStream runs git with args in dir, stdin (if any) as its input, and
// gives its output to read as it comes. When read fails, git is stopped
// rather than waited for: read's error, what git said on stderr
// (trimmed) and how git ended are returned for the caller to say which
// counts. An error starting git is read's.
func gitStream(ctx context.Context, dir string, stdin io.Reader, read func(io.Reader) error, args ...string) (readErr error, stderr string, waitErr error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := gitCommand(ctx, dir, args...)
	cmd.Stdin = stdin
	errOut := &bounded.Output{Max: maxCommandComplaint}
	cmd.Stderr = errOut
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err, "", nil
	}
	if err := cmd.Start(); err != nil {
		return err, "", nil
	}
	if readErr = read(out); readErr != nil {
		cancel()
	}
	waitErr = bounded.Answered(cmd, cmd.Wait())
	return readErr, strings.TrimSpace(errOut.String()), waitErr
}

// splitNUL splits NUL-terminated records.
func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// gitCommand is git run in dir the same way on every machine.
func gitCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := Command(ctx, "git", append([]string{"-c", noUserAttributes}, args...)...)
	cmd.Dir = dir
	// No prompts, no user configuration: a build must not hang on a
	// credential question or behave differently per machine. Nor the
	// user's attributes (noUserAttributes), which the configuration
	// does not cover, nor the repository the environment names
	// (gitRepoEnv), nor configuration given in it, nor hooks a template
	// gives (noTemplates), nor the object format it asks of a new
	// repository (gitDefaultHash).
	env := environWithout(gitRepoEnv, gitConfigEnv, []string{gitDefaultHash})
	cmd.Env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", gitAttrNoSystem, noTemplates)
	// Nor on ssh's own questions (an unknown host key, a passphrase),
	// which it asks on the terminal: git runs in a process group of its
	// own, where reading the terminal would stop it for good. The go
	// command does the same for the same reason.
	if os.Getenv("GIT_SSH") == "" && os.Getenv("GIT_SSH_COMMAND") == "" {
		cmd.Env = append(cmd.Env, "GIT_SSH_COMMAND=ssh -o ControlMaster=no -o BatchMode=yes")
	}
	return cmd
}

// environWithout is the process's environment less the variables each
// list names.
func environWithout(drop ...[]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(drop, func(names []string) bool { return slices.Contains(names, k) }) {
			env = append(env, kv)
		}
	}
	return env
}

// gitRepoEnv are the variables that tell git which repository to work
// on, and where its parts are (git rev-parse --local-env-vars, less
// gitConfigEnv), and which of its refs (GIT_NAMESPACE, which a server's
// hook has, and which hid the pin's tag from pallet's git). A git hook
// may run with them set for the user's own repository (a pre-commit
// hook in a linked worktree has GIT_DIR and GIT_INDEX_FILE), and so does
// whatever it runs: git run in a checkout with GIT_DIR set works on that
// repository instead, and a pallet build run so added a remote to it,
// detached its HEAD, replaced its index and deleted its tags
// (tagCheckout). Neither pallet's git nor the go command's (which stamps
// a checkout, and fetches private modules with git) may see them.
var gitRepoEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE",
	"GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX",
	"GIT_NAMESPACE",
}

// gitConfigEnv give git configuration in the environment: pallet's git
// reads none of the user's (gitCommand); the go command's keeps it
// (goBuild).
var gitConfigEnv = []string{"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"}

// noUserAttributes and gitAttrNoSystem keep the user's and the system's
// git attributes (~/.config/git/attributes, read whether or not the
// user's configuration is, and /etc/gitattributes) from a checkout: what
// they say of line ends or filters would change the files checked out
// (an embedded text file's line ends) and what git status calls modified
// (a file committed with CRLF, under "text"), so the binaries, on one
// machine and not another. The repository's own .gitattributes still
// apply, as they do in upstream's clone.
const (
	noUserAttributes = "core.attributesFile=/dev/null"
	gitAttrNoSystem  = "GIT_ATTR_NOSYSTEM=1"
)

// gitDefaultHash names the object format git init gives a repository
// (sha256): pallet's, made to fetch a commit into, must take the
// remote's, which git fetch does not change, and with it set every git
// build failed ("mismatched algorithms: client sha256; server sha1").
const gitDefaultHash = "GIT_DEFAULT_HASH"

// noTemplates gives a repository pallet makes (git init) no templates:
// those of a GIT_TEMPLATE_DIR in the environment, or the system's, may
// hold hooks, and git checkout runs post-checkout, which then wrote into
// the checkout what was built and stamped (+dirty), on that machine
// alone. An empty directory is git's word for none.
const noTemplates = "GIT_TEMPLATE_DIR="

// lastGitConfig is the environment variable that gives git the setting
// kv (key=value, holding no quote) after every other: git reads
// GIT_CONFIG_PARAMETERS (what git -c sets) last, after the files and
// GIT_CONFIG_COUNT, so kv is added at the end of what the environment
// already gives there, in the older of its two forms, which every git
// reads.
func lastGitConfig(kv string) string {
	v := "'" + kv + "'"
	if cur := os.Getenv("GIT_CONFIG_PARAMETERS"); cur != "" {
		v = cur + " " + v
	}
	return "GIT_CONFIG_PARAMETERS=" + v
}

// dropOutwardLinks removes the symlinks of a checkout that lead out of it
// (absolute, or climbing above its root): the commit pins the link, not
// what it leads to on the build machine, and go build follows links to
// directories and files wherever a package or its embedded files are
// named (by path, by import path, by file). A package that needed one
// fails to build, as it would on another machine.
func dropOutwardLinks(root string, log func(string, ...any)) error {
	var dropped []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && filepath.Dir(p) == root {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Join(filepath.Dir(p), target))
		if !filepath.IsAbs(target) && err == nil && filepath.IsLocal(rel) {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		dropped = append(dropped, filepath.ToSlash(r)+" -> "+target)
		return nil
	})
	if len(dropped) > 0 && log != nil {
		log("left out %d symlink(s) of the checkout that lead out of it (%s): the pin does not cover what they point at", len(dropped), strings.Join(dropped[:min(len(dropped), 3)], ", "))
	}
	return err
}
