package driver

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// logWriter turns a byte stream into one log entry per line, verbatim: the
// plugin's text is a value, never parsed.
func logWriter(l hclog.Logger) *lineLogger { return &lineLogger{l: l} }

type lineLogger struct {
	mu  sync.Mutex
	l   hclog.Logger
	buf []byte
}

// maxLine bounds memory: a plugin that never writes '\n' costs 64 KiB.
const maxLine = 64 << 10

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLine {
				w.l.Info("output", "line", string(w.buf))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.l.Info("output", "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}
