package devstack

import (
	"bytes"
	"io"
	"sync"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

var writeMu sync.Mutex

// prefixWriter writes whole lines to w, each prefixed with the process name.
func prefixWriter(w io.Writer, name string) io.Writer {
	return &prefixed{w: w, prefix: []byte(name + " | ")}
}

type prefixed struct {
	w      io.Writer
	prefix []byte
	buf    []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		writeMu.Lock()
		_, err := p.w.Write(append(append([]byte{}, p.prefix...), p.buf[:i+1]...))
		writeMu.Unlock()
		if err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
