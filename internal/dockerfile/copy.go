package dockerfile

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/util/system"
	modebits "github.com/tonistiigi/dchapes-mode"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/lazyre"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/recipe"
	"github.com/pallet-dev/pallet/internal/tree"
)

// copyOp is a COPY or ADD as BuildKit's instruction reader gives it; the
// pointers are read again once the instruction is expanded.
type copyOp struct {
	add      bool
	expand   func(instructions.SingleWordExpander) error
	sd       *instructions.SourcesAndDest
	from     string
	chown    *string
	chmod    *string
	checksum *string
	exclude  []string
	// excluded is exclude compiled once, by checkExclude, for every
	// source: expansion leaves the patterns as written, as BuildKit's
	// does.
	excluded *patterns
	parents  bool
	link     bool
	unpack   *bool
	keepGit  *bool
}

func copyOf(c *instructions.CopyCommand) *copyOp {
	return &copyOp{expand: c.Expand, sd: &c.SourcesAndDest, from: c.From, chown: &c.Chown, chmod: &c.Chmod,
		checksum: new(string), exclude: c.ExcludePatterns, parents: c.Parents, link: c.Link}
}

func addOf(c *instructions.AddCommand) *copyOp {
	return &copyOp{add: true, expand: c.Expand, sd: &c.SourcesAndDest, chown: &c.Chown, chmod: &c.Chmod,
		checksum: &c.Checksum, exclude: c.ExcludePatterns, unpack: c.Unpack, keepGit: c.KeepGitDir, link: c.Link}
}

// item is one thing a COPY or ADD source resolved to: one placement.
type item struct {
	src *source
	// files is the item's content as the plan knows it, relative to
	// where it lands ("" is that place itself); nil for an archive.
	files map[string]tree.Kind
	// name is a file's name in the stage it is copied from: where it
	// goes in a destination directory.
	name string
	// rel is, for part of a directory copied from a stage, where under
	// the destination it goes.
	rel     string
	fromDir bool
	// owner and mode are kept from the stage when --chown or --chmod do
	// not set them; a download is 0600, as BuildKit makes it.
	// modeChanges are the symbolic --chmod the stage applied to them,
	// and impliedRootOwned says its ADD --chown left the directories an
	// archive only implies 0:0. dirMode and ownNewDirs are the mode the
	// stage gave the directories it copied and made, and whether those
	// it made are its owner's (plan.Placement.DirMode, OwnNewDirs);
	// stageDirs, how the stage made the directories between the path
	// copied and where the item lands, by their path relative to the
	// former, where it made them otherwise (plan.Placement.StageDirs).
	mode             fs.FileMode
	modeChanges      []string
	impliedRootOwned bool
	// archiveOwners says the stage's ADD gave what it unpacked the
	// owners of its archive's headers (no --chown).
	archiveOwners bool
	dirMode       fs.FileMode
	ownNewDirs    bool
	stageDirs     map[string]tree.DirMeta
	uid, gid      int
	pos           plan.Pos
	// plain marks a regular file of the context named by its real
	// path (no link on the way): a pattern's matches of that kind in
	// one directory can be one artifact (groupFiles). grouped marks the
	// item that is such a group, placed as its files one by one were.
	plain, grouped bool
}

