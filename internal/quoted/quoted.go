// Package quoted splits a value into words as the go command does, in
// each of its three ways: cmd/internal/quoted.Split (-ldflags, GOFLAGS,
// the linker's -extldflags, CGO_*FLAGS), go/build's for #cgo lines, and
// cmd/go's for pkg-config's answer. pallet reads these where it must see
// the words go and the compilers see, and one reading keeps them the
// same.
package quoted

import (
	"fmt"
	"strings"
	"unicode"
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

// SplitCgo splits the flags of a #cgo line as go build does (go/build
// splitQuoted): at runs of white space, but not within single or double
// quotes, which are taken out; a backslash takes the next character as
// it is. strings.Fields made two of -I"${SRCDIR}/../my inc", and pallet would
// have looked for headers in neither.
func SplitCgo(s string) []string {
	var (
		out     []string
		arg     strings.Builder
		started bool // an argument is open, if only "" so far
		quote   rune
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '\\':
			escaped = true
			continue
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
		case r == '"' || r == '\'':
			quote, started = r, true
			continue
		case unicode.IsSpace(r):
			if started {
				out = append(out, arg.String())
				arg.Reset()
				started = false
			}
			continue
		}
		arg.WriteRune(r)
		started = true
	}
	if started {
		out = append(out, arg.String())
	}
	return out
}

// SplitPkgConfig splits pkg-config's answer as the go command does
// (splitPkgConfigOutput): words at blanks, as a POSIX shell reads them
// without expansions; a backslash outside quotes takes the next
// character, '...' takes all as it is, and within "..." a backslash
// escapes only $ ` " \ and a newline. An answer it cannot read (a quote
// not closed) fails go build: nil.
func SplitPkgConfig(s string) []string {
	var (
		out     []string
		word    []byte
		started bool
		quote   byte
		escaped bool
	)
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case escaped:
			escaped = false
			if quote == '"' && !strings.ContainsRune("$`\"\\\n", rune(b)) {
				word = append(word, '\\')
			}
			if b != '\n' {
				word = append(word, b)
			}
			started = true
		case quote == '\'':
			if b == '\'' {
				quote = 0
			} else {
				word = append(word, b)
			}
		case b == '\\':
			escaped, started = true, true
		case quote == '"':
			if b == '"' {
				quote = 0
			} else {
				word = append(word, b)
			}
		case b == '\'' || b == '"':
			quote, started = b, true
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
			if started {
				out = append(out, string(word))
				word, started = word[:0], false
			}
		default:
			word = append(word, b)
			started = true
		}
	}
	if quote != 0 || escaped {
		return nil
	}
	if started {
		out = append(out, string(word))
	}
	return out
}
