package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pallet-dev/pallet/internal/refname"
)

// CheckRepository refuses an image repository that is not a name by the
// distribution grammar docker, containerd and registries read: lower-case
// components separated by /, each of letters and digits joined by ., _,
// __ or dashes, after an optional registry host; at most 255 characters.
// An oci: layout would otherwise hold a name no tool resolves, and a
// docker: or registry: output refuse it only when it is written.
func CheckRepository(repo string) error {
	if err := refname.CheckName(repo); err != nil {
		why := "use lower-case letters and digits, joined by '.', '_', '__' or '-', in components separated by '/', as in example.com/team/app"
		// The grammar bounds the path after its first component where
		// that reads as a host (a namespace does too): the name's own
		// length may be over; a long name refused for its case or
		// characters is told that.
		switch domain, path, _ := refname.SplitName(repo); {
		case errors.Is(err, refname.ErrNameTooLong) && domain != "":
			why = fmt.Sprintf("its path after %s/ is %d characters long; at most %d are allowed", domain, len(path), refname.NameTotalLengthMax)
		case errors.Is(err, refname.ErrNameTooLong):
			why = fmt.Sprintf("it is %d characters long; at most %d are allowed", len(repo), refname.NameTotalLengthMax)
		case strings.ToLower(repo) != repo:
			why = "it must be lower-case"
		}
		return fmt.Errorf("repository %q is not an image name: %s", repo, why)
	}
	return nil
}

// CheckTag refuses a tag that is not one by the distribution grammar:
// [A-Za-z0-9_][A-Za-z0-9._-]{0,127}.
func CheckTag(tag string) error {
	if err := refname.CheckTag(tag); err != nil {
		return fmt.Errorf("tag %q is not an image tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", tag)
	}
	return nil
}
