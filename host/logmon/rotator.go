package logmon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Rotator writes a stream into <dir>/<base>.<N>, starting a new file when the
// current one reaches maxSize and keeping at most maxFiles files. N only
// grows: a restarted shipper continues after the highest existing index, so
// readers can follow the files in order across restarts, as in Nomad.
type Rotator struct {
	dir, base string
	maxFiles  int
	maxSize   int64

	f    *os.File
	idx  int
	size int64
}

// NewRotator opens the newest file of the series for appending.
func NewRotator(dir, base string, maxFiles int, maxSize int64) (*Rotator, error) {
	if maxFiles < 1 || maxSize < 1 {
		return nil, fmt.Errorf("rotator %s: max files %d and max size %d must be positive", base, maxFiles, maxSize)
	}
	r := &Rotator{dir: dir, base: base, maxFiles: maxFiles, maxSize: maxSize}
	idx, err := r.highest()
	if err != nil {
		return nil, err
	}
	if err := r.open(max(idx, 0)); err != nil {
		return nil, err
	}
	return r, nil
}

// highest returns the largest index present, -1 if none.
func (r *Rotator) highest() (int, error) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return -1, fmt.Errorf("list log dir: %w", err)
	}
	hi := -1
	for _, e := range ents {
		if n, ok := r.index(e.Name()); ok && n > hi {
			hi = n
		}
	}
	return hi, nil
}

func (r *Rotator) index(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, r.base+".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

func (r *Rotator) open(idx int) error {
	p := filepath.Join(r.dir, r.base+"."+strconv.Itoa(idx))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	r.f, r.idx, r.size = f, idx, fi.Size()
	return nil
}

func (r *Rotator) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("close log file: %w", err)
	}
	if err := r.open(r.idx + 1); err != nil {
		return err
	}
	return r.prune()
}

// prune deletes files older than the newest maxFiles.
func (r *Rotator) prune() error {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("list log dir: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if n, ok := r.index(e.Name()); ok && n <= r.idx-r.maxFiles {
			if err := os.Remove(filepath.Join(r.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Write splits p across files so that none exceeds maxSize.
func (r *Rotator) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if r.size >= r.maxSize {
			if err := r.rotate(); err != nil {
				return written, err
			}
		}
		chunk := p
		if room := r.maxSize - r.size; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		n, err := r.f.Write(chunk)
		written += n
		r.size += int64(n)
		if err != nil {
			return written, fmt.Errorf("write log file: %w", err)
		}
		p = p[n:]
	}
	return written, nil
}

// Close closes the current file.
func (r *Rotator) Close() error { return r.f.Close() }