// copy plans a COPY or ADD: one layer, one placement per source found.
func (e *evaluator) copy(s *stageState, n *parser.Node, op *copyOp) error {
	raws := slices.Clone(op.sd.SourcePaths)
	from, err := e.copyFrom(s, n, op)
	if err != nil {
		return err
	}
	if err := op.expand(e.expander(s)); err != nil {
		return err
	}
	if err := e.chownName(s, n, op); err != nil {
		return err
	}
	mode, uid, gid, err := e.modeOwner(s, n, *op.chmod, *op.chown)
	if err != nil {
		return err
	}
	// BuildKit's state is no longer scratch, whatever was copied.
	defer func() { s.touched = true }()
	sym, err := e.symbolicMode(s, n, *op.chmod, mode)
	if err != nil {
		return err
	}
	if *op.checksum != "" && (len(op.sd.SourcePaths) != 1 || !isURL(op.sd.SourcePaths[0])) {
		return plan.Errorf(e.d.loc.token(n, "--checksum"), "--checksum applies to one URL source")
	}
	if !s.workdirKnown() && !system.IsAbs(op.sd.DestPath, s.platform.OS) {
		return e.needBase(s, fmt.Sprintf("the relative destination %s of line %d", op.sd.DestPath, n.StartLine),
			fmt.Errorf("destination %s is relative to the working directory of the base image %s, which pallet does not read; write it absolute, or set WORKDIR first", op.sd.DestPath, s.base))
	}
	cleanDest, intoDir, err := destination(s, op.sd.DestPath)
	if err != nil {
		return err
	}
	var items []item
	found := 0
	for i, src := range op.sd.SourcePaths {
		pos := e.d.loc.token(n, raws[i])
		got, count, err := e.source(s, op, from, src, pos)
		if err != nil {
			return plan.Wrap(pos, err)
		}
		items = append(items, got...)
		found += count
	}
	if intoDir && from == nil {
		items = groupFiles(e.ctx, items)
	}
	if from != nil {
		if e.fromStages += len(items); e.fromStages > maxFromStages {
			return plan.Errorf(e.d.loc.node(n), "COPY --from=stage would have taken %d sources from stages in all; at most %d are allowed: each repeats every source that stage placed, so stages that copy from stages multiply them; copy from stages fewer times", e.fromStages, maxFromStages)
		}
	}
	// replaced, when set, says the files of this COPY but its last
	// are copied over by the next, at the destination itself.
	// dirNeeded, when set, says they go into a directory only the base
	// may hold there (plan.Placement.DirNeeded).
	replaced, dirNeeded := false, false
	if (len(op.sd.SourcePaths) > 1 || found > 1) && !intoDir && len(items) > 0 {
		baseDir := s.mayHoldDir(items[0], cleanDest, false)
		if intoDir, dirNeeded, err = severalToOne(op.sd.DestPath, items, baseDir); err != nil {
			return err
		}
		replaced = !intoDir
	}

	o := copyOptions{mode: mode, sym: sym, uid: uid, gid: gid}
	l := &plan.Layer{Name: e.layerName(n)}
	var added []*placed
	// at maps each path this COPY places to the item that placed it.
	at := map[string]placedBy{}
	seen := map[string]bool{}
	for i, it := range items {
		root, dest := placeAt(it, cleanDest, intoDir)
		// A file a later source replaces at the destination is left
		// out, as nothing of it is left in BuildKit's layer; where the
		// base may hold a directory there, it goes into it if it does,
		// which only the build can see.
		intoBaseDir := false
		if replaced && i < len(items)-1 {
			if !s.mayHoldDir(it, cleanDest, intoDir) || slices.ContainsFunc(items[i+1:], func(o item) bool { return o.src.id() == it.src.id() && o.name == it.name }) {
				continue
			}
			intoBaseDir = true
		}
		pm := plan.Placement{Artifact: e.artifact(it.src, it.pos), Dest: dest, Mode: it.mode, DirMode: it.dirMode, ModeChanges: it.modeChanges, UID: it.uid, GID: it.gid, OwnNewDirs: it.ownNewDirs, ImpliedRootOwned: it.impliedRootOwned, Pos: it.pos}
		if dirNeeded && i == 0 {
			pm.DirNeeded = cleanDest
		}
		if it.grouped {
			// Each file is named as it was when it was an artifact
			// of its own, in the same order.
			pm.Shows = make([]string, len(it.src.members))
			for j, m := range it.src.members {
				pm.Shows[j] = e.names.name(e.memberSource(m))
			}
		}
		if err := o.apply(&pm, s, it, from != nil, cleanDest); err != nil {
			return err
		}
		if intoBaseDir {
			pm.IntoDirAs, pm.OnlyIntoDir = it.name, true
			l.Placements = append(l.Placements, pm)
			continue
		}
		// Sources that overlap (COPY a* ab*) name one file twice: BuildKit
		// copies it twice, the same content, and one placement does.
		if k := it.src.id() + "\x00" + root + "\x00" + dest; seen[k] {
			continue
		} else {
			seen[k] = true
		}
		if err := placedTwice(n, items, at, i, root); err != nil {
			return err
		}
		linkRules(&pm, s, it, cleanDest, intoDir)
		l.Placements = append(l.Placements, pm)
		added = append(added, &placed{src: it.src, pm: pm, root: root, files: it.files})
	}
	for _, p := range added {
		if at, q, ok := s.content.fileInTheWay(p); ok {
			what := "would put a directory there"
			if !under(at, p.root) {
				what = "needs a directory there to place " + p.root
			}
			return plan.Errorf(e.d.loc.node(n), "%s is a file, put there by line %d (%s), and this %s %s: Docker does not replace a file with a directory, its copy fails (not a directory); copy to another path, or the file to another name",
				at, q.pm.Pos.Line, q.from(at), strings.ToUpper(n.Value), what)
		}
	}
	// Added after all are placed: a directory this COPY creates does not
	// change where its own other sources go.
	for _, p := range added {
		s.content.add(p)
	}
	if len(l.Placements) > 0 {
		s.layers = append(s.layers, l)
	}
	return nil
}

