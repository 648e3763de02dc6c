package artifact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pallet-dev/pallet/internal/transfer"
)

// TagObjectType says what tag names in repo, id as ResolveTag gave it:
// "commit", or "tree", "blob" for a tag of one, which no checkout takes.
// ls-remote lists an object's name, never its type, so the tag itself is
// fetched, from the repository as ResolveTag asks it, into a scratch
// repository: its history cut to one commit and, where the server
// filters, without that commit's trees, so that a tag of a large
// project's commit costs a commit object, not a snapshot.
func (f *Fetcher) TagObjectType(ctx context.Context, repo, tag, id string) (typ string, err error) {
	if f.Offline {
		return "", fmt.Errorf("offline: cannot fetch tag %s from %s", tag, ShownURL(repo))
	}
	if strings.HasPrefix(repo, "-") {
		return "", fmt.Errorf("repository %q: a URL or path cannot start with -", ShownURL(repo))
	}
	tmp, err := os.MkdirTemp("", "pallet-tag-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ctx, end := boundGit(ctx, f.Limits, gitRef{Repo: repo, Commit: id, Tag: tag})
	defer func() { err = end(err) }()
	ref := "refs/tags/" + tag
	// Each attempt in a repository of its own: a fetch with a filter
	// leaves the filter in the repository's configuration, for the
	// next fetch from the same URL to ask again, and over dumb http
	// that one waits for ever.
	var dir string
	fetch := func(args ...string) error {
		dir = filepath.Join(tmp, strconv.Itoa(len(args)))
		if _, err := git(ctx, "", append(append([]string{"init", "-q", "--bare"}, objectFormat(id)...), dir)...); err != nil {
			return err
		}
		return f.gitTransfer(ctx, dir, dir, append(append([]string{"fetch", "--progress"}, args...), repo, ref)...)
	}
	// A server without filters sends the snapshot (git warns and goes
	// on); a dumb-http one cannot cut history and gets the whole of it,
	// as a build's fetch of a commit falls back to.
	err = fetch("--depth", "1", "--filter=tree:0")
	if err != nil && !errors.Is(err, errFetchTooLarge) && !errors.As(err, new(*gitTimeoutError)) && !errors.As(err, new(*transfer.StallError)) {
		err = fetch()
	}
	if err != nil {
		return "", fmt.Errorf("fetch tag %s from %s: %w", tag, ShownURL(repo), err)
	}
	if typ, err = git(ctx, dir, "cat-file", "-t", id); err != nil {
		// The tag moved between the two questions.
		return "", fmt.Errorf("tag %s of %s: %s is not what it names now; ask again: %w", tag, ShownURL(repo), id, err)
	}
	return typ, nil
}
