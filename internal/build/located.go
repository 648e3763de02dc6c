package build

import (
	"errors"
	"net/url"

	"github.com/pallet-dev/pallet/internal/artifact"
	"github.com/pallet-dev/pallet/internal/plan"
)

// located is err, a's failure, said where a wrote what failed (a.At),
// as a build and pallet fetch say it. A download from a's own URL that
// does not match its pin, said at a recipe's sha256: line, also says that
// pallet lock --update re-pins it, as a gomod sum: does: that line is
// what lock writes. A Dockerfile's ADD --checksum fails with the same
// error, but no command rewrites it; its front end records no position
// of a pin (Fields), only the instruction's, so the advice is left out
// there. So it is for a --mirror-url that serves other bytes under the
// pin's digest: the mirror is damaged, and lock, which asks upstream,
// would find the pin again.
func located(a *plan.Artifact, err error) error {
	pos := a.At(err)
	var (
		mm      *artifact.MismatchError
		located *plan.Error
	)
	_, atPin := a.Fields["sha256"]
	if !errors.As(err, &mm) || errors.As(err, &located) || !atPin {
		return plan.Wrap(pos, err)
	}
	if _, isURL := a.Request.Kind.(*artifact.URL); isURL && !fromOwnURL(a, mm) {
		return &plan.Error{Pos: pos, Msg: err.Error() + "; that is the mirror's copy (--mirror-url), which is damaged or not the pin's: mend the mirror (pallet fetch --mirror writes one) or build without it", Err: err}
	}
	if !fromOwnURL(a, mm) {
		return plan.Wrap(pos, err)
	}
	return &plan.Error{Pos: pos, Msg: err.Error() + "; once you know why they differ, pallet lock --update re-pins it", Err: err}
}

// fromOwnURL says whether mm is of a download from a's url, as the
// mismatch names it (its credentials redacted), not from a mirror.
func fromOwnURL(a *plan.Artifact, mm *artifact.MismatchError) bool {
	u, ok := a.Request.Kind.(*artifact.URL)
	if !ok {
		return false
	}
	if mm.URL == u.URL {
		return true
	}
	p, err := url.Parse(u.URL)
	return err == nil && mm.URL == p.Redacted()
}
