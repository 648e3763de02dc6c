package recipe

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pallet-dev/pallet/internal/quoted"
)

// checkLinkerWords refuses an ldflags element whose variables, once
// expanded, change the words the go command reads from it. It joins the
// elements into one -ldflags value and splits that again into linker
// arguments, so a value with a space or a quote ("1 -extld=/tmp/x", from
// an --arg given to -X main.version={{V}}) would otherwise pass the
// linker flags of its choosing, a program to run as the linker among
// them. A value may hold spaces only inside a word the recipe quotes
// itself: -X 'main.who={{WHO}}'.
func checkLinkerWords(tmpl, expanded string, v Vars) error {
	ms := varRE().FindAllStringSubmatchIndex(tmpl, -1)
	if len(ms) == 0 || len(ms) > 0x1000 {
		// Past 4096 variables the private-use runes below would run
		// out; so many in one flag are the recipe's own doing.
		return nil
	}
	// Each variable stands as one private-use rune, so that the words of
	// the template are found before any value is put in; a "{{ V }}"
	// written with spaces is then still one word.
	var b strings.Builder
	vals := make(map[rune]string, len(ms))
	last := 0
	for i, m := range ms {
		tok := rune(0xE000 + i)
		b.WriteString(tmpl[last:m[0]])
		b.WriteRune(tok)
		vals[tok] = v[tmpl[m[2]:m[3]]]
		last = m[1]
	}
	b.WriteString(tmpl[last:])
	words, err := quoted.Split(b.String())
	if err != nil {
		// An element that does not split alone (a quote closed in the
		// next one) is the recipe's own text: the go command judges it.
		return nil
	}
	want := make([]string, len(words))
	for i, w := range words {
		var wb strings.Builder
		for _, r := range w {
			if val, ok := vals[r]; ok {
				wb.WriteString(val)
			} else {
				wb.WriteRune(r)
			}
		}
		want[i] = wb.String()
	}
	got, err := quoted.Split(expanded)
	// A word that is only a variable left empty ("-s -w {{EXTRA}}" with
	// EXTRA unset) is no word once expanded: an empty argument more or
	// less passes the linker no flag.
	noEmpty := func(ws []string) []string {
		return slices.DeleteFunc(ws, func(w string) bool { return w == "" })
	}
	if err == nil && slices.Equal(noEmpty(got), noEmpty(want)) {
		return nil
	}
	return fmt.Errorf("%q expands to %q, which the linker would read as other arguments than the recipe writes (%q): a variable's value holds a space or a quote; quote the word in the recipe (-X 'main.v={{V}}') if the value may hold spaces", tmpl, expanded, want)
}

// checkTagWords refuses a tags element whose variables, once expanded,
// hold what the go command splits -tags at (commas, spaces, quotes): the
// value would add build tags of its choosing, not name one.
func checkTagWords(tmpl string, v Vars) error {
	for _, m := range varRE().FindAllStringSubmatch(tmpl, -1) {
		if val := v[m[1]]; strings.ContainsAny(val, ", \t\n\r'\"") {
			return fmt.Errorf("{{%s}} is %q: a build tag holds no comma, space or quote, and go build would read more tags from it", m[1], val)
		}
	}
	return nil
}
