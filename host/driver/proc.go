package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProcStartTime returns the start time of pid in clock ticks since boot
// (field 22 of /proc/<pid>/stat). It wraps ErrTaskGone if pid does not exist.
func ProcStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return 0, fmt.Errorf("pid %d: %w", pid, ErrTaskGone)
		}
		return 0, fmt.Errorf("read start time of pid %d: %w", pid, err)
	}
	// comm (field 2) may hold spaces and parentheses; the fields after the
	// last ')' are fixed, starting with field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no ')'", pid)
	}
	fields := bytes.Fields(b[i+1:])
	const startTimeIdx = 22 - 3
	if len(fields) <= startTimeIdx {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	if string(fields[0]) == "Z" || string(fields[0]) == "X" {
		return 0, fmt.Errorf("pid %d is a zombie: %w", pid, ErrTaskGone)
	}
	st, err := strconv.ParseUint(string(fields[startTimeIdx]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return st, nil
}

// proc is one task process, whether we started it (child) or adopted it
// after an agent restart. It holds a pidfd so that signals to the leader
// can never reach a stranger that reused the pid.
type proc struct {
	pid       int
	startTime uint64
	pidfd     int

	done   chan struct{}
	mu     sync.Mutex
	result *ExitResult
	closed bool

	cancelWatch func()

	// cg is the task's control group, nil if it has none: the kill of the
	// group reaches every descendant, whatever session it made.
	cg Cgroup
}

// startChild starts cmd in its own session, and in cg when it is not nil,
// and returns its proc; a goroutine owned by the proc reaps it and
// records its exit status, with the namespace helper's report when cmd is
// the helper (report not nil).
func startChild(cmd *exec.Cmd, cg Cgroup, report *helperReport) (*proc, error) {
	pidfd := -1
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Setsid: signals to the agent's process group (terminal hangup, a
	// supervisor's SIGTERM) must not reach tasks, which outlive the agent.
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.PidFD = &pidfd
	pid, err := startInCgroup(cmd, cg)
	if err != nil {
		// A process started but not let into its group was killed; its
		// pidfd is ours to close.
		if pidfd >= 0 {
			_ = unix.Close(pidfd)
		}
		return nil, err
	}
	if report != nil {
		report.read()
	}
	p := &proc{pid: pid, pidfd: pidfd, done: make(chan struct{}), cg: cg}
	st, err := ProcStartTime(p.pid)
	if err != nil && !errors.Is(err, ErrTaskGone) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p.closeFD()
		return nil, err
	}
	p.startTime = st
	go func() {
		err := cmd.Wait()
		res := &ExitResult{}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				// 128+signal, the shell's convention, which Nomad's
				// executor reports too (drivers/shared/executor/
				// executor.go, exitSignalBase): "Exit Code: 137, Signal: 9".
				res.Signal = int(ws.Signal())
				res.ExitCode = 128 + res.Signal
			} else {
				res.ExitCode = ee.ExitCode()
			}
		} else if err != nil {
			res.Unknown = true
		}
		if report != nil {
			// The helper has exited or exec'd: its end of the pipe is
			// closed, so the report is in or about to be.
			<-report.done
			res.SetupErr = report.err
		}
		p.finish(res)
	}()
	return p, nil
}

// adopt re-adopts pid if and only if it is still the process that started
// at startTime. The pidfd is opened before the start time is compared, so
// the process checked is the process held. cg is the task's group, nil if
// it has none.
func adopt(pid int, startTime uint64, w *Watcher, cg Cgroup) (*proc, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrTaskGone)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("pid %d: %w", pid, ErrTaskGone)
		}
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	st, err := ProcStartTime(pid)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if st != startTime {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("pid %d started at tick %d, recorded %d: %w", pid, st, startTime, ErrPidReused)
	}
	p := &proc{pid: pid, startTime: st, pidfd: fd, done: make(chan struct{}), cg: cg}
	ch, cancel, err := w.Watch(fd)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	p.cancelWatch = cancel
	go func() {
		// Owned by the watcher: ch closes on exit or when the watch is
		// cancelled (Detach), and only the former finishes the proc.
		<-ch
		if p.exitedNow() {
			p.finish(&ExitResult{Unknown: true, ExitCode: -1})
		}
	}()
	return p, nil
}

func (p *proc) finish(res *ExitResult) {
	if p.cg != nil {
		// Each launch has a group of its own, so any OOM kill it counts
		// happened during this launch.
		if n, err := p.cg.OOMKills(); err == nil && n > 0 {
			res.OOMKilled = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.result != nil {
		return
	}
	p.result = res
	close(p.done)
}

// exitedNow reports whether the pidfd is readable, i.e. the process exited.
func (p *proc) exitedNow() bool {
	p.mu.Lock()
	fd := p.pidfd
	p.mu.Unlock()
	if fd < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

func (p *proc) Result() *ExitResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result
}

// signalGroup signals the whole process group (the task is its session and
// group leader). It refuses once the leader has exited: after that the
// number may be handed to a stranger.
func (p *proc) signalGroup(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if p.exitedNow() {
		return nil
	}
	p.mu.Lock()
	fd := p.pidfd
	p.mu.Unlock()
	if fd >= 0 {
		// The leader first, through the pidfd: this one cannot miss.
		if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("signal pid %d: %w", p.pid, err)
		}
	}
	if err := unix.Kill(-p.pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.pid, err)
	}
	return nil
}

// kill sends sig, waits up to timeout, then SIGKILLs the group; it returns
// when the process is gone or ctx ends, so it never hangs.
func (p *proc) kill(ctx context.Context, sig syscall.Signal, timeout time.Duration) error {
	if err := p.signalGroup(sig); err != nil {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		// The leader is gone; members that ignored sig must not linger.
		return p.killRest(ctx)
	case <-ctx.Done():
		return fmt.Errorf("kill pid %d: %w", p.pid, ctx.Err())
	case <-t.C:
	}
	if err := p.signalGroup(syscall.SIGKILL); err != nil {
		return err
	}
	if err := p.killRest(ctx); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kill pid %d after SIGKILL: %w", p.pid, ctx.Err())
	}
}

// killRest SIGKILLs what is left of the task: its process group, and with
// a cgroup every process in it, which is what catches a descendant that
// called setsid or forked twice.
func (p *proc) killRest(ctx context.Context) error {
	_ = unix.Kill(-p.pid, syscall.SIGKILL)
	if p.cg == nil {
		return nil
	}
	if err := p.cg.Kill(ctx); err != nil {
		return fmt.Errorf("kill the task's cgroup %s: %w", p.cg.Path(), err)
	}
	return nil
}

// release stops watching and closes the pidfd; the process is untouched.
func (p *proc) release() {
	if p.cancelWatch != nil {
		p.cancelWatch()
	}
	p.closeFD()
}

func (p *proc) closeFD() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pidfd >= 0 && !p.closed {
		_ = unix.Close(p.pidfd)
		p.closed = true
		p.pidfd = -1
	}
}
