package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/api"
	apiserver "github.com/pluginhost/pluginhost/host/api"
	"github.com/pluginhost/pluginhost/host/state"
)

// followInterval is how often a followed log is checked for more output.
// The files are written by a separate log shipper process, so there is no
// in-process event to wait on; a quarter second is what a human watching
// `alloc logs -f` cannot tell from instant.
const followInterval = 250 * time.Millisecond

// AllocLogs copies a task's rotated log files to w, oldest first; with follow
// it keeps copying until ctx ends or the task is dead and its logs drained.
func (a *Agent) AllocLogs(ctx context.Context, allocID, task string, stderr, follow bool, w io.Writer) error {
	e, err := a.lookupAlloc(allocID)
	if err != nil {
		return err
	}
	snap := e.runner.State()
	if task == "" {
		if len(snap.Tasks) != 1 {
			names := make([]string, len(snap.Tasks))
			for i, t := range snap.Tasks {
				names[i] = t.Name
			}
			return &apiserver.FieldError{Field: "task", Err: fmt.Errorf("the allocation has several tasks, name one of %s", strings.Join(names, ", "))}
		}
		task = snap.Tasks[0].Name
	}
	if e.runner.Task(task) == nil {
		return fmt.Errorf("task %q in allocation %s: %w", task, snap.Alloc.ID, api.ErrNotFound)
	}
	stream := "stdout"
	if stderr {
		stream = "stderr"
	}
	dir := filepath.Join(e.runner.AllocDir(), "alloc", "logs")
	base := task + "." + stream + "."

	tail := &logTail{dir: dir, base: base, w: w}
	for {
		if err := tail.copyAvailable(); err != nil {
			return err
		}
		if !follow {
			return nil
		}
		if a.taskDead(e, task) {
			// The shipper may still be flushing the last lines; one more
			// pass after it had time to write them.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(followInterval):
			}
			return tail.copyAvailable()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followInterval):
		}
	}
}

func (a *Agent) taskDead(e *allocEntry, task string) bool {
	for _, t := range e.runner.State().Tasks {
		if t.Name == task {
			return t.State.State == state.TaskStateDead
		}
	}
	return true
}

// logTail remembers how far into the rotated series it has copied.
type logTail struct {
	dir, base string
	w         io.Writer
	index     int   // file being read, once started
	offset    int64 // bytes of it already copied
	started   bool
}

// copyAvailable copies everything written since the last call, moving on
// to newer files of the series as they appear. Files the shipper already
// deleted (older than max_files) are skipped.
func (t *logTail) copyAvailable() error {
	indexes, err := logIndexes(t.dir, t.base)
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
		n, err := copyFrom(filepath.Join(t.dir, t.base+strconv.Itoa(idx)), t.offset, t.w)
		t.offset += n
		if err != nil {
			return err
		}
	}
	return nil
}

func copyFrom(path string, offset int64, w io.Writer) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("reading log %s: %w", path, err)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return n, fmt.Errorf("copying log %s: %w", path, err)
	}
	return n, nil
}

// logIndexes returns the N of every <base>N file in dir, ascending.
func logIndexes(dir, base string) ([]int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing logs: %w", err)
	}
	var out []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
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