// severalToOne is what BuildKit makes of several sources (items, in
// order) copied to dest, a name without a trailing / that the stage
// holds no directory at: it copies them one after another, each as if
// alone (fsutil's Copy, once per source, into the state the one before
// left). A directory first makes dest a directory, into which the
// others go (into is true); a file first is written at dest, a later
// file replaces it, and a later directory fails (cannot copy to
// non-directory), unless the base holds a directory there: where
// baseDir says it may, they all go into it, and the build checks that
// it does (dirNeeded).
func severalToOne(dest string, items []item, baseDir bool) (into, dirNeeded bool, err error) {
	dirLike := func(it item) bool { return it.fromDir || it.src.isDir() }
	if dirLike(items[0]) {
		return true, false, nil
	}
	for _, it := range items[1:] {
		if !dirLike(it) {
			continue
		}
		if baseDir {
			return true, true, nil
		}
		return false, false, fmt.Errorf("%s: BuildKit copies the sources there one after another: %s, a file, is written at %s, and then %s, a directory, fails there (cannot copy to non-directory), unless the base holds a directory at %s; end the destination with / to copy them into a directory, or copy the directory first", dest, items[0].src.hint, dest, it.src.hint, dest)
	}
	return false, false, nil
}

// placedTwice refuses item i of a COPY when it places a path an earlier
// item of the same COPY placed, other than a directory both hold
// (COPY dir dir/x /d/): BuildKit copies one over the other, and pallet
// writes the COPY as one layer, in which a path is placed once. at holds
// the paths placed so far, with their items and kinds.
func placedTwice(n *parser.Node, items []item, at map[string]placedBy, i int, root string) error {
	it := items[i]
	files := it.files
	if files == nil {
		files = map[string]tree.Kind{"": tree.Dir} // an archive: its root alone is known
	}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		p := path.Join(root, rel)
		q, ok := at[p]
		if !ok {
			at[p] = placedBy{i, files[rel]}
			continue
		}
		if files[rel] == tree.Dir && q.kind == tree.Dir {
			continue
		}
		return plan.Errorf(it.pos, "%s is placed by two sources of this %s, %s and %s: BuildKit copies the later over the earlier, and pallet writes one layer per %s, in which a path is placed once; copy one of them with a %s of its own, or leave it out",
			p, strings.ToUpper(n.Value), items[q.item].src.hint, it.src.hint, strings.ToUpper(n.Value), strings.ToUpper(n.Value))
	}
	return nil
}

type placedBy struct {
	item int
	kind tree.Kind
}

// linkRules says how the placement of one of a COPY's items meets the
// links and directories the image already holds, as BuildKit's copy and
// unpack meet them.
func linkRules(pm *plan.Placement, s *stageState, it item, cleanDest string, intoDir bool) {
	if it.src.isDir() && !it.grouped && !s.platform.IsWindows() {
		// What the COPY copies is placed below its destination as
		// it is, not through the image's links, as BuildKit copies.
		pm.NoLinksBelow = cleanDest
		pm.NoLinksArchive = it.src.opaque() && !it.fromDir
	}
	// A file below the destination replaces a link of the image at
	// its path: BuildKit's copy removes the link (fsutil's
	// ensureEmptyFileTarget), and so does its unpack (go-archive).
	pm.ReplaceLinks = !s.platform.IsWindows()
	// A directory it copies below its destination gets its own mode
	// and owner where the image holds one: BuildKit's copy chmods
	// and chowns it (fsutil's copyDirectoryOnly and copyFileInfo),
	// and its unpack an archive's own entries (go-archive).
	pm.CopiedDirs = !s.platform.IsWindows()
	if !intoDir && !it.fromDir && !it.src.isDir() {
		// The file is the destination itself, which BuildKit
		// resolves through the image's links, the last one too
		// (on Windows, through the base's: the build's
		// windowsThrough).
		pm.FollowLink = true
	}
	if s.mayHoldDir(it, cleanDest, intoDir) {
		pm.IntoDirAs = it.name
	}
}

// copyOptions are a COPY's --chmod (whole or symbolic) and --chown, as
// evaluated.
type copyOptions struct {
	mode     *fs.FileMode
	sym      string
	uid, gid *int
}

