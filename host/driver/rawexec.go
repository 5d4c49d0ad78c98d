package driver

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/nsexec"
)

// RawExec runs any binary as a plain child process.
type RawExec struct {
	watcher *Watcher
}

// NewRawExec returns the raw_exec driver; w watches re-adopted tasks.
func NewRawExec(w *Watcher) *RawExec { return &RawExec{watcher: w} }

// Name implements Driver.
func (d *RawExec) Name() string { return "raw_exec" }

// Start implements Driver.
func (d *RawExec) Start(ctx context.Context, req *StartRequest) (Task, error) {
	path, err := ResolveCommand(req.Command, req.Env, req.WorkDir)
	if err != nil {
		return nil, err
	}
	if err := VerifyChecksum(path, req.Checksum); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd, report, err := taskCommand(path, req.Args, req, hostSpec(req), nsexec.Namespaces{})
	if err != nil {
		return nil, err
	}
	cmd.Env = append([]string{}, req.Env...)
	cmd.Stdout = req.Stdout
	cmd.Stderr = req.Stderr
	p, err := startTask(cmd, report, req.Cgroup)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return &rawTask{proc: p, handle: newHandle(d.Name(), p, req.Cgroup)}, nil
}

// Recover implements Driver.
func (d *RawExec) Recover(ctx context.Context, h *Handle, logger hclog.Logger) (Task, error) {
	p, err := adopt(h.Pid, h.StartTime, d.watcher, h.Cgroup)
	if err != nil {
		return nil, err
	}
	hc := *h
	return &rawTask{proc: p, handle: &hc}, nil
}

// newHandle is the handle of a task started as p.
func newHandle(driver string, p *proc, cg Cgroup) *Handle {
	return &Handle{Driver: driver, Pid: p.pid, StartTime: p.startTime, CgroupPath: cgroupPath(cg)}
}

type rawTask struct {
	*proc
	handle *Handle
	once   sync.Once
}

func (t *rawTask) Handle() *Handle                 { h := *t.handle; return &h }
func (t *rawTask) Done() <-chan struct{}           { return t.done }
func (t *rawTask) Signal(sig syscall.Signal) error { return t.signalGroup(sig) }
func (t *rawTask) Detach()                         { t.once.Do(t.release) }

func (t *rawTask) Kill(ctx context.Context, sig syscall.Signal, timeout time.Duration) error {
	return t.kill(ctx, sig, timeout)
}
