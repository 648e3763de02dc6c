package lock

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/pallet-dev/pallet/internal/lazyre"
)

// hexRE is a sha256 as checksum files write it, in either case.
var hexRE = lazyre.New(`^[0-9a-fA-F]{64}$`)

// bsdRE is a line of a BSD-style list: "SHA256 (NAME) = HEX".
var bsdRE = lazyre.New(`^SHA256 ?\((.+)\) ?= ?([0-9a-fA-F]{64})$`)

// lookupChecksum reads a checksum file and returns the sha256 it gives
// for the file called name. It reads what upstreams publish: sha256sum's
// output ("HEX  NAME", "HEX *NAME" in binary mode, names possibly with a
// directory or "./"), BSD's "SHA256 (NAME) = HEX", and a file holding one
// bare hash (NAME.sha256), which is taken as the hash of whatever it sits
// beside. Entries for other names are skipped; two different hashes for
// one name are an error, as either could be the wrong one.
func lookupChecksum(r io.Reader, name string) (string, error) {
	var (
		found, bare string
		entries     int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var sum, file string
		if m := bsdRE().FindStringSubmatch(line); m != nil {
			file, sum = m[1], m[2]
		} else {
			f := strings.Fields(line)
			if len(f) == 0 || !hexRE().MatchString(f[0]) {
				continue
			}
			sum = f[0]
			file = strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, f[0])), "*")
		}
		sum = strings.ToLower(sum)
		entries++
		if file == "" {
			bare = sum
			continue
		}
		if file != name && path.Base(file) != name {
			continue
		}
		if found != "" && found != sum {
			return "", fmt.Errorf("two different sha256 for %s (%s and %s)", name, found, sum)
		}
		found = sum
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	switch {
	case found != "":
		return found, nil
	case bare != "" && entries == 1:
		return bare, nil
	}
	return "", fmt.Errorf("no sha256 for %s in it (%d entries)", name, entries)
}
