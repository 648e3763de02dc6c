package build

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/pallet-dev/pallet/internal/plan"
)

// about says what each blob and manifest of im is, and where the front
// end asked for it, for the errors of a push (output.Image.About): a push
// that fails on a blob names the layer and its line, not only the HTTP
// request. perPlatform and atts hold, for each of im's platforms, its
// images (one per base) and their attestation manifests.
func (b *builder) about(im *plan.Image, perPlatform, atts [][]v1.Image) map[v1.Hash]string {
	type note struct {
		what, where string
		platforms   []string
	}
	notes := map[v1.Hash]*note{}
	add := func(d v1.Hash, what, platform string, where plan.Pos) {
		n := notes[d]
		if n == nil {
			n = &note{what: what}
			if where.Line > 0 {
				n.where = plan.Pos{File: where.File, Line: where.Line}.String()
			}
			notes[d] = n
		}
		for _, p := range n.platforms {
			if p == platform {
				return
			}
		}
		n.platforms = append(n.platforms, platform)
	}
	// Best effort: a manifest that cannot be read here fails the push
	// anyway, which then says so without this.
	manifest := func(img v1.Image, kind, platform string, pi *plan.PlatformImage) {
		d, err := img.Digest()
		if err != nil {
			return
		}
		m, err := img.Manifest()
		if err != nil {
			return
		}
		add(d, kind+" manifest", platform, plan.Pos{})
		add(m.Config.Digest, kind+" config", platform, plan.Pos{})
		own := 0
		if pi != nil {
			own = len(pi.Layers)
		}
		fromBase := len(m.Layers) - own
		for k, l := range m.Layers {
			switch {
			case pi == nil:
				add(l.Digest, kind+" layer", platform, plan.Pos{})
			case k < fromBase:
				add(l.Digest, "base layer", platform, pi.BasePos)
			default:
				pl := pi.Layers[k-fromBase]
				names := make([]string, 0, len(pl.Placements))
				var at plan.Pos
				for _, pm := range pl.Placements {
					names = append(names, b.plan.Artifacts[pm.Artifact].Name)
					if at.Line == 0 {
						at = pm.Pos
					}
				}
				add(l.Digest, "layer placing "+strings.Join(names, ", "), platform, at)
			}
		}
	}
	for i, pi := range im.Platforms {
		p := pi.Platform.String()
		for j, img := range perPlatform[i] {
			q := p
			if len(perPlatform[i]) > 1 && j < len(pi.Bases) {
				q += " on " + pi.Bases[j]
			}
			manifest(img, "image", q, pi)
		}
		for _, att := range atts[i] {
			manifest(att, "attestation", p, nil)
		}
	}
	out := make(map[v1.Hash]string, len(notes))
	for d, n := range notes {
		s := fmt.Sprintf("%s of %s", n.what, strings.Join(n.platforms, ", "))
		if n.where != "" {
			s += ", " + n.where
		}
		out[d] = s
	}
	return out
}
