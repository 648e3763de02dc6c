package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	chmod "github.com/tonistiigi/dchapes-mode"
	"golang.org/x/sync/errgroup"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/cache"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/layer"
	"github.com/pallet-dev/pallet/internal/output"
	"github.com/pallet-dev/pallet/internal/plan"
	"github.com/pallet-dev/pallet/internal/tree"
)

// layers writes pi's layers. Each layer's tree is made as soon as the
// artifacts it places are ready, and written at once unless it holds a
// Windows link, whose type comes from the whole image (its target may be
// in another layer, through other links): those wait for every tree.
// The checks across layers (a file placed twice, names equal under
// Windows' case folding) run once every tree is made, while the first
// layers may be written already (into the cache, where a whole layer
// does no harm); a failed check is the error reported, and stops the
// writing of the others.
func (b *builder) layers(ctx context.Context, im *plan.Image, pi *plan.PlatformImage) ([][]image.Layer, error) {
	name := im.Name
	format := layer.Linux
	if pi.Platform.IsWindows() {
		format = layer.Windows
	}
	n := len(pi.Layers)
	// raw are the layer trees as placed; trees are where they land in
	// the image, through what the bases and the layers below hold (Linux).
	raw := make([]*tree.Tree, n)
	trees := make([]*tree.Tree, n)
	whats := make([][]string, n)
	made := make([]chan struct{}, n)
	for i := range made {
		made[i] = make(chan struct{})
	}
	// allTrees closes once every tree is made; links is then the image's
	// link typing (Windows).
	allTrees := make(chan struct{})
	var links func(string) (bool, bool)
	// layers are each base's, in pi's order: the same but where a
	// Windows layer lists again a directory the bases give apart
	// descriptors (windowsDirVariants).
	layers := make([][]image.Layer, max(1, len(pi.Bases)))
	for j := range layers {
		layers[j] = make([]image.Layer, n)
	}
	g, gctx := errgroup.WithContext(ctx)
	var checkErr error
	g.Go(func() error {
		for i := range made {
			// A tree made is checked even when a layer writer has
			// failed since (select picks among ready cases at random):
			// the checks across layers say a Windows case collision
			// better than the writer, which meets it too, and always
			// the same way.
			select {
			case <-made[i]:
				continue
			default:
			}
			select {
			case <-made[i]:
			case <-gctx.Done():
				return nil // another goroutine's error is the one
			}
		}
		if format == layer.Linux {
			// Each layer was written through its bases alone, as soon
			// as its tree was made; placed through the layers below it
			// too, a layer that goes through their links or directories
			// lands elsewhere, and is written again.
			if !pi.Overwrite {
				if checkErr = sameFileInTwoLayers(name, pi, raw); checkErr != nil {
					return checkErr
				}
			}
			views, err := b.baseViews(gctx, name, pi)
			if err != nil {
				checkErr = err
				return err
			}
			placed, err := placeOnBases(name, pi, views, raw)
			if err != nil {
				checkErr = err
				return err
			}
			copy(trees, placed)
		} else {
			copy(trees, raw)
		}
		if checkErr = b.checkLayers(gctx, name, pi, format, trees, &links); checkErr != nil {
			return checkErr
		}
		close(allTrees)
		b.saveNew()
		return nil
	})
	for i, l := range pi.Layers {
		g.Go(func() error {
			t, what, err := b.layerTree(gctx, name, pi, l)
			if err != nil {
				return err
			}
			raw[i], whats[i] = t, what
			if format == layer.Linux {
				views, err := b.baseViews(gctx, name, pi)
				if err != nil {
					return err
				}
				if t, err = t.Through(views[0]); err != nil {
					return throughError(name, pi, l, raw[i], err)
				}
			}
			written := t
			close(made[i])
			opt := layer.Options{Format: format, Epoch: b.plan.Epoch, Compression: b.opt.Compression, Jobs: b.opt.Jobs, Compressors: b.compressors}
			if format == layer.Windows && hasLinks(t) {
				select {
				case <-allTrees:
				case <-gctx.Done():
					return gctx.Err()
				}
				opt.LinkTarget = links
			}
			if err := gctx.Err(); err != nil {
				return err
			}
			variants := []dirVariant{{bases: allBases(pi)}}
			if format == layer.Windows {
				if variants, err = b.windowsDirVariants(gctx, name, pi, t); err != nil {
					return err
				}
			}
			// The layer is keyed once every variant is.
			var keyed sync.Once
			var unkeyed atomic.Int32
			unkeyed.Store(int32(len(variants)))
			write := func(t *tree.Tree) (v1.Layer, error) {
				lay, err := b.layer(t, opt, func() {
					if unkeyed.Add(-1) <= 0 {
						keyed.Do(b.keyed)
					}
				})
				var bad *layer.EntryError
				if errors.As(err, &bad) {
					pm, from := b.entryOrigin(gctx, name, pi, l, t, bad.Path)
					return nil, plan.Errorf(pm.Pos, "image %s (%s), layer %s: %v%s", name, pi.Platform, l.Name, err, from)
				}
				if err != nil {
					// Said at the layer's line, as its other errors are: a
					// full disk there is this layer's to free room for.
					err = fmt.Errorf("image %s (%s), layer %s: %w", name, pi.Platform, l.Name, err)
					if len(l.Placements) > 0 && gctx.Err() == nil {
						err = plan.Wrap(l.Placements[0].Pos, err)
					}
					return nil, err
				}
				return lay, nil
			}
			if format != layer.Linux {
				for _, v := range variants {
					opt.BaseDir = v.dir
					lay, err := write(written)
					if err != nil {
						return err
					}
					for _, j := range v.bases {
						layers[j][i] = image.Layer{Layer: lay, CreatedBy: "pallet: place " + strings.Join(whats[i], ", ")}
					}
					b.prepare(ctx, im, lay)
				}
				return nil
			}
			lay, err := write(written)
			if err != nil {
				return err
			}
			select {
			case <-allTrees:
			case <-gctx.Done():
				return gctx.Err()
			}
			if !tree.Same(trees[i], written) {
				if lay, err = write(trees[i]); err != nil {
					return err
				}
			}
			for j := range layers {
				layers[j][i] = image.Layer{Layer: lay, CreatedBy: "pallet: place " + strings.Join(whats[i], ", ")}
			}
			b.prepare(ctx, im, lay)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if checkErr != nil {
			return nil, checkErr
		}
		return nil, err
	}
	return layers, nil
}

// saveNew saves, beside the layer writing, the memo shards this build
// made from nothing (cache.SaveNew): called once an image's layer trees
// are made, when its inputs are hashed and checked (the executables'
// facts), so that the end of the build writes only what changed since
// (the layer blobs', the outputs'). A cold build's inputs fill most of
// the memo's 256 shards, each a file created and renamed into place.
func (b *builder) saveNew() {
	if b.cache != nil {
		b.saving.Go(b.cache.SaveNew)
	}
}

// keyed counts one more layer's key as made. Once every layer's is, no
// step of the build looks up most of the files it hashed: the memo
// lets go of the entries it saved (cache.Release) while the layers are
// written, which for 100,000 files is 14 MB of the build's peak.
func (b *builder) keyed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.unkeyed--; b.unkeyed == 0 && b.cache != nil {
		b.saving.Go(b.cache.Release)
	}
}

// prepare hands layer l of im to the outputs that start on blobs early
// (a registry uploads it while the build goes on).
func (b *builder) prepare(ctx context.Context, im *plan.Image, l v1.Layer) {
	for _, t := range b.opt.Outputs {
		if p, ok := t.(output.Preparer); ok {
			p.Prepare(ctx, im.Repository, im.Tags, l)
		}
	}
}

// placementOf is the index in l of the placement that put the file at
// p (slash separated, from the root), guessed from the destinations:
// the one with the longest destination holding it, else the layer's
// first. Two placements into one directory are told apart by their
// marks only (placerAt), which this is the fallback of.
func placementOf(l *plan.Layer, p string) int {
	best, n := 0, -1
	for i, pm := range l.Placements {
		d := strings.Trim(path.Clean("/"+pm.Dest), "/")
		if (d == "" || p == d || strings.HasPrefix(p, d+"/")) && len(d) > n {
			best, n = i, len(d)
		}
	}
	return best
}

// entryOrigin is the placement of l that put the entry at p (slash
// separated, relative to the root) into t, l's tree (placerAt), and,
// when it unpacks an archive, the archive and the entry p came from, as
// a message says them: the archive is what a recipe's author must look
// into, and the image path alone does not name it. The entry is told
// from where the placement lands through the bases (destination: into a
// directory, through a Windows base's links); the artifact's tree is let
// go by then (placedAll): what layerTree kept of a placement of one file
// (singles) says its entry, and any other entry is the path below the
// destination, below the placement's path. A path that is not at or
// below the destination (a directory made on the way to it, or placed
// elsewhere through a Linux base's links) names no entry.
func (b *builder) entryOrigin(ctx context.Context, name string, pi *plan.PlatformImage, l *plan.Layer, t *tree.Tree, p string) (plan.Placement, string) {
	at := placerAt(l, t, entryAt(t, p))
	pm := l.Placements[at]
	a := b.plan.Artifacts[pm.Artifact]
	shown, strip, ok := artifact.ArchiveOf(a.Kind)
	if !ok {
		return pm, ""
	}
	dest, replaced, err := b.destination(ctx, name, pi, pm)
	if err != nil || replaced {
		return pm, ""
	}
	dest = strings.Trim(path.Clean("/"+dest), "/")
	if dest != "" && p != dest && !strings.HasPrefix(p, dest+"/") {
		return pm, ""
	}
	b.mu.Lock()
	entry := b.singles[placed{l, at}]
	b.mu.Unlock()
	if entry == "" && p != dest {
		entry = strings.TrimPrefix(p, dest+"/")
		if from := strings.Trim(path.Clean("/"+pm.Path), "/"); from != "" {
			entry = path.Join(from, entry)
		}
	}
	if entry == "" {
		return pm, ""
	}
	if strip > 0 {
		return pm, fmt.Sprintf(" (artifact %s: the archive %s, its entry named %s once extract.strip removed %d leading component(s))", a.Name, shown, layer.ShowPath(entry), strip)
	}
	return pm, fmt.Sprintf(" (artifact %s: the archive %s, its entry %s)", a.Name, shown, layer.ShowPath(entry))
}

// placed names the placement at of layer l.
type placed struct {
	l  *plan.Layer
	at int
}

// singleFile is the file a placement from of an artifact's tree t puts
// at, or into, its destination alone (tree.Placement), or "" when it
// places a directory's content.
func singleFile(t *tree.Tree, from string) string {
	from = strings.Trim(path.Clean("/"+from), "/")
	if from != "" {
		if e, ok := t.Get(from); ok && e.Kind != tree.Dir {
			return from
		}
		return ""
	}
	if t.Len() != 1 {
		return ""
	}
	for e := range t.All() {
		if e.Kind != tree.Dir {
			return e.Path
		}
	}
	return ""
}

// checkLayers applies the checks across pi's layers, and sets links to
// the image's link typing (Windows).
func (b *builder) checkLayers(ctx context.Context, name string, pi *plan.PlatformImage, format layer.Format, trees []*tree.Tree, links *func(string) (bool, bool)) error {
	if !pi.Overwrite {
		if err := sameFileInTwoLayers(name, pi, trees); err != nil {
			return err
		}
	}
	if format != layer.Windows {
		b.warnMissingLoaders(ctx, name, pi, trees)
		return nil
	}
	if !pi.Overwrite {
		var c *layer.CaseCollision
		if err := layer.CheckWindowsImage(trees...); errors.As(err, &c) {
			// Said where the later path was placed, with the archive
			// entry it came from: the layer's first placement may be
			// another artifact's.
			l := pi.Layers[c.Layer]
			for _, l := range pi.Layers {
				c.LayerNames = append(c.LayerNames, l.Name)
			}
			pm, from := b.entryOrigin(ctx, name, pi, l, trees[c.Layer], c.Later)
			return plan.Errorf(pm.Pos, "image %s (%s), layer %s: %v%s", name, pi.Platform, l.Name, err, from)
		}
	}
	// Links into a built-in base are typed by what it holds, and links
	// into another base by its view (what its layers pallet reads hold,
	// through its links); what none holds takes link: or a warning.
	resolve := trees
	var base func(string) (bool, bool)
	if bt := builtinBase(pi.Bases); bt != nil {
		resolve = append([]*tree.Tree{bt}, trees...)
	} else {
		var err error
		if base, err = b.windowsBasesKind(ctx, name, pi); err != nil {
			return err
		}
	}
	*links = layer.ImageLinks(base, resolve...)
	for i, t := range trees {
		for _, u := range layer.UntypedLinks(t, layer.Options{Format: format, LinkTarget: *links}) {
			// Said at the placement that took the link, where link: goes,
			// and with the archive entry it came from: a layer may place
			// several artifacts.
			pm, from := b.entryOrigin(ctx, name, pi, pi.Layers[i], t, u.Path)
			b.opt.Progress.Warn("%s: image %s (%s), layer %s: %s%s", pm.Pos, name, pi.Platform, pi.Layers[i].Name, u, from)
		}
	}
	return b.windowsBaseClash(ctx, name, pi, trees)
}

// windowsBasesKind says, for the Windows bases of pi, whether they hold
// a directory at a path (clean, relative to C:\), following their
// links, and whether that is known: only when every base knows, and
// all agree (the layers are written once for all of them).
func (b *builder) windowsBasesKind(ctx context.Context, name string, pi *plan.PlatformImage) (func(string) (bool, bool), error) {
	views, err := b.windowsViews(ctx, name, pi)
	if err != nil {
		return nil, err
	}
	return func(p string) (isDir, known bool) {
		for i, v := range views {
			_, kind, _, err := v.resolve(p)
			if err != nil || kind == winNone || i > 0 && (kind == winDir) != isDir {
				return false, false
			}
			isDir = kind == winDir
		}
		return isDir, len(views) > 0
	}, nil
}

// builtinBase is the tree of the built-in base every one of bases is, or
// nil: the layers are written once for all of them.
func builtinBase(bases []string) *tree.Tree {
	var t *tree.Tree
	for _, b := range bases {
		if t = image.BuiltinBaseTree(b); t == nil {
			return nil
		}
	}
	return t
}

// dirVariant is a layer written for some of an image's bases: those
// (indexes into its Bases) that give the directories it lists again
// what dir gives them (layer.Options.BaseDir).
type dirVariant struct {
	bases []int
	dir   func(string) *tree.WinDir
}

// allBases is every base of pi, for a layer written once for them all.
func allBases(pi *plan.PlatformImage) []int {
	all := make([]int, max(1, len(pi.Bases)))
	for j := range all {
		all[j] = j
	}
	return all
}

// windowsDirVariants groups pi's Windows bases by the descriptors and
// attributes they give the directories t lists again, each group to
// get its own layer: the Windows union shows a directory's from the top
// layer that lists it, so a layer written once for bases whose
// C:\Windows\System32 differ would give one of them the other's. Bases
// that agree, or give none (a built-in base, a base without
// descriptors), share one layer, as every base did before.
func (b *builder) windowsDirVariants(ctx context.Context, name string, pi *plan.PlatformImage, t *tree.Tree) ([]dirVariant, error) {
	views, err := b.windowsViews(ctx, name, pi)
	if err != nil {
		return nil, err
	}
	var out []dirVariant
	bySig := map[string]int{}
	for j, v := range views {
		h := sha256.New()
		for e := range t.All() {
			if e.Kind != tree.Dir {
				continue
			}
			if d := v.sds[layer.NTFSKey(e.Path)]; d != nil {
				fmt.Fprintf(h, "%s\x00%d\x00%s\x00", e.Path, d.Attr, d.RawSD)
			}
		}
		sig := hex.EncodeToString(h.Sum(nil))
		if k, ok := bySig[sig]; ok {
			out[k].bases = append(out[k].bases, j)
			continue
		}
		bySig[sig] = len(out)
		var dir func(string) *tree.WinDir
		if len(v.sds) > 0 {
			dir = func(p string) *tree.WinDir { return v.sds[layer.NTFSKey(p)] }
		}
		out = append(out, dirVariant{bases: []int{j}, dir: dir})
	}
	if len(out) == 0 {
		return []dirVariant{{bases: allBases(pi)}}, nil
	}
	return out, nil
}

// hasLinks says whether t holds a symlink.
func hasLinks(t *tree.Tree) bool {
	for e := range t.All() {
		if e.Kind == tree.Symlink {
			return true
		}
	}
	return false
}

// modeChanges is the function that applies symbolic modes one after
// another, as BuildKit's copy (fsutil) applies a COPY --chmod=u+x to
// each entry's own mode: parsed with a umask of 0, so "+x" is "a+x",
// and "X" adds execute to a directory or to a file with an execute
// bit. Nil for none.
func modeChanges(syms []string) (func(fs.FileMode) fs.FileMode, error) {
	if len(syms) == 0 {
		return nil, nil
	}
	sets := make([]chmod.Set, len(syms))
	for i, s := range syms {
		set, err := chmod.ParseWithUmask(s, 0)
		if err != nil {
			return nil, fmt.Errorf("mode %s: %w", s, err)
		}
		sets[i] = set
	}
	return func(m fs.FileMode) fs.FileMode {
		for _, set := range sets {
			m = set.Apply(m)
		}
		return m
	}, nil
}

// layerTree places l's artifacts (and their licences) into one tree.
func (b *builder) layerTree(ctx context.Context, name string, pi *plan.PlatformImage, l *plan.Layer) (*tree.Tree, []string, error) {
	t := tree.New()
	var what []string
	for i, pm := range l.Placements {
		res, err := b.await(ctx, pm.Artifact)
		if err != nil {
			return nil, nil, err
		}
		// Of an archive, the entry a placement of one file takes, for
		// the errors that name it once the tree is let go (entryOrigin).
		if _, _, ok := artifact.ArchiveOf(b.plan.Artifacts[pm.Artifact].Kind); ok {
			if f := singleFile(res.Tree, pm.Path); f != "" {
				b.mu.Lock()
				if b.singles == nil {
					b.singles = map[placed]string{}
				}
				b.singles[placed{l, i}] = f
				b.mu.Unlock()
			}
		}
		dest, replaced, err := b.destination(ctx, name, pi, pm)
		if err != nil {
			return nil, nil, err
		}
		if replaced {
			continue
		}
		place := tree.Placement{Mark: markOf(i), Dest: dest, FileMode: pm.Mode, DirMode: pm.DirMode, UID: pm.UID, GID: pm.GID, From: pm.Path, LinkAs: pm.LinkAs, OwnNewDirs: pm.OwnNewDirs, ImpliedRootOwned: pm.ImpliedRootOwned, KeepArchiveModes: pm.KeepArchiveModes, KeepArchiveOwners: pm.KeepArchiveOwners, ReplaceLinks: pm.ReplaceLinks, CopiedDirs: pm.CopiedDirs, NoLinksBelow: pm.NoLinksBelow, StageDest: pm.StageDest, StageMade: pm.StageMade, StageDirs: pm.StageDirs}
		if place.Chmod, err = modeChanges(pm.ModeChanges); err != nil {
			return nil, nil, plan.Wrap(pm.Pos, err)
		}
		// A file put into a directory the base holds at Dest is at a
		// name below the destination, which Docker's COPY does not
		// resolve.
		place.FollowLink = pm.FollowLink && dest == pm.Dest
		if b.plan.Artifacts[pm.Artifact].Check {
			needs, unrunnable, err := b.checkExecutables(res, place, pi.Platform)
			if err != nil {
				return nil, nil, plan.Wrap(placedAt(pm, err), fmt.Errorf("image %s (%s): %w", name, pi.Platform, err))
			}
			for _, e := range unrunnable {
				b.opt.Progress.Warn("%s: image %s (%s): /%s is a program (ELF) placed with no execute bit (mode %04o): no runtime will start it; give the placement a mode (a recipe's mode: \"0755\", a Dockerfile's --chmod=755)", pm.Pos, name, pi.Platform, e.Path, tree.UnixMode(e.Mode))
			}
			if len(needs) > 0 {
				b.mu.Lock()
				b.loaders[pi] = append(b.loaders[pi], needs...)
				b.mu.Unlock()
			}
		}
		placeTree := t.Place
		if b.lastPlacement(pm.Artifact) {
			placeTree = t.Move
		}
		if err := placeTree(res.Tree, place); err != nil {
			return nil, nil, plan.Wrap(placedAt(pm, err), fmt.Errorf("image %s (%s), layer %s: place %s at %s: %w%s", name, pi.Platform, l.Name, res.Record.Name, dest, err, metBefore(l, i, err)))
		}
		if pm.Shows != nil {
			for _, n := range pm.Shows {
				what = append(what, n+" "+dest)
			}
		} else {
			what = append(what, res.Record.Name+" "+dest)
		}
		if pm.Licenses && res.Licenses.Len() > 0 {
			dest := "/LICENSES/" + res.Record.Name + "/"
			lic, err := b.licencesPlaced(pi, &l.Placements[i], res)
			if err != nil {
				return nil, nil, plan.Wrap(pm.Pos, fmt.Errorf("image %s (%s), layer %s: licences of %s: %w", name, pi.Platform, l.Name, res.Record.Name, err))
			}
			// The licences go where the placement that ships them is
			// written, so a collision with them names its line, and
			// the other placement's.
			if err := t.Place(lic, tree.Placement{Dest: dest, Mark: markOf(i)}); err != nil {
				return nil, nil, plan.Wrap(pm.Pos, fmt.Errorf("image %s (%s), layer %s: place the licences of %s at %s: %w%s", name, pi.Platform, l.Name, res.Record.Name, dest, err, metBefore(l, i, err)))
			}
		}
	}
	b.placedAll(l)
	return t, what, nil
}

// markOf is the tree.Placement.Mark of placement i of a layer, which
// placerOf reads back; 0, none, past what a mark holds (a layer of
// 65,535 placements), where the errors guess the placement from the
// destinations (placementOf).
func markOf(i int) uint16 {
	if i+1 > 1<<16-1 {
		return 0
	}
	return uint16(i + 1)
}

// placerOf is the placement of l that put e into t, l's tree
// (placerAt).
func placerOf(l *plan.Layer, t *tree.Tree, e tree.Entry) plan.Placement {
	return l.Placements[placerAt(l, t, e)]
}

// placerAt is the index in l of the placement that put e into t, l's
// tree: the one its mark names, or for a directory t holds only as the
// parent of other entries (Entries makes it, or Through on the way), the
// one that put the first of them there. Where no mark says (a layer of
// more placements than a mark numbers, markOf), the one placementOf
// guesses from the destinations.
func placerAt(l *plan.Layer, t *tree.Tree, e tree.Entry) int {
	by := e.PlacedBy
	if by == 0 && e.Kind == tree.Dir {
		for f := range t.All() {
			if strings.HasPrefix(f.Path, e.Path+"/") && f.PlacedBy != 0 {
				by = f.PlacedBy
				break
			}
		}
	}
	if by == 0 || int(by) > len(l.Placements) {
		return placementOf(l, e.Path)
	}
	return int(by) - 1
}

// entryAt is t's entry at p, or where t holds none, the directory
// Entries makes there as the parent of others.
func entryAt(t *tree.Tree, p string) tree.Entry {
	if e, ok := t.Get(p); ok {
		return *e
	}
	return tree.Entry{Path: p, Kind: tree.Dir}
}

// metBefore is what a message of a collision (tree.Collision) placing
// placement i of l adds: which earlier placement put the entry met
// there, and where the recipe wrote each, as the position of the error
// says only the later. "" for any other error.
func metBefore(l *plan.Layer, i int, err error) string {
	var c *tree.Collision
	if !errors.As(err, &c) || c.Held.PlacedBy == 0 || int(c.Held.PlacedBy) > len(l.Placements) || int(c.Held.PlacedBy) == i+1 {
		return ""
	}
	first, later := l.Placements[c.Held.PlacedBy-1], l.Placements[i]
	if c.Held.Path == c.Path {
		return fmt.Sprintf(": /%s is placed at %s (%s) and again at %s (%s)", c.Path, first.Pos, artifactName(first), later.Pos, artifactName(later))
	}
	return fmt.Sprintf(": /%s is placed at %s (%s), and /%s at %s (%s)", c.Held.Path, first.Pos, artifactName(first), c.Path, later.Pos, artifactName(later))
}

// licencesPlaced is what of its artifact's licences pm ships for pi:
// pm alone ships them (plan.Placement.Licenses), for every placement of
// the artifact in pi; one with a path, those of the Go binaries it
// places (record.Artifact.LicenceKept). An image that takes two
// binaries of an artifact by their paths ships the licences of both, as
// its SBOM says.
func (b *builder) licencesPlaced(pi *plan.PlatformImage, pm *plan.Placement, res *artifact.Result) (*tree.Tree, error) {
	rec := b.ready[pm.Artifact].record
	var keeps []func(string) bool
	for _, l := range pi.Layers {
		for i := range l.Placements {
			if l.Placements[i].Artifact != pm.Artifact {
				continue
			}
			k := rec.LicenceKept(b.takenPath(&l.Placements[i]))
			if k == nil {
				return res.Licenses, nil
			}
			keeps = append(keeps, k)
		}
	}
	kept := func(p string) bool {
		return slices.ContainsFunc(keeps, func(k func(string) bool) bool { return k(p) })
	}
	var taken []tree.Entry
	// The directories above a file taken, and above an entry left out:
	// a directory that only left-out modules' licences were in
	// (github.com/cespare and github.com/cespare/xxhash, above
	// github.com/cespare/xxhash/v2) goes with them.
	holding, emptied := map[string]bool{}, map[string]bool{}
	mark := func(dirs map[string]bool, p string) {
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, e := range res.Licenses.Entries() {
		if !kept(e.Path) {
			mark(emptied, e.Path)
			continue
		}
		taken = append(taken, e)
		if e.Kind != tree.Dir {
			mark(holding, e.Path)
		}
	}
	t := tree.New()
	for _, e := range taken {
		if e.Kind == tree.Dir && emptied[e.Path] && !holding[e.Path] {
			continue
		}
		if err := t.Add(e); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// takenPath is the path of its artifact pm takes, as the record names
// it and as the licences it ships are chosen by: placedPath, but for a
// path written with a '\', which is the name placing it took
// (takenPaths), not always its split form. Asked once the artifact is
// ready.
func (b *builder) takenPath(pm *plan.Placement) string {
	if p, ok := b.ready[pm.Artifact].paths[pm.Path]; ok {
		return p
	}
	return placedPath(pm)
}

// placedPath is the path of its artifact pm takes, clean, as the record
// names it: "" for the whole artifact, or a path placing refuses.
func placedPath(pm *plan.Placement) string {
	f, err := tree.CleanPath(pm.Path)
	if err != nil || f == "." {
		return ""
	}
	return f
}

// lastPlacement says whether no placement of the artifact key but the
// one being made is left (see placedAll): no layer tree, of this image or
// another, reads its tree again, so the placement may take the tree's
// entries rather than copy them (tree.Move). A layer placing the artifact
// twice copies it both times.
func (b *builder) lastPlacement(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.unplaced[key] == 1
}

// placedAll counts l's placements as taken, and lets go of the tree of
// an artifact no layer tree will place again. The layer trees hold what
// they placed; keeping the artifact's tree as well, while the layers'
// keys are made and the memo of every file's digest is in memory, was a
// fifth of the live heap of a 100,000-file no-op. The record, the SBOMs
// and module licences were made from the tree before it was ready.
func (b *builder) placedAll(l *plan.Layer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pm := range l.Placements {
		if b.unplaced[pm.Artifact]--; b.unplaced[pm.Artifact] == 0 {
			b.ready[pm.Artifact].res.Tree = nil
		}
	}
}

// sameFileInTwoLayers refuses a path that two layers both put something
// at, unless both put a directory there: the later one would silently
// hide the earlier one's file, link or directory, which in a recipe is a
// mistake (two artifacts shipping one file), not a wish.
func sameFileInTwoLayers(name string, pi *plan.PlatformImage, trees []*tree.Tree) error {
	if len(trees) < 2 {
		return nil
	}
	// Of each path's first entry, what the message needs, not the
	// entry: 16 bytes beside each path where an Entry is 152, 15 MB for
	// 100,000 files.
	type placed struct {
		layer int
		kind  tree.Kind
		by    uint16
	}
	n := 0
	for _, t := range trees {
		n += t.Len()
	}
	// Sized once: grown by doubling, the map's copies were as much again.
	first := make(map[string]placed, n)
	for i, t := range trees {
		// Walked, not listed: Entries copies every entry, 152 bytes
		// each, which is what first was made small to spare.
		for e := range t.All() {
			f, ok := first[e.Path]
			if !ok {
				first[e.Path] = placed{i, e.Kind, e.PlacedBy}
				continue
			}
			// Directories merge; anything else in a later layer
			// replaces what an earlier one put there, a directory
			// with all it holds.
			if f.kind == tree.Dir && e.Kind == tree.Dir {
				continue
			}
			// Said at the placements that put the path there, each
			// layer's own: a layer may place several artifacts.
			a, b := pi.Layers[f.layer], pi.Layers[i]
			pa := placerOf(a, trees[f.layer], tree.Entry{Path: e.Path, Kind: f.kind, PlacedBy: f.by})
			pb := placerOf(b, t, e)
			if f.kind != tree.Dir && e.Kind != tree.Dir {
				return plan.Errorf(pb.Pos, "image %s (%s): /%s is placed by layer %s (%s, at %s) and again by layer %s (%s, at %s); the later one would hide the first: place it once, or put both placements in one layer to see which", name, pi.Platform, e.Path, a.Name, artifactName(pa), pa.Pos, b.Name, artifactName(pb), pb.Pos)
			}
			return plan.Errorf(pb.Pos, "image %s (%s): /%s is a %s in layer %s (%s, at %s) and a %s in layer %s (%s, at %s); the later one would replace the first, and hide what it holds: place them at different paths", name, pi.Platform, e.Path, kindName(f.kind), a.Name, artifactName(pa), pa.Pos, kindName(e.Kind), b.Name, artifactName(pb), pb.Pos)
		}
	}
	return nil
}

// artifactName is the name of the artifact pm places, as the recipe
// names it (its key is per platform).
func artifactName(pm plan.Placement) string {
	n, _, _ := strings.Cut(pm.Artifact, "@")
	return n
}

// kindName names a tree entry's kind in a sentence.
func kindName(k tree.Kind) string {
	if k == tree.Dir {
		return "directory"
	}
	return k.String()
}

// layer returns the layer for t: from the cache when the same tree was
// written before (no tar, no compression), else written now and kept.
// It calls keyed once the layer's key is made.
func (b *builder) layer(t *tree.Tree, opt layer.Options, keyed func()) (v1.Layer, error) {
	b.writers <- struct{}{}
	defer func() { <-b.writers }()
	return b.cachedBuild(t, opt, keyed, nil)
}

// baseLayer writes the layer of a built-in base (image.Resolver.Layer)
// as layer does one of the build's: the base is the same layer at every
// build with the same epoch, and its hives, tar and compression cost a
// push or a rebuild from the cache more than the rest of its own work
// (2.4 MB of garbage, 12 % of a push's CPU). It takes no writer's slot:
// the bases are resolved beside the layers, which may hold every slot
// while they wait for a base. Its files are keyed by the sums the base
// knows of them, and written only when the cache does not hold the layer.
func (b *builder) baseLayer(l image.BaseLayer) (v1.Layer, error) {
	return b.cachedBuild(l.Tree, l.Options, func() {}, &l)
}

// cachedBuild is layer without the bound on layers written at once. A
// tree whose files are not written yet comes with unwritten: the key is
// made from its sums, and its files written before anything reads them.
func (b *builder) cachedBuild(t *tree.Tree, opt layer.Options, keyed func(), unwritten *image.BaseLayer) (v1.Layer, error) {
	if opt.Compression == "" {
		opt.Compression = layer.Gzip
	}
	write := func() error { return nil }
	if unwritten != nil {
		write = unwritten.Write
	}
	c := b.cache
	if c == nil {
		if err := write(); err != nil {
			return nil, err
		}
		return layer.Build(t, b.work, opt)
	}
	fileDigest := c.FileDigest
	if unwritten != nil {
		fileDigest = func(path string, st tree.Stamp) (string, error) {
			if sum := unwritten.Sum(path); sum != "" {
				return sum, nil
			}
			return c.FileDigest(path, st)
		}
	}
	// The digests the key is made of are the ones the written layer must
	// have: layer.Build checks each file against them as it writes it.
	// They are kept sorted by file, not in a map: for 100,000 files a map
	// was 4 to 8 MB (twice that while it grew) at the peak of the build's
	// memory, the slice is 3 MB; the tree's order is mostly the files'
	// already, which sorts fast.
	sums := make([]sourceSum, 0, t.Len())
	keyer := cache.NewKeyer()
	err := layer.KeyParts(t, opt, func(path string, st tree.Stamp) (string, error) {
		sum, err := fileDigest(path, st)
		sums = append(sums, sourceSum{path, sum})
		return sum, err
	}, keyer.AddBytes)
	if err != nil {
		return nil, err
	}
	keyed()
	slices.SortFunc(sums, func(a, b sourceSum) int { return strings.Compare(a.source, b.source) })
	opt.Expect = func(path string) string {
		i, ok := slices.BinarySearchFunc(sums, path, func(s sourceSum, p string) int { return strings.Compare(s.source, p) })
		if !ok {
			return ""
		}
		return sums[i].sum
	}
	// A file this build hashed already (unpacked it, or read it for the
	// key once it had settled) is not hashed again as it is written.
	opt.Known = c.Checked
	key := keyer.Sum()
	// A layer pulled from a shared registry cache must be this tree's:
	// equal keys give identical tars, so its diff ID must be the digest of
	// the tar this build would write (read, not compressed).
	check := func(e cache.LayerEntry, _ string) error {
		if e.Compression != string(opt.Compression) {
			return fmt.Errorf("layer entry is %s, not %s", e.Compression, opt.Compression)
		}
		if err := write(); err != nil {
			return err
		}
		h := sha256.New()
		if err := layer.WriteTar(h, t.Entries(), opt); err != nil {
			return err
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != e.DiffID {
			return fmt.Errorf("layer entry claims diff ID %s, but this tree's tar is %s", e.DiffID, got)
		}
		return nil
	}
	return cache.Aside(c, "layer-"+key, func(bool) (v1.Layer, bool) { return cachedLayer(c, key, opt.Compression, check) }, func() (v1.Layer, error) {
		if err := write(); err != nil {
			return nil, err
		}
		tmp, release, err := c.TempDir()
		if err != nil {
			return nil, err
		}
		// Removed beside the rest of the build, as an artifact's work
		// directory is (makeReady), not before the layer goes to its
		// image: the blob is moved out of it by then, and removing a
		// directory on ext4 mounted with discard waits for the journal
		// while it commits (2-5 ms), between the layer and the outputs.
		// Run waits for it; the lock keeps the directory from other
		// builds' sweeps until it is gone.
		defer b.cleanup.Go(func() {
			os.RemoveAll(tmp)
			release()
		})
		l, err := layer.Build(t, tmp, opt)
		if err != nil {
			// What the memo said of the file is not remembered for the
			// next build, which reads it again: were the memo wrong, every
			// build would fail here.
			if ce := (*layer.ChangedError)(nil); errors.As(err, &ce) {
				c.Forget(ce.Source)
			}
			return nil, err
		}
		digest, _ := l.Digest()
		diffID, _ := l.DiffID()
		size, _ := l.Size()
		blob, err := c.PutLayer(key, l.(*layer.File).Path, cache.LayerEntry{Digest: digest.String(), DiffID: diffID.String(), Size: size, Compression: string(opt.Compression)})
		if err != nil {
			return nil, err
		}
		// The blob was hashed as it was written: the outputs and the next
		// build take that digest instead of reading it again.
		if err := c.Learn(blob, digest.Hex); err != nil {
			return nil, err
		}
		out := layer.Open(blob, digest, diffID, size, opt.Compression)
		out.Verified = true
		return out, nil
	})
}

// sourceSum is the sha256 a layer's key holds of the file at source.
type sourceSum struct{ source, sum string }

// cachedLayer is the cached layer for key, if its entry holds. The entry's
// diff ID and compression reach the image config as they are, so they are
// checked as the blob is: the diff ID against the blob decompressed, which
// the memo keeps while the blob is untouched (learned as it was put).
func cachedLayer(c *cache.Cache, key string, comp layer.Compression, check func(cache.LayerEntry, string) error) (v1.Layer, bool) {
	e, blob, ok := c.LayerChecked(key, check)
	if !ok || e.Compression != string(comp) {
		return nil, false
	}
	digest, err1 := v1.NewHash(e.Digest)
	diffID, err2 := v1.NewHash(e.DiffID)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	// The blob is checked against its digest here (from the cache's memory
	// of it while the file is untouched, else by reading it): a damaged
	// entry is a miss, rebuilt, rather than a failed output.
	sum, err := c.FileSHA256(blob)
	if err != nil || sum != digest.Hex {
		return nil, false
	}
	got, err := c.Remember(blob, cache.DiffIDFact(string(comp)), func(p string) (string, error) {
		h, err := layer.DiffIDOf(p, comp)
		return h.String(), err
	})
	if err != nil || got != e.DiffID {
		return nil, false
	}
	l := layer.Open(blob, digest, diffID, e.Size, comp)
	l.Verified = true
	return l, true
}

// placedAt is where the recipe wrote what err, from placing pm, blames:
// its path, when that names nothing in the artifact, or two things.
func placedAt(pm plan.Placement, err error) plan.Pos {
	if (errors.Is(err, tree.ErrNoPath) || errors.Is(err, tree.ErrAmbiguousPath)) && pm.PathPos.Line != 0 {
		return pm.PathPos
	}
	return pm.Pos
}