// apply puts a COPY's --chmod and --chown on the placement of one of its
// items, as BuildKit applies them to what it copies and makes; fromStage
// says the COPY copies from a stage (--from).
func (o copyOptions) apply(pm *plan.Placement, s *stageState, it item, fromStage bool, cleanDest string) error {
	if it.src.opaque() && !s.platform.IsWindows() {
		// BuildKit's unpack gives each entry its tar header's mode
		// and, without --chown, its owner (go-archive's
		// createTarFile); a COPY --from of what a stage unpacked
		// copies them so, or as the stage's --chown owned them.
		pm.KeepArchiveModes = true
		pm.KeepArchiveOwners = o.uid == nil && (!fromStage || it.archiveOwners)
	}
	if fromStage && !s.platform.IsWindows() {
		// BuildKit copies each directory of the stage below the
		// destination with its own mode and owner, and makes the
		// destination and those above it as it makes a COPY's
		// (fsutil's MkdirAll): --chmod's mode or 0755, --chown's
		// owner or 0:0, never the stage's.
		pm.StageDest, pm.StageMade = cleanDest, tree.DirMeta{Mode: 0o755}
		if o.mode != nil {
			pm.StageMade.Mode = o.mode.Perm()
		}
		if o.uid != nil {
			pm.StageMade.UID, pm.StageMade.GID = *o.uid, *o.gid
		}
		if len(it.stageDirs) > 0 {
			// Copied from the stage, they take this COPY's
			// --chmod (its whole mode, as fsutil's copyFileInfo
			// gives it, or its symbolic changes to the stage's
			// mode, not those the stage made to what it copied)
			// and --chown.
			pm.StageDirs = map[string]tree.DirMeta{}
			for rel, m := range it.stageDirs {
				if o.mode != nil {
					m.Mode = *o.mode
				} else if o.sym != "" {
					set, err := modebits.ParseWithUmask(o.sym, 0)
					if err != nil {
						return plan.Wrap(it.pos, err)
					}
					m.Mode = set.Apply(m.Mode|fs.ModeDir) &^ fs.ModeDir
				}
				if o.uid != nil {
					m.UID, m.GID = *o.uid, *o.gid
				}
				pm.StageDirs[strings.TrimPrefix(path.Join(cleanDest, rel), "/")] = m
			}
		}
	}
	// BuildKit's --chmod does not reach the files an ADD unpacks:
	// they keep the archive's modes (plan.Placement.KeepArchiveModes). A
	// COPY --from of what a stage unpacked copies files, and does.
	if o.mode != nil && !(it.src.opaque() && !it.fromDir) {
		pm.Mode, pm.ModeChanges = *o.mode, nil
		if !s.platform.IsWindows() {
			// And to the directories it copies and makes.
			pm.DirMode = *o.mode
		}
	}
	if o.sym != "" && !(it.src.opaque() && !it.fromDir) {
		// A symbolic one changes each file's and directory's own
		// mode, after what the stage it comes from gave it; the
		// directories it makes on its way are 0755.
		pm.ModeChanges = append(slices.Clip(it.modeChanges), o.sym)
	}
	if o.uid != nil {
		pm.UID, pm.GID = *o.uid, *o.gid
		// BuildKit's unpack gives --chown's owner to what the
		// archive holds, and makes the directories it only implies
		// 0:0 (go-archive's createImpliedDirectories); a COPY --from
		// of what a stage unpacked copies them, and chowns them too.
		pm.ImpliedRootOwned = it.src.opaque() && !it.fromDir && !s.platform.IsWindows()
		// BuildKit makes the directories a COPY --chown needs with
		// its owner; the stage's owners a COPY --from keeps are not
		// theirs.
		pm.OwnNewDirs = !s.platform.IsWindows()
	}
	return nil
}

// copyFrom refuses the flags pallet does not take and resolves --from.
func (e *evaluator) copyFrom(s *stageState, n *parser.Node, op *copyOp) (*stageState, error) {
	switch {
	case op.parents:
		return nil, plan.Errorf(e.d.loc.token(n, "--parents"), "--parents is not supported: copy each directory to its destination")
	case len(op.sd.SourceContents) > 0:
		return nil, fmt.Errorf("here-documents are not supported: write the file into the build context and COPY it")
	case op.keepGit != nil:
		return nil, plan.Errorf(e.d.loc.token(n, "--keep-git-dir"), "--keep-git-dir applies to git sources, which pallet does not take: a recipe's source mode builds a pinned commit")
	}
	from, err := e.copySource(s, n, op.from)
	if err != nil {
		return nil, err
	}
	if from != nil && len(op.exclude) > 0 {
		return nil, plan.Errorf(e.d.loc.token(n, "--exclude="+op.exclude[0]), "--exclude is not supported with --from: copy the stage's directories one by one, or exclude the files where the stage copies them")
	}
	if op.excluded, err = e.checkExclude(n, op.exclude); err != nil {
		return nil, err
	}
	return from, nil
}

// checkExclude compiles a COPY's --exclude patterns, nil for none,
// refusing those that cannot be matched as written, at the flag that
// gives the one at fault, before any source is read: where a source's
// walk refused them, it was at the source, or at the COPY's last line.
func (e *evaluator) checkExclude(n *parser.Node, exclude []string) (*patterns, error) {
	if len(exclude) == 0 {
		return nil, nil
	}
	// The pattern BuildKit's parser gives holds U+FFFD for each byte
	// that is no UTF-8, which matches any such byte: refused, as an
	// ignore file's pattern is.
	if pos, v, bad := e.d.loc.notUTF8Flag(n, "--exclude="); bad {
		return nil, plan.Errorf(pos, "--exclude: pattern %q is not valid UTF-8", v)
	}
	ps, err := newPatterns(exclude)
	if err != nil {
		pos := e.d.loc.node(n)
		var pe *patternError
		if errors.As(err, &pe) && pe.i < len(exclude) {
			pos = e.d.loc.token(n, "--exclude="+exclude[pe.i])
		}
		return nil, plan.Wrap(pos, fmt.Errorf("--exclude: %w", err))
	}
	return ps, nil
}

