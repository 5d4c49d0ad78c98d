package logmon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Rotator writes a stream into <dir>/<base>.<N>, starting a new file when the
// current one reaches maxSize and keeping at most maxFiles files. N only
// grows: a restarted shipper continues after the highest existing index, so
// readers can follow the files in order across restarts, as in Nomad.
//
// The shipper runs as root in a directory a task may once have been able
// to write (alloc/logs), so every file is opened through dir (package
// beneath): a link, a hard link, a pipe or a device at a log file's name
// is refused, never written through, and old files are removed by name
// (unlinkat), which never follows a link either. A new file is created
// exclusively: a name something else holds is skipped, and said so in the
// stream itself, the only reader the shipper has while it runs.
type Rotator struct {
	dir      *beneath.Dir
	base     string
	maxFiles int
	maxSize  int64
	mode     os.FileMode

	f    *os.File
	idx  int
	size int64
}

// maxSkip bounds how many taken names a rotation skips before it fails.
const maxSkip = 16

// NewRotator opens the newest file of the series for appending, creating
// files with mode. A newest file that is not one the shipper could have
// made is an error (an *beneath.UnsafeError naming it).
func NewRotator(dir *beneath.Dir, base string, maxFiles int, maxSize int64, mode os.FileMode) (*Rotator, error) {
	if maxFiles < 1 || maxSize < 1 {
		return nil, fmt.Errorf("rotator %s: max files %d and max size %d must be positive", base, maxFiles, maxSize)
	}
	r := &Rotator{dir: dir, base: base, maxFiles: maxFiles, maxSize: maxSize, mode: mode}
	idx, err := r.highest()
	if err != nil {
		return nil, err
	}
	f, err := dir.OpenFile(r.name(max(idx, 0)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, mode)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	if err := r.use(f, max(idx, 0)); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Rotator) name(idx int) string { return r.base + "." + strconv.Itoa(idx) }

// highest returns the largest index present, -1 if none.
func (r *Rotator) highest() (int, error) {
	names, err := r.dir.Names(".")
	if err != nil {
		return -1, fmt.Errorf("list log dir: %w", err)
	}
	hi := -1
	for _, n := range names {
		if i, ok := r.index(n); ok && i > hi {
			hi = i
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

func (r *Rotator) use(f *os.File, idx int) error {
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	r.f, r.idx, r.size = f, idx, fi.Size()
	return nil
}

// rotate moves to the next index whose name is free.
func (r *Rotator) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("close log file: %w", err)
	}
	r.f = nil
	var skipped []string
	for idx := r.idx + 1; idx <= r.idx+maxSkip; idx++ {
		f, err := r.dir.OpenFile(r.name(idx), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, r.mode)
		if errors.Is(err, os.ErrExist) {
			skipped = append(skipped, r.name(idx))
			continue
		}
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		if err := r.use(f, idx); err != nil {
			return err
		}
		for _, n := range skipped {
			// The stream is the one reader the shipper has. The note
			// counts against the file's size cap like any output.
			msg := fmt.Sprintf("[pluginhost-logmon] %s/%s existed before the shipper made it (something wrote into the log directory): skipped, not written through\n", r.dir.Name(), n)
			msg = msg[:min(int64(len(msg)), max(r.maxSize-r.size, 0))]
			m, _ := io.WriteString(r.f, msg)
			r.size += int64(m)
		}
		return r.prune()
	}
	return fmt.Errorf("rotate %s: the next %d names are all taken", r.base, maxSkip)
}

// prune deletes files older than the newest maxFiles.
func (r *Rotator) prune() error {
	names, err := r.dir.Names(".")
	if err != nil {
		return fmt.Errorf("list log dir: %w", err)
	}
	var errs []error
	for _, n := range names {
		if i, ok := r.index(n); ok && i <= r.idx-r.maxFiles {
			if err := r.dir.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
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
		for r.f == nil || r.size >= r.maxSize {
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
func (r *Rotator) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
