package archive

import "io"

// windowReaderAt serves small reads from a window of the file around the
// last one, read whole; larger reads go to the file. A walk through many
// small records (a zip's local headers, an xz file's streams) then costs
// a read of the file for hundreds of them, not one or more each.
type windowReaderAt struct {
	r io.ReaderAt
	// back, for a walk from the end of the file to its start, reads the
	// window that ends where the read that missed it does, not the one
	// that starts there.
	back bool
	buf  []byte
	off  int64 // of buf[0]
	n    int   // bytes of buf read
	eof  bool  // the file ends at off+n
}

const windowSize = 64 << 10

func (w *windowReaderAt) ReadAt(b []byte, off int64) (int, error) {
	if len(b) > windowSize/2 || off < 0 {
		return w.r.ReadAt(b, off)
	}
	end := w.off + int64(w.n)
	if off < w.off || off+int64(len(b)) > end && !(w.eof && off <= end) {
		if w.buf == nil {
			w.buf = make([]byte, windowSize)
		}
		start := off
		if w.back {
			start = max(0, off+int64(len(b))-windowSize)
		}
		n, err := w.r.ReadAt(w.buf, start)
		if err != nil && err != io.EOF {
			w.n = 0
			return 0, err
		}
		w.off, w.n, w.eof = start, n, err == io.EOF
	}
	if off-w.off > int64(w.n) {
		return 0, io.EOF // past the end of the file
	}
	k := copy(b, w.buf[off-w.off:w.n])
	if k < len(b) {
		return k, io.EOF
	}
	return k, nil
}
