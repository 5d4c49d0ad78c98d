package taskrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A launch has a window no ordering of writes can close: between the fork
// and the commit of the task's handle, the task runs and the store does
// not know it. An agent killed in that window leaves a task that no later
// agent would adopt, and that later agent would start a second copy next
// to it. The handle is committed first thing after the launch to keep the
// window short; killUntracked closes it on the other side: a restored task
// with no handle that is about to be launched first looks for processes
// carrying its identity (every task's environment has NOMAD_ALLOC_ID and
// NOMAD_TASK_NAME, and the agent's own has neither) and kills them and
// their process groups. Their log shippers exit by themselves once the
// task's pipes close.

// killUntracked kills every process whose environment names this task, and
// its process group, and waits for them to exit (bounded by ctx). It
// returns the pids it killed.
func killUntracked(ctx context.Context, allocID, task string) ([]int, error) {
	want := [][]byte{[]byte("NOMAD_ALLOC_ID=" + allocID), []byte("NOMAD_TASK_NAME=" + task)}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("look for untracked copies of %s/%s: %w", allocID, task, err)
	}
	self := os.Getpid()
	var killed []int
	var fds []int
	defer func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !hasAll(env, want) {
			continue // gone, or not readable: not one we started
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // exited meanwhile
		}
		// The pidfd holds the process we read; reading its environment
		// again through the pid proves the pid was not reused between.
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err != nil || !hasAll(env, want) {
			_ = unix.Close(fd)
			continue
		}
		fds = append(fds, fd)
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return killed, fmt.Errorf("kill untracked copy %d of %s/%s: %w", pid, allocID, task, err)
		}
		// Its group: children of a task share its environment too,
		// but one that changed it would be missed without this.
		if pgid, err := unix.Getpgid(pid); err == nil && pgid > 1 && pgid != unix.Getpgrp() {
			_ = unix.Kill(-pgid, unix.SIGKILL)
		}
		killed = append(killed, pid)
	}
	for _, fd := range fds {
		if err := waitPidfd(ctx, fd); err != nil {
			return killed, fmt.Errorf("untracked copies of %s/%s: %w", allocID, task, err)
		}
	}
	return killed, nil
}

func hasAll(env []byte, want [][]byte) bool {
	for _, w := range want {
		found := false
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(kv, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// waitPidfd waits for the process behind fd to exit: a pidfd becomes
// readable then. The poll is sliced so that ctx is honoured.
func waitPidfd(ctx context.Context, fd int) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := unix.Poll(fds, int((100 * time.Millisecond).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll pidfd: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}

// killUntrackedCopies runs killUntracked for a restored task that has no
// handle and records what it did.
func (tr *TaskRunner) killUntrackedCopies() {
	// Not the runner's context: a stop arriving now must not leave the
	// copies running, and SIGKILL makes the wait short.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pids, err := killUntracked(ctx, tr.allocID, tr.task.Name)
	if err != nil {
		tr.logger.Error("kill untracked copies", "error", err)
	}
	if len(pids) > 0 {
		tr.emit(newEvent(EventUntrackedKilled, fmt.Sprintf("Killed %d untracked copies %v, launched by an agent that died before recording them", len(pids), pids)))
	}
}
