package dockerfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/pallet-dev/pallet/internal/bounded"
	"github.com/pallet-dev/pallet/internal/image"
	"github.com/pallet-dev/pallet/internal/tree"
)

// maxUserFile bounds the /etc/passwd or /etc/group read, as BuildKit
// bounds it (solver/llbsolver/ops/user_linux.go maxUserFileBytes): a
// longer one fails its COPY, wherever the name's line is.
const maxUserFile = 10 << 20

// stageFile is the build-context file stage s holds at p, "" when it
// holds none there; known is false where s may hold one pallet cannot
// read when it plans: a stage not FROM scratch (its base is read only
// when it builds), a Windows one, or one whose path there is not a
// context file (inside an unpacked archive, a download, a link).
func (s *stageState) stageFile(p string) (file string, known bool) {
	if s.base != image.Scratch || s.platform.IsWindows() {
		return "", false
	}
	c := s.content
	if c.nodes["/"].opaque {
		return "", false
	}
	if _, ok := c.opaqueAbove(p); ok {
		return "", false
	}
	// BuildKit opens p through the stage's links (fs.RootPath), which
	// pallet does not follow when it plans; a file on the way is no
	// directory, and the open's ENOTDIR is no file to BuildKit.
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if n, ok := c.nodes[d]; ok && n.kind == tree.Symlink {
			return "", false
		} else if ok && n.kind != tree.Dir {
			return "", true
		}
	}
	n, ok := c.nodes[p]
	if !ok {
		return "", true
	}
	if n.kind != tree.File || n.by < 0 {
		return "", false
	}
	q := c.placed[n.by]
	switch q.src.kind {
	case srcFile:
		return q.src.path, true
	case srcDir:
		return hostPath(q.src, relTo(p, q.root)), true
	}
	return "", false
}

// namedOwner resolves an owner (--chown's, or USER's for WORKDIR) that
// names a user or group on a stage FROM scratch, from the /etc/passwd
// and /etc/group its COPYs put there, as BuildKit's readUser reads them
// in the stage's filesystem: a user name gives the first line's uid and
// gid, a group name the first line's gid; one the file lacks, or a file
// the stage lacks, leaves the ids 0 (a group name, the user's gid). ok is
// false where the stage may hold a file pallet cannot read.
func (s *stageState) namedOwner(spec string) (uid, gid int, ok bool, err error) {
	u, g, _ := strings.Cut(spec, ":")
	if n, ok := ownerID(u); ok {
		uid, gid = n, n
	} else if u != "" { // none (:gid) is 0 to BuildKit's llb, never looked up
		file, known := s.stageFile("/etc/passwd")
		if !known {
			return 0, 0, false, nil
		}
		if file != "" {
			var found bool
			if uid, gid, found, err = lookup(file, u, true); err != nil || !found {
				uid, gid = 0, 0
			}
			if err != nil {
				return 0, 0, false, err
			}
		}
	}
	if g == "" {
		return uid, gid, true, nil
	}
	if n, ok := ownerID(g); ok {
		return uid, n, true, nil
	}
	file, known := s.stageFile("/etc/group")
	if !known {
		return 0, 0, false, nil
	}
	if file != "" {
		_, id, found, err := lookup(file, g, false)
		if err != nil {
			return 0, 0, false, err
		}
		if found {
			gid = id
		}
	}
	return uid, gid, true, nil
}

// lookup finds name in a passwd file (name:pass:uid:gid:...) or a group
// file (name:pass:gid:...), as github.com/moby/sys/user parses them:
// lines trimmed, empty ones skipped (and in a group file those starting
// with #), an id that is not a number read as 0; the first line wins,
// but the whole file is read, as ParsePasswdFilter and ParseGroupFilter
// read it: a line longer than their scanner takes (64 KiB, 1 MiB in a
// group file), or a file longer than maxUserFile, before the name's
// line or after it, fails BuildKit's COPY, and fails here.
func lookup(file, name string, passwd bool) (uid, gid int, found bool, err error) {
	// Opened without waiting for a writer, and only a regular file: the
	// COPY refused a named pipe, but one may take the file's place since.
	f, err := bounded.Open(file)
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	if err := bounded.Regular(f); err != nil {
		return 0, 0, false, fmt.Errorf("%s: %w", file, err)
	}
	lr := &io.LimitedReader{R: f, N: maxUserFile + 1}
	sc := bufio.NewScanner(lr)
	which := "/etc/passwd"
	if !passwd {
		sc.Buffer(nil, 1024*1024)
		which = "/etc/group"
	}
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if found || len(line) == 0 || !passwd && line[0] == '#' {
			continue
		}
		parts := strings.Split(string(line), ":")
		if parts[0] != name {
			continue
		}
		id := func(i int) int {
			if i >= len(parts) {
				return 0
			}
			n, _ := strconv.Atoi(parts[i])
			return n
		}
		found = true
		if passwd {
			uid, gid = id(2), id(3)
		} else {
			gid = id(2)
		}
	}
	err = sc.Err()
	if lr.N == 0 {
		err = fmt.Errorf("%q exceeds %d bytes", which, maxUserFile)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("the stage's %s (%s), where BuildKit looks %s up: %w", which, file, name, err)
	}
	return uid, gid, found, nil
}

// numericOwner reads uid[:gid] ("root" is 0); a uid alone is also the
// gid, as BuildKit does.
func numericOwner(s string) (int, int, bool) {
	u, g, hasGroup := strings.Cut(s, ":")
	uid, ok := ownerID(u)
	if u == "" && hasGroup {
		// none (:gid) is 0 to BuildKit's llb (WithUser), not a name
		uid, ok = 0, true
	}
	if !ok {
		return 0, 0, false
	}
	if !hasGroup || g == "" {
		return uid, uid, true
	}
	gid, ok := ownerID(g)
	return uid, gid, ok
}

// namesOwner says an owner spec (uid[:gid]) names a user or a group
// BuildKit looks up: root is none, its llb reads it as 0 (parseUID).
func namesOwner(spec string) bool {
	u, g, _ := strings.Cut(spec, ":")
	for _, part := range []string{u, g} {
		if _, ok := ownerID(part); part != "" && !ok {
			return true
		}
	}
	return false
}

// ownerID reads one part of an owner spec as an id, as BuildKit's llb
// does (parseUID): root is 0, and a number strconv.ParseInt reads in 32
// bits, a sign included (+5 is 5). ok is false for a name, and for a
// negative number, which pallet takes for one (BuildKit passes it on as
// a uint32).
func ownerID(v string) (int, bool) {
	if v == "root" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return int(n), err == nil && n >= 0
}
