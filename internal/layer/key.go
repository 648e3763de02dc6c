package layer

import (
	"strconv"

	"github.com/pallet-dev/pallet/internal/tree"
)

// Key names the layer that Build would write for t with opt, without
// writing it: the entries' metadata and content digests, the format, the
// epoch and the compression. Equal keys give byte-identical layers, which
// is what lets a cache skip the tar and the compression entirely. The
// version in the key changes whenever a format writes different bytes.
// A Windows symlink's part says how it is typed, which depends on the rest
// of the image (opt.LinkTarget) as well as on the entry.
func Key(t *tree.Tree, opt Options, digest tree.FileDigest) ([]string, error) {
	var parts []string
	err := KeyParts(t, opt, digest, func(part []byte) { parts = append(parts, string(part)) })
	return parts, err
}

// KeyParts gives Key's parts to add one by one, for a caller that digests
// them as they come rather than holding one string per file. A part is
// add's only for the call.
func KeyParts(t *tree.Tree, opt Options, digest tree.FileDigest, add func(part []byte)) error {
	compression := string(opt.Compression)
	if opt.Compression == Gzip || opt.Compression == "" {
		compression = gzipKeyName(opt.GzipLevel)
	}
	for _, p := range []string{"layer-v3", opt.Format.String(), compression, strconv.FormatInt(opt.Epoch.Unix(), 10)} {
		add([]byte(p))
	}
	var links linkTyper
	var enc *windowsEncoder
	if opt.Format == Windows {
		links = linkTyperOf(t.All(), opt)
		enc = &windowsEncoder{baseDirs: opt.BaseDir}
	}
	hard := newHardLinks(opt)
	// Each part is what fmt.Sprintf("%s|%s|%o|%d|%d|%s|%d|%s", ...)
	// gave, put together in one buffer: fmt was a tenth of a no-op
	// build's CPU.
	var buf []byte
	for e := range t.All() {
		sum := ""
		if e.Kind == tree.File {
			var err error
			if sum, err = digest(e.Source, e.Stamp); err != nil {
				return err
			}
		}
		buf = append(buf[:0], e.Path...)
		buf = append(buf, '|')
		buf = append(buf, e.Kind.String()...)
		buf = append(buf, '|')
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, '|')
		buf = strconv.AppendInt(buf, int64(e.UID), 10)
		buf = append(buf, '|')
		buf = strconv.AppendInt(buf, int64(e.GID), 10)
		buf = append(buf, '|')
		buf = append(buf, e.Link...)
		buf = append(buf, '|')
		buf = strconv.AppendInt(buf, e.Size, 10)
		buf = append(buf, '|')
		buf = append(buf, sum...)
		if target := hard.target(e); target != "" {
			buf = append(buf, "|hardlink:"...)
			buf = append(buf, target...)
		}
		if e.Kind == tree.Symlink && (opt.Format == Windows || opt.Format == WindowsBase) {
			// The target as written, with '\' (windowsLinkTarget):
			// layers keyed before it held the target with '/', which
			// Windows does not resolve, and must not be taken for
			// these. A layer without links writes the bytes it did.
			if w, err := windowsLinkTarget(e.Path, e.Link); err == nil {
				buf = append(buf, "|as:"...)
				buf = append(buf, w...)
			}
		}
		if enc != nil {
			// The base's descriptor and attributes, which the entry
			// carries: a base whose directory has another must not be
			// served this layer. A layer that lists no base directory
			// keeps the key it had.
			if d := enc.baseDir(e); d != nil {
				buf = append(buf, "|basedir:"...)
				buf = strconv.AppendInt(buf, int64(d.attr()), 10)
				buf = append(buf, ':')
				buf = append(buf, d.RawSD...)
			}
		}
		if links != nil && e.Kind == tree.Symlink {
			if isDir, _ := links.dirLink(e); isDir {
				buf = append(buf, "|dir"...)
			}
		}
		add(buf)
	}
	return nil
}
