package main

import (
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/text"
)

// logEscaper is alloc logs' -escape: a task's output as text. Control
// characters and escape sequences are written escaped (\x1b]52;...), as
// everywhere else the CLI shows what a task or plugin said, except what a
// log needs to read well: newlines, tabs, carriage returns and SGR colour
// sequences (ESC [ digits ; ... m), which change nothing but colour. That
// is what `less -R` lets through. A sequence or a rune split across two
// writes is held until the next.
type logEscaper struct {
	w       io.Writer
	pending []byte
	out     []byte
}

// maxSGR bounds a colour sequence; a longer "sequence" is escaped.
const maxSGR = 32

func (e *logEscaper) Write(p []byte) (int, error) {
	data := append(e.pending, p...)
	e.pending = e.pending[:0]
	out := e.out[:0]
	i := 0
	for i < len(data) {
		c := data[i]
		switch {
		case c == '\n' || c == '\t' || c == '\r' || (c >= 0x20 && c < 0x7f):
			out = append(out, c)
			i++
			continue
		case c == 0x1b:
			n, complete := sgrLen(data[i:])
			if !complete {
				e.pending = append(e.pending, data[i:]...)
				i = len(data)
				continue
			}
			if n > 0 {
				out = append(out, data[i:i+n]...)
				i += n
				continue
			}
		case c >= 0x80:
			if !utf8.FullRune(data[i:]) {
				e.pending = append(e.pending, data[i:]...)
				i = len(data)
				continue
			}
			_, size := utf8.DecodeRune(data[i:])
			out = append(out, text.Escape(string(data[i:i+size]))...)
			i += size
			continue
		}
		out = append(out, text.Escape(string(data[i:i+1]))...)
		i++
	}
	e.out = out
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// sgrLen is the length of the SGR sequence at the start of b (which
// starts with ESC): 0 if it is another sequence or none, and complete
// false if b ends before it could tell.
func sgrLen(b []byte) (n int, complete bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[1] != '[' {
		return 0, true
	}
	for i := 2; i < len(b) && i < maxSGR; i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9' || c == ';':
		case c == 'm':
			return i + 1, true
		default:
			return 0, true
		}
	}
	if len(b) >= maxSGR {
		return 0, true
	}
	return 0, false
}

// Flush writes what a split sequence left held, escaped: the log ended
// there.
func (e *logEscaper) Flush() error {
	if len(e.pending) == 0 {
		return nil
	}
	_, err := e.w.Write([]byte(text.Escape(string(e.pending))))
	e.pending = e.pending[:0]
	return err
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
