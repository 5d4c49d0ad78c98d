package driver

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startInCgroup starts cmd with its process in cg before the process runs
// any code of the task's: a descendant forked in the first microsecond
// must not escape the group (a kill of the group is how every descendant
// is stopped). cg nil starts cmd as is.
//
// On cgroup v2 clone3 puts the child straight into the group. Cgroup v1
// has no such call. There the thread that forks first moves itself into
// the group (a v1 thread can be in other cgroups than its process), so
// that the child is born there, and moves back after (startFromGroup).
// Should the thread not get in (a hierarchy refuses it, say),
// the child is started traced (PTRACE_TRACEME) instead, which stops it at
// its first exec, before the new program's first instruction; it is moved
// into the group while stopped and then let go. That second way costs an
// RCU grace period in the kernel for the pid write, about 10 ms on this
// machine, against 0.1 to 0.4 ms for the thread's round trip (see
// cgroup.Group.EnterThread).
func startInCgroup(cmd *exec.Cmd, cg Cgroup) (int, error) {
	if cg == nil {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
	fd, ok, err := cg.CloneFD()
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", cg.Path(), err)
	}
	if ok {
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
	if te, ok := cg.(threadEnterer); ok {
		if pid, tried, err := startFromGroup(cmd, te); tried {
			return pid, err
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	for {
		_, err = unix.Wait4(pid, &ws, unix.WALL, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("wait for the task's exec: %w", err)
	}
	if !ws.Stopped() {
		// Killed before its exec completed (the status is consumed, so
		// Wait has nothing left to reap).
		_ = cmd.Process.Release()
		return 0, fmt.Errorf("task process ended before it ran: %v", ws)
	}
	joinErr := cg.AddPid(pid)
	if err := unix.PtraceDetach(pid); err != nil && joinErr == nil {
		joinErr = fmt.Errorf("let the task go after its exec: %w", err)
	}
	if joinErr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("put the task in cgroup %s: %w", cg.Path(), joinErr)
	}
	return pid, nil
}

// threadEnterer is a v1 group that the forking thread can enter
// (cgroup.Group.EnterThread).
type threadEnterer interface {
	EnterThread() (leave func() error, err error)
}

// startFromGroup starts cmd from a thread that has moved into the group,
// so that the child is born in it. tried is false when the thread could
// not enter the group and nothing was started: the caller then starts cmd
// its own way. The thread is a goroutine's own, locked: if it cannot leave
// the group (or may be half way), the goroutine ends locked, which ends
// the thread, so that no agent code ever runs in the task's group. The
// task's group is this launch's alone and nothing lists its processes
// while the task is being started, so the agent's pid showing in its
// cgroup.procs for that moment misleads no one.
func startFromGroup(cmd *exec.Cmd, te threadEnterer) (pid int, tried bool, err error) {
	type result struct {
		pid   int
		tried bool
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		leave, err := te.EnterThread()
		if err != nil {
			ch <- result{}
			return // locked: the thread may be half way in
		}
		r := result{tried: true, err: cmd.Start()}
		if r.err == nil {
			r.pid = cmd.Process.Pid
		}
		// A thread that cannot leave stays locked and ends with this
		// goroutine; the task, if started, runs in its group all the same.
		if leave() == nil {
			runtime.UnlockOSThread()
		}
		ch <- r
	}()
	r := <-ch
	return r.pid, r.tried, r.err
}
