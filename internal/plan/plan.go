// Package plan is the intermediate form of a build: which images, for
// which platforms, made of which artifact requests placed where, with
// every variable already substituted. Front ends (a pallet.yaml recipe, a
// Dockerfile) produce a Plan; the build carries it out. A Plan holds no
// trace of the syntax it came from, only a position (file, line, column)
// on each planned thing, so that an error found while building names the
// line that asked for the work, whatever the front end.
package plan

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/platform"
	"github.com/pallet-dev/pallet/internal/tree"
)

// Pos is a place in a front end's input. Line and Col count from 1; zero
// means unknown.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	switch {
	case p.Line > 0 && p.Col > 0:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return p.File
}

// Error is a problem located in a front end's input: found while reading
// it, or while carrying out what a line of it asked for (then Err is the
// cause).
type Error struct {
	Pos
	Msg string
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.File == "" {
		return e.Msg
	}
	// The column is left out: a line is what an author looks for, and
	// YAML columns of multi-line values mislead more than they help.
	return fmt.Sprintf("%s: %s", Pos{File: e.File, Line: e.Line}, e.Msg)
}

// Errorf returns an error located at pos.
func Errorf(pos Pos, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Wrap locates err at pos, unless it is located already (a deeper, more
// precise position wins).
func Wrap(pos Pos, err error) error {
	var located *Error
	if err == nil || errors.As(err, &located) {
		return err
	}
	return &Error{Pos: pos, Msg: err.Error(), Err: err}
}

// Plan is one build's work.
type Plan struct {
	// Source is the front end's input file (recorded in the build record).
	Source string
	// Dir resolves relative paths of bases (oci:DIR) and local inputs.
	Dir   string
	Epoch time.Time
	// Ignored, when set, says that the front end leaves the file or
	// directory at an absolute path out of its inputs even when it lies
	// inside one (a Dockerfile's .dockerignore): an output there is not
	// read back by the next build.
	Ignored func(path string) bool `json:"-"`
	// Images, in the order outputs list them.
	Images []*Image
	// Artifacts are the distinct artifact requests by key, each fetched
	// once however many images and placements use it.
	Artifacts map[string]*Artifact
	// Limits are what the input says of the bounds on its artifacts;
	// zero fields leave the build's.
	Limits Limits
}

// Limits bound what a build's inputs may cost. Zero means the default.
type Limits struct {
	// MaxDownload is the largest download, in bytes.
	MaxDownload int64
	// Stall is how long a transfer may move no byte.
	Stall time.Duration
	// DownloadTimeout is how long one download may take, from its
	// first request to its last byte, retries included.
	DownloadTimeout time.Duration
	// MaxExtract bounds the bytes one archive decompresses to.
	MaxExtract int64
	// MaxEntries bounds the entries read from one archive.
	MaxEntries int
	// MaxWindow bounds the decoder history an archive may claim.
	MaxWindow int64
}

// Keys returns the artifact keys in a fixed order.
func (p *Plan) Keys() []string {
	keys := make([]string, 0, len(p.Artifacts))
	for k := range p.Artifacts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Artifact is one artifact request with where it was asked for.
type Artifact struct {
	artifact.Request
	// Check enables the platform check of its executables when placed.
	Check bool
	Pos   Pos
	// Fields are where the settings an artifact.FieldError names were
	// written ("commit", "packages"), when they were.
	Fields map[string]Pos
}

// At is where the field of a's kind section that err blames was written,
// else where the section is.
func (a *Artifact) At(err error) Pos {
	var (
		fe *artifact.FieldError
		mm *artifact.MismatchError
	)
	field := ""
	switch {
	case errors.As(err, &fe):
		field = fe.Field
	case errors.As(err, &mm):
		field = "sha256"
	}
	if p, ok := a.Fields[field]; ok {
		return p
	}
	return a.Pos
}

// Key names an artifact request: one per artifact and platform.
func Key(name string, p platform.Platform) string { return name + "@" + p.String() }

// Image is one image for all its selected platforms.
type Image struct {
	Name       string
	Repository string
	Tags       []string
	Platforms  []*PlatformImage
	Pos        Pos
}

// PlatformImage is the work for one platform of an image: one manifest per
// base.
type PlatformImage struct {
	Platform platform.Platform
	// Bases are the images the layers go on: several build one image per
	// base from the same layers (a rebase per Windows version).
	Bases   []string
	BasePos Pos
	Layers  []*Layer
	Config  image.Config
	// Overwrite lets a later layer replace a file an earlier one placed,
	// as a Dockerfile's COPY does; without it that is an error.
	Overwrite bool
}

// Layer is a group of placements written as one layer.
type Layer struct {
	Name       string
	Placements []Placement
}

// Placement puts one fetched artifact in the image.
type Placement struct {
	// Artifact is the key into Plan.Artifacts.
	Artifact string
	Dest     string
	// Path, when set, places only this path of the artifact (relative to
	// its root): one file can be renamed (tree.Placement.From).
	Path string
	// PathPos is where Path was written, when the front end knows: a
	// path the artifact does not hold is a mistake there.
	PathPos Pos
	// LinkAs types, on Windows, the symlinks placed whose target the image
	// cannot tell (tree.Entry.LinkAs).
	LinkAs tree.LinkKind
	// Mode, when not zero, is the permission of every regular file placed.
	Mode os.FileMode
	// DirMode, when not zero, is the mode of the directories placed
	// and made on the way, as a Dockerfile COPY --chmod gives it to them
	// (tree.Placement.DirMode).
	DirMode os.FileMode
	// ModeChanges are symbolic modes (chmod(1): u+x,g-w, a+rX), applied
	// in order, after Mode and DirMode, to the mode of each file and
	// directory placed, as a Dockerfile COPY --chmod=u+x changes each
	// one's own mode; not to the directories made on the way
	// (tree.Placement.Chmod).
	ModeChanges []string
	UID, GID    int
	// IntoDirAs, when set, places a single file into the directory at
	// Dest, under this name, if the base holds one there (or a link to
	// one), and at Dest itself otherwise: what Docker's COPY does with a
	// destination without a trailing /, decided only once the base is
	// read.
	IntoDirAs string
	// DirNeeded, when set, is the destination of a Dockerfile COPY of
	// several sources, a file first and a directory after it, to a name
	// without a trailing /: the build refuses it unless the base holds
	// a directory there (or a link to one), into which BuildKit copies
	// them all; without one, it writes the file at that name and fails
	// at the directory (cannot copy to non-directory).
	DirNeeded string
	// OnlyIntoDir places the file only where it goes into a directory
	// (IntoDirAs): at Dest itself, a later file of the same Dockerfile
	// COPY replaces it, as BuildKit copies several sources one after
	// another.
	OnlyIntoDir bool
	// OwnNewDirs gives UID and GID to the directories the placement
	// makes on its way, where the image holds none, as Docker's COPY
	// --chown makes them (tree.Placement.OwnNewDirs).
	OwnNewDirs bool
	// ImpliedRootOwned leaves the directories an archive placed only
	// implies 0:0 whatever UID and GID say, as a Dockerfile ADD --chown
	// unpacks them (tree.Placement.ImpliedRootOwned).
	ImpliedRootOwned bool
	// KeepArchiveModes and KeepArchiveOwners give what an archive
	// unpacks the modes and owners its tar headers say, as a Dockerfile
	// ADD unpacks it (tree.Placement.KeepArchiveModes); a recipe's
	// extract normalizes them.
	KeepArchiveModes, KeepArchiveOwners bool
	// ReplaceLinks says the placement is a Dockerfile COPY or ADD, whose
	// files below its destination replace the links the image holds at
	// their paths, as Docker's COPY and ADD replace them
	// (tree.Placement.ReplaceLinks).
	ReplaceLinks bool
	// CopiedDirs says the placement is a Dockerfile COPY or ADD, which
	// gives the directories it copies below its destination their own
	// mode and owner where the image holds them already, as BuildKit's
	// copy and unpack do (tree.Placement.CopiedDirs).
	CopiedDirs bool
	// NoLinksBelow, when set, is the destination of the Dockerfile COPY or
	// ADD the placement is part of: Docker's COPY follows the image's
	// links on its way there, not below it, where a directory copied at
	// a link fails (tree.Placement.NoLinksBelow). NoLinksArchive says the
	// placement unpacks an archive, whose directories Docker's ADD puts
	// over such a link or through it, as the archive's entries say.
	NoLinksBelow   string
	NoLinksArchive bool
	// FollowLink says the placement is a Dockerfile COPY of one file to
	// its destination named without a trailing /, which Docker's COPY
	// resolves through the image's links, the last element too: at a
	// link that leads nowhere, the file is written where it leads
	// (tree.Placement.FollowLink).
	FollowLink bool
	// StageDest, when set, is the destination of the Dockerfile COPY
	// --from a stage the placement is part of, and StageMade the mode and
	// owner of the directories it makes at and above it; DirMode, UID,
	// GID and OwnNewDirs are then the stage's, for what it copies and
	// makes below it, as BuildKit copies each directory of the stage with
	// its own mode and owner (tree.Placement.StageDest).
	StageDest string
	StageMade tree.DirMeta
	// StageDirs are how the stage made the directories the placement
	// makes below StageDest, by path (tree.Placement.StageDirs).
	StageDirs map[string]tree.DirMeta
	// Shows, when set, are the names the layer's history gives what the
	// placement places, in place of its artifact's: a Dockerfile COPY
	// places the files a pattern matched in one directory as one
	// artifact, and names each as it did when each was an artifact of
	// its own, so that the image is the same.
	Shows []string
	// Licenses places the artifact's licence files under
	// /LICENSES/<artifact>/ (on the first placement of it in an image).
	Licenses bool
	Pos      Pos
}

// Replaced says the placement places nothing at dest, its destination
// once the base is read: a file OnlyIntoDir that found no directory
// there, which a later placement of its layer replaces.
func (pm Placement) Replaced(dest string) bool { return pm.OnlyIntoDir && dest == pm.Dest }

// MaxPlacements is the most placements a recipe's image may list, and
// the most sources a Dockerfile's COPY --from may take from stages for
// one platform (each repeats every source the stage placed).
const MaxPlacements = 10_000

// MaxEpoch is the last second of year 9999: image configs hold RFC 3339
// times, which have four-digit years.
const MaxEpoch = 253402300799

// errEpochRange says what an epoch may be.
var errEpochRange = fmt.Errorf("want Unix seconds from 0 to %d", MaxEpoch)

// CheckEpoch refuses an epoch before 1970 or after year 9999.
func CheckEpoch(sec int64) error {
	if sec < 0 || sec > MaxEpoch {
		return fmt.Errorf("epoch %d: %w", sec, errEpochRange)
	}
	return nil
}

// ParseEpoch reads an epoch given as text (SOURCE_DATE_EPOCH): Unix
// seconds from 0 to MaxEpoch.
func ParseEpoch(s string) (int64, error) {
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || CheckEpoch(sec) != nil {
		return 0, errEpochRange
	}
	return sec, nil
}
