package lock

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/pallet-dev/pallet/internal/lazyre"
)

// hexRE is a sha256 as checksum files write it, in either case.
var hexRE = lazyre.New(`^[0-9a-fA-F]{64}$`)

// bsdRE is a line of a BSD-style list: "SHA256 (NAME) = HEX", as BSD's
// sha256 and sha256sum --tag write it, or "SHA2-256(NAME)= HEX", as
// OpenSSL 3's dgst does (1.1's wrote "SHA256(NAME)= HEX").
var bsdRE = lazyre.New(`^SHA(?:2-)?256 ?\((.+)\) ?= ?([0-9a-fA-F]{64})$`)

// lookupChecksum reads a checksum file and returns the sha256 it gives
// for the download whose URL path is file. It reads what upstreams
// publish: sha256sum's output ("HEX  NAME", "HEX *NAME" in binary mode,
// names possibly with a directory or "./"), BSD's "SHA256 (NAME) = HEX"
// and OpenSSL's "SHA2-256(NAME)= HEX", and a file holding one bare hash
// (NAME.sha256), which is taken as the hash of whatever it sits beside.
//
// An entry is the download's when its last element is the download's
// name, whatever its directory: lists are often made in a build's
// output directory (dist/app.tgz) that the URL does not show. Where the
// list names the file in several directories, one per platform
// (linux-amd64/app, linux-arm64/app), the entries whose whole path ends
// the URL's win, the longest such first, over those that only share its
// name. Two different hashes for the entries that win are an error, as
// either could be the wrong one.
func lookupChecksum(r io.Reader, file string) (string, error) {
	name := path.Base(file)
	var (
		found, other, bare string
		// best is how far found's path agrees with file's (see
		// suffixRank); -1 before any entry for name.
		best    = -1
		entries int
		// html says the first line that is not blank opens a tag: a web
		// page (a login form, a mirror's error page) served with 200.
		html, first = false, true
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxChecksumLine)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if first {
			html, first = strings.HasPrefix(line, "<"), false
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		var sum, entry string
		if m := bsdRE().FindStringSubmatch(line); m != nil {
			entry, sum = m[1], m[2]
		} else {
			f := strings.Fields(line)
			if len(f) == 0 || !hexRE().MatchString(f[0]) {
				continue
			}
			sum = f[0]
			entry = strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, f[0])), "*")
		}
		sum = strings.ToLower(sum)
		entries++
		if entry == "" {
			bare = sum
			continue
		}
		if path.Base(entry) != name {
			continue
		}
		switch rank := suffixRank(entry, file); {
		case rank > best:
			best, found, other = rank, sum, ""
		case rank == best && sum != found:
			other = sum
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return "", fmt.Errorf("a line longer than %d bytes: not a list of checksums", maxChecksumLine)
	} else if err != nil {
		return "", err
	}
	switch {
	case other != "":
		return "", fmt.Errorf("two different sha256 for %s (%s and %s)", name, found, other)
	case found != "":
		return found, nil
	case bare != "" && entries == 1:
		return bare, nil
	case html && entries == 0:
		return "", fmt.Errorf("it is a web page (HTML), not a list of checksums: a login or error page? (no sha256 for %s in it)", name)
	}
	return "", fmt.Errorf("no sha256 for %s in it (%d entries)", name, entries)
}

// maxChecksumLine bounds a line of a checksum file: a hash and a path.
const maxChecksumLine = 1 << 20

// suffixRank says how far entry, a path a checksum file names, agrees
// with file, a URL's path: the number of its elements when they are all
// the last of file's (app.tgz, or linux-amd64/app.tgz for
// .../linux-amd64/app.tgz), and 0 when only some are (dist/app.tgz).
func suffixRank(entry, file string) int {
	e := strings.Split(strings.TrimPrefix(path.Clean("/"+entry), "/"), "/")
	f := strings.Split(strings.TrimPrefix(path.Clean("/"+file), "/"), "/")
	if len(e) > len(f) {
		return 0
	}
	for i := range e {
		if e[len(e)-1-i] != f[len(f)-1-i] {
			return 0
		}
	}
	return len(e)
}
