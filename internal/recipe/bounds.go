package recipe

import (
	"fmt"

	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/plan"

	"go.yaml.in/yaml/v3"

	"github.com/pallet-dev/pallet/internal/platform"
)

// Limits on the size of a recipe. Each refuses, at its line, a recipe that
// would otherwise take minutes to read or build an image no runtime loads.
const (
	// MaxKeys is the most keys one mapping (artifacts, args, labels...)
	// may have. yaml.v3 looks for duplicate keys by comparing every pair,
	// so 10,000 keys cost 5e7 comparisons and 100,000 keys minutes.
	MaxKeys = 10_000
	// MaxKeyPairs bounds those comparisons over the whole recipe, aliases
	// counted each time they are used, as the decoder repeats the check.
	MaxKeyPairs = 100_000_000
	// MaxPlacements is the most files: entries one image may have.
	MaxPlacements = plan.MaxPlacements
	// MaxLayers is the most layers the placements of an image may make on
	// one platform (placements without layer: each make one).
	MaxLayers = image.DockerMaxLayers
	// MaxGrowth bounds the bytes {{NAME}} adds to a recipe's values in
	// all, over every image and platform it plans. Each value is at most
	// 1 MiB and each config 4 MiB, but tags, destinations and paths are
	// no config: 100,000 tags of a 100 KB --arg took 10 GB before the
	// first was refused. Real recipes add kilobytes (a version, a
	// platform's name); 64 MiB leaves a config of 4 MiB made from
	// variables on 16 platforms.
	MaxGrowth = 64 << 20
)

// checkKeys refuses a document whose mappings would make the decoder
// compare too many pairs of keys: first without following aliases, to
// point at a mapping that is simply too big, then following them.
func checkKeys(file string, n *yaml.Node) error {
	direct := &keyPairs{}
	direct.walk(n, n.Line)
	if direct.err != nil {
		return &Error{Pos: plan.Pos{File: file, Line: direct.errLine}, Msg: direct.err.Error()}
	}
	aliased := &keyPairs{follow: true, memo: map[*yaml.Node]int{}}
	aliased.walk(n, n.Line)
	if aliased.err != nil {
		return &Error{Pos: plan.Pos{File: file, Line: aliased.errLine}, Msg: aliased.err.Error()}
	}
	return nil
}

// keyPairs counts the key comparisons the decoder makes under a node. The
// count saturates just above MaxKeyPairs, so an alias bomb costs no more
// than a walk of its definition.
type keyPairs struct {
	follow  bool
	memo    map[*yaml.Node]int // count of anchored nodes, when following
	err     error
	errLine int
}

// walk returns the count under n; at is the line errors about n are
// reported at: that of the key naming it, as Recipe.Line does.
func (k *keyPairs) walk(n *yaml.Node, at int) int {
	if k.err != nil || n == nil {
		return 0
	}
	if !k.follow || n.Anchor == "" {
		return k.count(n, at)
	}
	// An anchored value is counted once, however often it is aliased.
	if c, ok := k.memo[n]; ok {
		return c
	}
	// A value that contains its own alias is refused by the decoder;
	// counting it as nothing meanwhile ends the walk.
	k.memo[n] = 0
	c := k.count(n, at)
	k.memo[n] = c
	return c
}

// count is walk without the memo.
func (k *keyPairs) count(n *yaml.Node, at int) int {
	if n.Kind == yaml.AliasNode {
		if !k.follow {
			return 0
		}
		return k.walk(n.Alias, at)
	}
	c := 0
	if n.Kind == yaml.MappingNode {
		keys := len(n.Content) / 2
		if keys > MaxKeys {
			k.fail(at, fmt.Errorf("%d keys in one mapping; at most %d are allowed (yaml.v3 compares every pair of keys, so more would take minutes)", keys, MaxKeys))
			return 0
		}
		c = keys * (keys - 1) / 2
	}
	for i, ch := range n.Content {
		chAt := ch.Line
		if n.Kind == yaml.MappingNode && i%2 == 1 {
			chAt = n.Content[i-1].Line
		}
		c = min(c+k.walk(ch, chAt), MaxKeyPairs+1)
	}
	if c > MaxKeyPairs {
		if k.follow {
			k.fail(at, fmt.Errorf("document contains excessive aliasing: the aliases in this value make yaml.v3 compare over %d pairs of mapping keys", MaxKeyPairs))
		} else {
			k.fail(at, fmt.Errorf("the mappings up to this value have over %d pairs of keys for yaml.v3 to compare; split the recipe", MaxKeyPairs))
		}
	}
	return c
}

func (k *keyPairs) fail(line int, err error) {
	if k.err == nil {
		k.err, k.errLine = err, line
	}
}

// checkLayerCount refuses an image whose placements make more than
// MaxLayers layers on one of its platforms, at the placement that makes
// one too many. Templated platforms are counted once expanded, by the plan.
func (r *Recipe) checkLayerCount(name string, im *Image) error {
	for _, ps := range im.Platforms {
		pl, err := platform.Parse(ps)
		if err != nil {
			continue
		}
		layers := map[string]bool{}
		for i, f := range im.Files {
			if !f.AppliesTo(pl) {
				continue
			}
			key := "name:" + f.Layer
			if f.Layer == "" {
				key = fmt.Sprintf("own:%d", i)
			}
			layers[key] = true
			if len(layers) > MaxLayers {
				return r.Errorf(fmt.Sprintf("images.%s.files.%d", name, i), "image %s: this placement makes layer %d on %s; at most %d are allowed (Docker refuses images of more than %d layers, the base's included): group placements with layer: NAME", name, len(layers), pl, MaxLayers, image.DockerMaxLayers)
			}
		}
	}
	return nil
}