// destination is where a COPY goes in stage s, cleaned, and whether it
// is a directory: written with a trailing /, or known as one.
// The working directory must be known (copy checks it).
func destination(s *stageState, raw string) (string, bool, error) {
	if raw == "." || raw == "" {
		// The working directory itself, as a directory (BuildKit's rule).
		raw = "./"
	}
	dest, err := system.NormalizePath(s.workdir, raw, s.platform.OS, true)
	if err != nil {
		return "", false, fmt.Errorf("destination %s: %w", raw, err)
	}
	if err := linuxBackslash(s, "destination", dest); err != nil {
		return "", false, err
	}
	// Refused here, before the stage's content records each parent.
	if _, err := tree.CleanPath(path.Clean(dest)); err != nil {
		return "", false, fmt.Errorf("destination: %w", err)
	}
	// On Windows, C:\K is the C:\k the stage holds already.
	clean := s.content.spell(path.Clean(dest))
	return clean, strings.HasSuffix(dest, "/") || strings.HasSuffix(dest, "/.") || s.content.isDir(clean), nil
}

// linuxBackslash refuses a path of a Linux stage holding a \ (written
// with # escape=` or in a JSON form): BuildKit makes it one name (COPY f
// /a\b/ writes /a\b/f), which a placement cannot say, since a dest's \
// separates directories there, as for a Windows user writing a recipe.
func linuxBackslash(s *stageState, what, p string) error {
	if s.platform.IsWindows() || !strings.Contains(p, `\`) {
		return nil
	}
	return fmt.Errorf("%s %s holds a \\, which in a Linux image BuildKit writes as a character of the name and pallet would read as a separator; write / between directories, or a name without \\ (for a Windows image, give the stage --platform windows/amd64)", what, p)
}

// mayHoldDir says whether a file item copied to dest, without a trailing
// /, may land in a directory of the stage's base: Docker copies it into a
// directory there, which only the build, reading the base, can see. What
// the stage's own COPYs put at dest the plan knows already, and so are
// the directories of an empty or built-in base (emptyBase). Windows
// stages too: BuildKit copies a file to C:\Windows\System32 into it.
func (s *stageState) mayHoldDir(it item, dest string, intoDir bool) bool {
	if intoDir || it.fromDir || it.files[""] != tree.File || s.emptyBase {
		return false
	}
	n, ok := s.content.nodes[dest]
	return !ok || n.maybeDir
}

// source resolves one source of a COPY or ADD, and says how many sources
// it stood for (a pattern's matches).
func (e *evaluator) source(s *stageState, op *copyOp, from *stageState, src string, pos plan.Pos) ([]item, int, error) {
	switch {
	case from != nil:
		return e.stageItems(from, src, pos)
	case isGit(src):
		return nil, 0, fmt.Errorf("%s: git sources are not supported; a recipe's source mode builds a pinned commit (git.repo, git.commit)", src)
	case isURL(src):
		items, err := e.urlItem(op, src, pos)
		return items, 1, err
	}
	return e.contextItems(s, op, src, pos)
}

// placeAt is where an item lands (its root in the stage) and the
// placement's destination: a directory's content goes into DIR/, a file
// into DIR/ under its own name, or at the destination itself.
func placeAt(it item, cleanDest string, intoDir bool) (root, dest string) {
	dirForm := func(p string) string {
		if p == "/" {
			return p
		}
		return p + "/"
	}
	switch {
	case it.fromDir:
		root = path.Join(cleanDest, it.rel)
		if it.src.isDir() {
			return root, dirForm(root)
		}
		return root, root
	case it.src.isDir():
		return cleanDest, dirForm(cleanDest)
	case intoDir:
		root = path.Join(cleanDest, it.name)
		if it.name == it.src.naturalName() {
			return root, dirForm(cleanDest)
		}
		return root, root
	}
	return cleanDest, cleanDest
}

// naturalName is the name a file source has in its artifact's tree.
func (s *source) naturalName() string {
	if s.kind == srcURL {
		return s.filename
	}
	return filepath.Base(s.path)
}

// copySource resolves --from: an earlier stage, planned already.
func (e *evaluator) copySource(s *stageState, n *parser.Node, from string) (*stageState, error) {
	if from == "" {
		return nil, nil
	}
	pos := e.d.loc.token(n, "--from="+from)
	if strings.Contains(from, "$") {
		return nil, plan.Errorf(pos, "--from=%s: variables are not expanded in --from (as in BuildKit); name the stage, or define one with FROM ${...} AS name", from)
	}
	ref := e.d.stageRef(from)
	if ref == nil {
		return nil, plan.Errorf(pos, "--from=%s: not a stage of this Dockerfile (stages: %s); pallet copies from earlier stages only, since it reads no image's files at plan time: put the files in the build context, or make them an artifact of a recipe", from, strings.Join(e.d.Stages(), ", "))
	}
	if ref.index >= s.def.index {
		return nil, plan.Errorf(pos, "--from=%s: the stage is defined at %s, not before this one", from, ref.pos)
	}
	return e.states[ref.index], nil
}

// modeOwner reads --chmod and --chown; nil when not given, and the mode
// nil when it is symbolic (symbolicMode).
func (e *evaluator) modeOwner(s *stageState, n *parser.Node, chmod, chown string) (*fs.FileMode, *int, *int, error) {
	var mode *fs.FileMode
	if m, err := recipe.ParseMode(chmod); err == nil {
		mode = &m
	}
	if chown == "" {
		return mode, nil, nil, nil
	}
	uid, gid, ok := numericOwner(chown)
	if !ok {
		var err error
		if uid, gid, ok, err = s.namedOwner(chown); err != nil {
			return nil, nil, nil, plan.Wrap(e.d.loc.token(n, "--chown="+chown), err)
		}
	}
	if !ok {
		return nil, nil, nil, plan.Errorf(e.d.loc.token(n, "--chown="+chown), "--chown=%s: pallet takes a numeric uid[:gid] here; a user or group name is read from the stage's /etc/passwd and /etc/group, which pallet reads only on a stage FROM scratch that copies them from the build context, not from a base image or an unpacked archive, nor through a link", chown)
	}
	return mode, &uid, &gid, nil
}

// chownName refuses a --chown that names a user or group (root is none,
// as BuildKit's llb reads it as 0) where BuildKit has no /etc/passwd to
// read it from: its file op
// reads a name from the filesystem the COPY copies onto, and with --link
// that is an empty layer, as it is on a scratch stage no COPY or WORKDIR
// has changed yet (client/llb fileop.go: the base input is -1, and
// solver/llbsolver/ops/file.go fails: invalid user index: -1; v0.34's
// dispatchCopy refuses a name with --link outright, chownByName).
func (e *evaluator) chownName(s *stageState, n *parser.Node, op *copyOp) error {
	chown := *op.chown
	if !namesOwner(chown) || s.platform.IsWindows() {
		return nil
	}
	pos := e.d.loc.token(n, "--chown="+chown)
	if op.link {
		return plan.Errorf(pos, "--chown=%s: a name, and with --link, BuildKit copies into an empty layer, where it finds no /etc/passwd to read it from (invalid user index: -1); give a numeric uid[:gid] (0 for root)", chown)
	}
	if s.base == image.Scratch && !s.touched {
		return plan.Errorf(pos, "--chown=%s: a name, which BuildKit reads in the stage's /etc/passwd, and the stage holds nothing yet (FROM scratch, no COPY or WORKDIR before this one), so it has none to read (invalid user index: -1); give a numeric uid[:gid] (0 for root)", chown)
	}
	return nil
}

// symbolicMode reads a --chmod that is not octal (mode is nil) as
// BuildKit's Dockerfile frontend does (dispatchCopy): a value that
// parses as a number is octal, and refused above 07777 or with digits
// other than octal ones; any other is a symbolic mode (chmod(1):
// u+x,g-w, a+rX) that github.com/tonistiigi/dchapes-mode parses, which
// fsutil's copy applies to each entry's own mode. On a Windows stage it
// is refused: BuildKit's copy on a Windows worker refuses it (fsutil
// copy_windows.go: non-octal mode not supported on windows), while one
// on Linux applies it to tar headers Windows does not read. "" when
// --chmod is octal or not given.
func (e *evaluator) symbolicMode(s *stageState, n *parser.Node, chmod string, mode *fs.FileMode) (string, error) {
	if chmod == "" || mode != nil {
		return "", nil
	}
	pos := e.d.loc.token(n, "--chmod="+chmod)
	octal := func() error {
		return plan.Errorf(pos, "--chmod=%s: an octal mode is between 0 and 07777 (BuildKit: invalid chmod parameter)", chmod)
	}
	if _, err := strconv.ParseUint(chmod, 8, 32); err == nil {
		return "", octal()
	}
	if _, err := modebits.Parse(chmod); err != nil {
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
			return "", octal()
		}
		return "", plan.Errorf(pos, "--chmod=%s: neither an octal mode (0755) nor a symbolic one (u+x,g-w, a+rX): %v", chmod, err)
	}
	if s.platform.IsWindows() {
		return "", plan.Errorf(pos, "--chmod=%s: a symbolic mode is refused on a Windows stage, as BuildKit on a Windows worker refuses it (non-octal mode not supported on windows); Windows reads no mode from a layer: leave it out, or give an octal one, which pallet writes and warns of", chmod)
	}
	return chmod, nil
}

func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// gitURL matches what BuildKit takes for a git repository rather than a
// download.
var gitURL = lazyre.New(`^(git@|git://|ssh://)|^https?://[^#]+\.git(#.*)?$`)

func isGit(s string) bool { return gitURL().MatchString(s) }

// sha256Checksum is the only --checksum pallet verifies downloads with.
var sha256Checksum = lazyre.New(`^sha256:([0-9a-f]{64})$`)

// urlItem is ADD URL: a download pinned by --checksum, placed as one
// file (unpacked only with --unpack=true, as BuildKit does).
func (e *evaluator) urlItem(op *copyOp, src string, pos plan.Pos) ([]item, error) {
	if !op.add {
		return nil, fmt.Errorf("%s: COPY does not download; use ADD --checksum=sha256:<digest>", src)
	}
	if *op.checksum == "" {
		return nil, fmt.Errorf("%s: a download needs --checksum=sha256:<64 hex digits>; pallet pins every download by its digest", src)
	}
	m := sha256Checksum().FindStringSubmatch(*op.checksum)
	if m == nil {
		return nil, fmt.Errorf("--checksum=%s: want sha256:<64 lower-case hex digits>", *op.checksum)
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: not a URL", src)
	}
	name := path.Base(u.Path)
	if name == "." || name == "/" || name == "" {
		name = "__unnamed__"
	}
	s := &source{kind: srcURL, url: src, sha256: m[1], filename: name, hint: name}
	it := item{src: s, name: name, pos: pos}
	if op.unpack != nil && *op.unpack {
		f, ok := archive.Detect(name)
		if ok && f == archive.Zip {
			// BuildKit's ADD copies a zip as it is too; say where zips
			// are unpacked instead.
			return nil, fmt.Errorf("%s: --unpack takes a tar archive (.tar, .tar.gz, .tgz, .tar.xz, .tar.zst, .tar.bz2), not a zip, as in BuildKit: unzip it before the build and COPY the directory, or use a url artifact with extract in a pallet.yaml recipe (docs/recipe.md), which unpacks zips", src)
		}
		if !ok {
			return nil, fmt.Errorf("%s: --unpack takes a tar archive named .tar, .tar.gz, .tgz, .tar.xz, .tar.zst or .tar.bz2", src)
		}
		s.unpack = true
		return []item{it}, nil
	}
	it.mode = 0o600
	it.files = oneFile
	return []item{it}, nil
}

// contextItems resolves a source in the build context: a path, or a
// pattern (*, ?, [...]) whose matches are each a source; a pattern that
// matches nothing copies nothing, as in BuildKit. It returns how many
// sources were found.
func (e *evaluator) contextItems(s *stageState, op *copyOp, src string, pos plan.Pos) ([]item, int, error) {
	rel, err := system.NormalizePath("/", src, s.platform.OS, false)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", src, err)
	}
	rel = strings.TrimPrefix(path.Clean(rel), "/")
	var hosts []string
	wild := containsWildcards(rel)
	if wild {
		ms, err := fs.Glob(os.DirFS(e.ctx.dir), rel)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", src, err)
		}
		for _, m := range ms {
			hosts = append(hosts, filepath.Join(e.ctx.dir, filepath.FromSlash(m)))
		}
	} else {
		hosts = []string{filepath.Join(e.ctx.dir, filepath.FromSlash(rel))}
	}
	var items []item
	for _, h := range hosts {
		it, ok, err := e.contextItem(op, src, h, wild, pos)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			items = append(items, it)
		}
	}
	return items, len(items), nil
}

