package archive

import (
	"testing"

	"golang.org/x/text/encoding/charmap"
)

// decodeCP437 reads every byte as golang.org/x/text's code page 437 does,
// which it replaces in the program: a name decodes as it did.
func TestDecodeCP437AsCharmap(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{string(all), "caf\x82-\x81.txt", "", "plain"} {
		want, err := charmap.CodePage437.NewDecoder().String(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeCP437(s); got != want {
			t.Errorf("%q: %q, charmap says %q", s, got, want)
		}
	}
}
