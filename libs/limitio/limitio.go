// Package limitio holds a reader that fails past a limit, for streams that must be
// bounded before anything stores them (uploads). Pure: no I/O of its own.
package limitio

import "io"

// Reader reads from an underlying reader and fails once more than its limit was read.
type Reader struct {
	r    io.Reader
	left int64
	err  error
	over bool
}

// NewReader returns a Reader of r that fails with err once more than limit bytes were
// read.
func NewReader(r io.Reader, limit int64, err error) *Reader {
	return &Reader{r: r, left: limit, err: err}
}

// Read reads from the underlying reader; past the limit it returns the Reader's error.
func (l *Reader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.over = true
		return n, l.err
	}
	return n, err
}

// Over tells whether more than the limit was read.
func (l *Reader) Over() bool { return l.over }