// contextItem is one path of the context; ok is false when it is left
// out (ignored or excluded, and matched by a pattern).
func (e *evaluator) contextItem(op *copyOp, src, host string, wild bool, pos plan.Pos) (item, bool, error) {
	if _, err := os.Lstat(host); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			climbs := ""
			if slices.Contains(strings.Split(filepath.ToSlash(src), "/"), "..") {
				// BuildKit reads ../x as /x of the context: what the
				// reader meant beside it was never sent.
				climbs = " (a source cannot leave the context: .. stops at its root, as in BuildKit, so " + src + " was looked for as " + host + ")"
			}
			return item{}, false, fmt.Errorf("%s: not found in the build context %s%s", src, e.ctx.dir, climbs)
		}
		return item{}, false, err
	}
	real, err := e.ctx.inside(host)
	if err != nil {
		return item{}, false, fmt.Errorf("%s: %w", src, err)
	}
	info, err := os.Stat(host)
	if err != nil {
		return item{}, false, err
	}
	// The ignore file is asked of both names: BuildKit sends neither an
	// ignored path nor what a link leads to there, so a link to an
	// ignored file must not carry it into the image.
	ignored, err := e.ctx.ignored(host)
	if err != nil {
		return item{}, false, err
	}
	if !ignored && real != host {
		if ignored, err = e.ctx.ignored(real); err != nil {
			return item{}, false, err
		}
	}
	// A directory is walked where it really is: a walk does not enter a
	// symlink it starts from. Its name does not matter, only what is in
	// it; a file's name does, so a file keeps the path it was named by.
	base := host
	if info.IsDir() {
		base = real
	}
	// A file's filter is needed only for --exclude: a pattern's
	// 100,000 matches need not hold one each.
	var f *filter
	if info.IsDir() || len(op.exclude) > 0 {
		f = newFilter(e.ctx, base, op.exclude, op.excluded)
	}
	excludedMsg := func() (item, bool, error) {
		if wild {
			return item{}, false, nil
		}
		return item{}, false, fmt.Errorf("%s: excluded from the build context by %s", src, e.ctx.ignoreFile)
	}
	if info.IsDir() {
		s := &source{kind: srcDir, path: base, hint: e.ctx.rel(host), filter: f}
		files, err := e.shape(s)
		if err != nil {
			return item{}, false, err
		}
		if ignored && len(files) == 1 {
			return excludedMsg()
		}
		return item{src: s, files: files, pos: pos}, true, nil
	}
	if ignored {
		return excludedMsg()
	}
	if f != nil && f.exclude != nil {
		if out, err := f.skip(host); err != nil || out {
			return item{}, false, err
		}
	}
	if !info.Mode().IsRegular() {
		return item{}, false, tree.Unplaceable(src, info.Mode())
	}
	if op.add && (op.unpack == nil || *op.unpack) {
		unpack, err := tarArchive(host)
		if err != nil {
			return item{}, false, fmt.Errorf("%s: %w", src, err)
		}
		if unpack {
			s := &source{kind: srcArchive, path: host, hint: e.ctx.rel(host)}
			return item{src: s, pos: pos}, true, nil
		}
	}
	s := e.memberSource(host)
	return item{src: s, name: filepath.Base(host), files: oneFile, pos: pos, plain: real == host}, true, nil
}

