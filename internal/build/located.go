package build

import (
	"errors"

	"github.com/pallet-dev/pallet/internal/archive"
	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
)

// located is err, a's failure, said where a wrote what failed (a.At),
// as a build and pallet fetch say it. A download that does not match its
// pin, said at a recipe's sha256: line, also says what to do: from a's
// own URL, that pallet lock --update re-pins it, as a gomod sum: does
// (that line is what lock writes); from a --mirror-url, that the mirror
// is at fault, since lock asks upstream and would find the pin again. A
// Dockerfile's ADD --checksum fails with the same error, but no command
// rewrites it; its front end records no position of a pin (Fields),
// only the instruction's, so no advice is added there.
func located(a *plan.Artifact, err error) error {
	pos := a.At(err)
	var (
		mm      *artifact.MismatchError
		located *plan.Error
	)
	if errors.As(err, &located) {
		return plan.Wrap(pos, err)
	}
	// An archive over a limit says what raises it: the limits are set
	// for hostile archives, and a real one may be larger.
	if s := archive.LimitSetting(err); s != "" {
		return &plan.Error{Pos: pos, Msg: err.Error() + "; if the archive is what you expect, raise the limit with " + s, Err: err}
	}
	_, atPin := a.Fields["sha256"]
	u, isURL := a.Request.Kind.(*artifact.URL)
	if !errors.As(err, &mm) || !atPin || !isURL {
		return plan.Wrap(pos, err)
	}
	advice := "; once you know why they differ, pallet lock --update re-pins it"
	if !sameURL(u.URL, mm.URL) {
		advice = "; that is the mirror's copy (--mirror-url), which is damaged or not the pin's: mend the mirror (pallet fetch --mirror writes one) or build without it"
	}
	return &plan.Error{Pos: pos, Msg: err.Error() + advice, Err: err}
}

// sameURL says whether got, the URL a mismatch names (as
// artifact.ShownURL shows it), is pinned, the recipe's url, not a
// mirror's.
func sameURL(pinned, got string) bool {
	return got == pinned || got == artifact.ShownURL(pinned)
}
