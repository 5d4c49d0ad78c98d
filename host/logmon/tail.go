package logmon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Tail copies a rotated series of log files (<dir>/<base>N, as Rotator
// writes them) to W, remembering how far it has copied: the reading side
// of the log shipper, used by the agent's `alloc logs`. Files are opened
// beneath Dir and never through a link (package beneath): a file that is
// not one the shipper could have written is an error naming it.
type Tail struct {
	Dir     *beneath.Dir
	Base    string
	W       io.Writer
	index   int   // file being read, once started
	offset  int64 // bytes of it already copied
	started bool
}

// CopyAvailable copies everything written since the last call, moving on
// to newer files of the series as they appear. Files the shipper already
// deleted (older than max_files) are skipped.
func (t *Tail) CopyAvailable() error {
	indexes, err := logIndexes(t.Dir, t.Base)
	if err != nil {
		return err
	}
	for _, idx := range indexes {
		if t.started && idx < t.index {
			continue
		}
		if !t.started || idx > t.index {
			t.index, t.offset, t.started = idx, 0, true
		}
		n, err := copyFrom(t.Dir, t.Base+strconv.Itoa(idx), t.offset, t.W)
		t.offset += n
		if err != nil {
			return err
		}
	}
	return nil
}

func copyFrom(dir *beneath.Dir, name string, offset int64, w io.Writer) (int64, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("reading log %s: %w", f.Name(), err)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return n, fmt.Errorf("copying log %s: %w", f.Name(), err)
	}
	return n, nil
}

// logIndexes returns the N of every <base>N file in dir, ascending.
func logIndexes(dir *beneath.Dir, base string) ([]int, error) {
	names, err := dir.Names(".")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing logs: %w", err)
	}
	var out []int
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, base)
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}
