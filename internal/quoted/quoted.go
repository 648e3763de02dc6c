// Package quoted splits a value into words as the go command does
// (cmd/internal/quoted.Split): -ldflags, GOFLAGS and the linker's
// -extldflags. pallet reads these where it must see the words go and
// the linker see, and one reading keeps them the same.
package quoted

import (
	"fmt"
	"strings"
)

// Split splits s into words at spaces; a word that begins with ' or "
// runs to the next such quote, quotes inside a word being plain
// characters.
func Split(s string) ([]string, error) {
	var words []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			break
		}
		if q := s[0]; q == '"' || q == '\'' {
			i := strings.IndexByte(s[1:], q)
			if i < 0 {
				return nil, fmt.Errorf("unterminated %c string", q)
			}
			words = append(words, s[1:1+i])
			s = s[2+i:]
			continue
		}
		i := strings.IndexAny(s, " \t\n\r")
		if i < 0 {
			i = len(s)
		}
		words = append(words, s[:i])
		s = s[i:]
	}
	return words, nil
}