// oneFile is the files of an item of one file, shared: no one writes an
// item's files.
var oneFile = map[string]tree.Kind{"": tree.File}

// groupFiles makes each run of context files a pattern matched in one
// directory (COPY src/* /app/), copied into the destination directory
// under their own names, one item: one artifact of that directory
// keeping only them, placed once, where each was an artifact and a
// placement of its own, fetched, cached and recorded on its own (35 KB a
// file: 100,000 matches took gigabytes, and minutes). The group is placed
// as its files were (linkRules), shown in the layer's history as they
// were (plan.Placement.Shows), and a COPY --from takes its files one by
// one (within), so the image is the same. Only a run of items next to
// each other is grouped, so the order of the placements stays. A file
// placed again by a later pattern is left out, as the copy's seen set
// leaves out a second item of one file.
func groupFiles(ctx *buildContext, items []item) []item {
	groupable := func(it item) bool { return it.plain && it.src.kind == srcFile }
	out := items[:0:0]
	taken := map[string]bool{}
	for i := 0; i < len(items); {
		it := items[i]
		if !groupable(it) {
			out = append(out, it)
			i++
			continue
		}
		if taken[it.src.path] {
			i++
			continue
		}
		dir := filepath.Dir(it.src.path)
		var run []int // indices in items
		for ; i < len(items) && groupable(items[i]) && items[i].pos == it.pos && filepath.Dir(items[i].src.path) == dir; i++ {
			if !taken[items[i].src.path] {
				taken[items[i].src.path] = true
				run = append(run, i)
			}
		}
		if len(run) == 1 {
			out = append(out, items[run[0]])
			continue
		}
		g := item{pos: it.pos, grouped: true, files: make(map[string]tree.Kind, len(run)+1)}
		g.files[""] = tree.Dir
		members := make([]string, len(run))
		for j, k := range run {
			g.files[items[k].name] = tree.File
			members[j] = items[k].src.path
		}
		f := &filter{exclBase: dir}
		f.keepOnly(members)
		g.src = &source{kind: srcDir, path: dir, hint: ctx.rel(dir), filter: f, filtered: true, members: members}
		out = append(out, g)
	}
	return out
}

// memberSource is the source of one file of a group (groupFiles): what
// it was before it was grouped, which names it.
func (e *evaluator) memberSource(host string) *source {
	return &source{kind: srcFile, path: host, hint: e.ctx.rel(host)}
}

// shape scans a directory source: its kept paths (with "" for itself),
// and whether its filter left anything out, which decides its kind.
func (e *evaluator) shape(s *source) (map[string]tree.Kind, error) {
	entries, filtered, err := scan(s.path, s.filter)
	if err != nil {
		return nil, err
	}
	s.filtered = filtered
	files := map[string]tree.Kind{"": tree.Dir}
	for _, en := range entries {
		files[en.rel] = en.kind
		for dir := path.Dir(en.rel); dir != "."; dir = path.Dir(dir) {
			files[dir] = tree.Dir
		}
	}
	return files, nil
}

// containsWildcards is BuildKit's test for a pattern source.
func containsWildcards(name string) bool {
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '*', '?', '[':
			return true
		case '\\':
			i++
		}
	}
	return false
}
