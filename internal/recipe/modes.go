package recipe

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/plan"
)

// ReadModes reads a modes file (pallet build --modes): a map of
// artifact: mode, each choice remembering its line so that one the recipe
// refuses is said there.
func ReadModes(file string) (map[string]Choice, error) {
	out := map[string]Choice{}
	data, err := bounded.ReadFile(file, MaxSize)
	if err != nil {
		return nil, err
	}
	// A node, not a map, so that a choice the recipe refuses is said
	// at its line of this file.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, SyntaxError(file, data, err)
	}
	if len(doc.Content) > 0 {
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: want a map of artifact: mode (source, release, local or local:PATH)", file, m.Line)
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			// yaml.v3 checks keys only when it decodes into a map:
			// a second choice would win without a word.
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d: want an artifact's name as the key", file, k.Line)
			}
			if at, ok := seen[k.Value]; ok {
				return nil, fmt.Errorf("%s:%d: %s: chosen again (first at line %d)", file, k.Line, k.Value, at)
			}
			seen[k.Value] = k.Line
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d: %s: want a mode (source, release, local or local:PATH)", file, v.Line, k.Value)
			}
			c := ParseChoice(v.Value)
			c.From = plan.Pos{File: file, Line: k.Line}
			out[k.Value] = c
		}
	}
	return out, nil
}
