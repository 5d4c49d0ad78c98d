package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// A consumer watches a hosted plugin's process only so that go-plugin can
// mark its client exited: the process is not the consumer's child, so
// os.Process.Wait cannot be used. How to watch a process that is not one's
// child differs by system, and each system's way is behind a build tag:
//
//   - Linux: a pidfd, which becomes readable when the process exits, waited
//     for by the runtime's poller (procwatch_pidfd_linux.go);
//   - other unix systems (macOS, the BSDs), and Linux built with the
//     "portable" tag so that this code runs in our tests: kill(pid, 0)
//     every pollInterval (procwatch_poll.go);
//   - Windows: a process handle, waited for with WaitForMultipleObjects
//     (procwatch_windows.go).
//
// watchProcess is the system's way; it fails with errProcessGone when
// there is no such process any more.

// errProcessGone: the hosted plugin's process has exited (or never was).
var errProcessGone = errors.New("plugin process is gone")

// processWatch waits for one process to exit.
type processWatch interface {
	// wait returns nil once the process has exited, or ctx's error if
	// ctx ends first. It is called once, and releases what the watch
	// holds.
	wait(ctx context.Context) error
}

// hostedProcess is go-plugin's view of a hosted plugin's process in a
// consumer. In test mode go-plugin only waits on it (to mark the client
// exited); it never kills it.
type hostedProcess struct {
	pid   int
	watch processWatch
}

// attachProcess starts watching the process pid: it is alive now, or
// attachProcess fails.
func attachProcess(pid int) (*hostedProcess, error) {
	// kill(0, 0) would ask about our own process group, and pid 0 on
	// Windows is the idle process: a record without a pid names nothing.
	if pid <= 0 {
		return nil, fmt.Errorf("reattach: plugin process %d: %w", pid, errProcessGone)
	}
	w, err := watchProcess(pid)
	if err != nil {
		return nil, err
	}
	return &hostedProcess{pid: pid, watch: w}, nil
}

// Wait returns once the plugin has exited. go-plugin calls it from a
// goroutine of its own, once per client, which ends with the instance.
func (p *hostedProcess) Wait(ctx context.Context) error { return p.watch.wait(ctx) }

// Kill is never called in test mode; it refuses rather than signal a
// plugin other consumers use.
func (p *hostedProcess) Kill(context.Context) error {
	return errors.New("a hosted plugin is stopped by its agent, not by a consumer")
}

func (p *hostedProcess) ID() string { return strconv.Itoa(p.pid) }

func (p *hostedProcess) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (p *hostedProcess) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }
