package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnterThread moves the calling OS thread, and only it, into the group in
// every hierarchy, and returns the function that moves it back where it
// was. A process the thread forks in between is born in the group, as
// clone3's CLONE_INTO_CGROUP does on v2: no instruction of the task runs
// outside it. cgroup v1 only (a v2 thread cannot leave its process's
// domain cgroup; use FD).
//
// The caller locks the thread (runtime.LockOSThread) for the whole
// sequence. If EnterThread or leave fails, the thread may be left in the
// group or between groups: the caller must not unlock it, so that the Go
// runtime ends the thread with its goroutine rather than run agent code
// on it. The Go runtime starts no thread from a locked one (it asks its
// template thread), so no agent thread is born in the group either.
//
// Why not AddPid: writing a pid into cgroup.procs takes the kernel's
// global cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period unless another migration just did. Measured on this
// machine (2 vCPUs, Linux 6.18): 45 µs for AddPid back to back, but about
// 10 ms for one 50 ms after the last, which is how task starts come. A
// thread writing "0" (itself) into a v1 tasks file needs no such lock
// (Linux 6.0 on; older kernels take it, and cost what AddPid costs): 0.1
// to 0.4 ms to enter five hierarchies and leave them again.
func (g *Group) EnterThread() (leave func() error, err error) {
	if g.m.version != 1 {
		return nil, fmt.Errorf("cgroup %s: moving a thread needs cgroup v1: %w", g.path, errors.ErrUnsupported)
	}
	back, err := g.m.threadTasksFiles()
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", g.path, err)
	}
	var into, out []string
	for _, dir := range g.dirs {
		root := g.m.hierOf(dir)
		b := back[root]
		if b == "" {
			return nil, fmt.Errorf("cgroup %s: the thread's own cgroup in %s is unknown", g.path, root)
		}
		into = append(into, filepath.Join(dir, "tasks"))
		out = append(out, b)
	}
	leave = func() error {
		var errs []error
		for _, f := range out {
			if err := writeFile(f, "0"); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			err = fmt.Errorf("moving the thread out of cgroup %s: %w", g.path, err)
			g.m.logger.Warn("a thread that started a task could not leave its cgroup; it is let go", "error", err)
			return err
		}
		return nil
	}
	for _, f := range into {
		if err := writeFile(f, "0"); err != nil {
			if lerr := leave(); lerr != nil {
				err = errors.Join(err, lerr)
			}
			return nil, fmt.Errorf("moving the thread into cgroup %s: %w", g.path, err)
		}
	}
	return leave, nil
}

// threadTasksFiles maps each hierarchy root to the tasks file of the
// calling thread's cgroup in it (from /proc/thread-self/cgroup). They are
// not checked: that costs five stats on every launch, and a thread that
// cannot go back is let go with a warning (see EnterThread).
func (m *Manager) threadTasksFiles() (map[string]string, error) {
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("finding the thread's cgroups: %w", err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		// "4:memory:/system.slice/pluginhost.service", "1:cpu,cpuacct:/"
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for c := range strings.SplitSeq(f[1], ",") {
			root := m.v1[c]
			if root == "" {
				continue
			}
			out[root] = filepath.Join(root, f[2], "tasks")
		}
	}
	return out, nil
}

// hierOf is the hierarchy root a group directory lies in.
func (m *Manager) hierOf(dir string) string {
	for _, r := range m.hiers {
		if strings.HasPrefix(dir, r+string(filepath.Separator)) {
			return r
		}
	}
	return ""
}
