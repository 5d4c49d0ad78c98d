package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/allocdir"
	"github.com/pluginhost/pluginhost/host/apiserver"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/logmon"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// followInterval is how often a followed log is checked for more output.
// The files are written by a separate log shipper process, so there is no
// in-process event to wait on; a quarter second is what a human watching
// `alloc logs -f` cannot tell from instant.
const followInterval = 250 * time.Millisecond

// AllocLogs copies a task's rotated log files to w, oldest first; with follow
// it keeps copying until ctx ends or the task is dead and its logs drained.
func (a *Agent) AllocLogs(ctx context.Context, allocID, task string, stderr, follow bool, w io.Writer) error {
	ar, err := lookupAlloc(a.jobs, allocID)
	if err != nil {
		return err
	}
	snap := ar.State()
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
	if !slices.ContainsFunc(snap.Tasks, func(t taskrunner.TaskSnapshot) bool { return t.Name == task }) {
		return fmt.Errorf("task %q in allocation %s: %w", task, snap.Alloc.ID, api.ErrNotFound)
	}
	stream := "stdout"
	if stderr {
		stream = "stderr"
	}
	// Beneath the data dir, through no link: the log directory lies in
	// the allocation's shared directory, which its tasks write.
	dir, err := allocdir.OpenLogs(a.cfg.DataDir, ar.ID())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("logs of allocation %s: %w", ar.ID(), err)
	}
	defer dir.Close()
	tail := &logmon.Tail{Dir: dir, Base: task + "." + stream + ".", W: w}
	for {
		if err := tail.CopyAvailable(); err != nil {
			return err
		}
		if !follow {
			return nil
		}
		if taskDead(ar, task) {
			// The shipper may still be flushing the last lines; one more
			// pass after it had time to write them.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(followInterval):
			}
			return tail.CopyAvailable()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followInterval):
		}
	}
}

func taskDead(ar jobs.Runner, task string) bool {
	for _, t := range ar.State().Tasks {
		if t.Name == task {
			return t.State.State == state.TaskStateDead
		}
	}
	return true
}
