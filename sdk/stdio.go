package sdk

import (
	"fmt"
	"os"
)

// keepStdio leaves f as it is: where a pipe cannot be given a file
// description of its own (nonBlockingStdio needs Linux's /proc), setting
// O_NONBLOCK on the shared one would reach the shell or sibling that shares
// it. A write then blocks while the pipe is full and its reader alive, as
// under go-plugin's own Serve, and fails at once with EPIPE when the reader
// is gone (Serve ignores SIGPIPE), so a plugin outlives its host all the
// same; only a host that lives on without reading can stall it.
func keepStdio(f *os.File) (*os.File, bool, error) { return f, false, nil }

// devNull is where output goes once its reader is known to be gone.
func devNull() (*os.File, error) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	return f, nil
}

// stdioSwap replaces os.Stdout and os.Stderr with non-blocking writers for
// the lifetime of a plugin-mode Serve (on Linux; see keepStdio for the
// rest), and puts the originals back on restore. It exists because go-plugin's own answer (pipes that are drained
// only while a host streams stdio) blocks a plugin after 64 KiB once the host
// is gone; here a write to a full or orphaned pipe fails instead.
type stdioSwap struct {
	origOut, origErr *os.File
	opened           []*os.File
}

func swapStdio() (*stdioSwap, error) {
	s := &stdioSwap{origOut: os.Stdout, origErr: os.Stderr}
	out, err := s.replacement(os.Stdout)
	if err != nil {
		s.closeOpened()
		return nil, err
	}
	errf, err := s.replacement(os.Stderr)
	if err != nil {
		s.closeOpened()
		return nil, err
	}
	os.Stdout, os.Stderr = out, errf
	return s, nil
}

func (s *stdioSwap) replacement(f *os.File) (*os.File, error) {
	nb, ok, err := stdioWriter(f)
	switch {
	case err != nil && nb == nil:
		// The reader is already gone: nothing written can reach anyone.
		nb, err = devNull()
		if err != nil {
			return nil, err
		}
		s.opened = append(s.opened, nb)
		return nb, nil
	case err != nil:
		return nil, err
	case ok:
		s.opened = append(s.opened, nb)
	}
	return nb, nil
}

func (s *stdioSwap) closeOpened() {
	for _, f := range s.opened {
		_ = f.Close()
	}
	s.opened = nil
}

func (s *stdioSwap) restore() {
	os.Stdout, os.Stderr = s.origOut, s.origErr
	s.closeOpened()
}
