package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// proc is what a /proc scan learns about one process.
type proc struct {
	pid, ppid int
	state     byte
	cmdline   []byte
	environ   []byte
}

// readProc reads /proc/<pid>; ok is false for processes that vanished or
// are zombies (a zombie has no cmdline or environ left and is not running).
func readProc(pid int) (p proc, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return p, false
	}
	// The command name is in parentheses and may contain anything; the
	// fields after the last ')' are fixed.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return p, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return p, false
	}
	p.pid, p.state = pid, f[0][0]
	p.ppid, _ = strconv.Atoi(f[1])
	if p.state == 'Z' || p.state == 'X' {
		return p, false
	}
	p.cmdline, _ = os.ReadFile(dir + "/cmdline")
	p.environ, _ = os.ReadFile(dir + "/environ")
	return p, true
}

// cpuTime is the CPU time all threads of process pid have used so far
// (user and system, from /proc/<pid>/task/*/schedstat), 0 if unreadable.
func cpuTime(pid int) time.Duration {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}

// scanProcs returns every live process.
func scanProcs() map[int]proc {
	ents, err := os.ReadDir("/proc")
	out := make(map[int]proc)
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	return out
}

// hasEnv reports whether the process's environment holds key=value.
func (p proc) hasEnv(kv string) bool {
	for _, e := range bytes.Split(p.environ, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// markerEnv is the environment entry that marks a test's task.
func markerEnv(marker string) string { return "E2E_MARK=" + marker }

// marked returns the pids of every live process carrying the marker.
func marked(marker string) []int {
	var out []int
	for pid, p := range scanProcs() {
		if p.hasEnv(markerEnv(marker)) {
			out = append(out, pid)
		}
	}
	return out
}

// topMarked returns the marked processes whose parent is not marked: one
// per running copy of the task, however many children a shell loop forks.
func topMarked(marker string) []int {
	all := scanProcs()
	kv := markerEnv(marker)
	var out []int
	for pid, p := range all {
		if !p.hasEnv(kv) {
			continue
		}
		if parent, ok := all[p.ppid]; ok && parent.hasEnv(kv) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// alive reports whether pid is a running (non-zombie) process.
func alive(pid int) bool {
	_, ok := readProc(pid)
	return ok
}

// killMatching SIGKILLs, by process group and by pid, every process other
// than this one whose command line or environment mentions s.
func killMatching(s string) {
	self, selfPgid := os.Getpid(), syscall.Getpgrp()
	needle := []byte(s)
	// Two passes: a task shell killed in the first may have forked a
	// child between the scan and the kill.
	for range 2 {
		for pid, p := range scanProcs() {
			if pid == self || pid == 1 {
				continue
			}
			if !bytes.Contains(p.cmdline, needle) && !bytes.Contains(p.environ, needle) {
				continue
			}
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid != selfPgid && pgid > 1 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitGone polls until no process carries the marker. There is no event
// for the end of a process that is not our child; the deadline bounds it.
func waitGone(t testing.TB, marker string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := marked(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes with marker %s still running after %s: %v", marker, d, describe(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mentioning returns the live processes other than this one whose command
// line or environment contains s.
func mentioning(s string) []int {
	var out []int
	for pid, p := range scanProcs() {
		if pid != os.Getpid() && (bytes.Contains(p.cmdline, []byte(s)) || bytes.Contains(p.environ, []byte(s))) {
			out = append(out, pid)
		}
	}
	return out
}

// waitNoneMentioning polls until no process mentions s (see waitGone).
func waitNoneMentioning(t testing.TB, s string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := mentioning(s)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes mentioning %s still running after %s: %v", s, d, describe(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe renders pids with their command lines for failure messages.
func describe(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		p, _ := readProc(pid)
		b.WriteString(strconv.Itoa(pid) + ":" + strings.ReplaceAll(string(p.cmdline), "\x00", " ") + "; ")
	}
	return b.String()
}

// assertLogShipper checks that the log shippers writing into logDir run the
// standalone pluginhost-logmon binary, not the agent's own.
func assertLogShipper(t testing.TB, logDir string) {
	t.Helper()
	n := 0
	for pid, p := range scanProcs() {
		if !bytes.Contains(p.cmdline, []byte(logDir)) {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if filepath.Base(exe) != "pluginhost-logmon" {
			t.Errorf("log shipper pid %d runs %s, want pluginhost-logmon", pid, exe)
		}
		n++
	}
	if n == 0 {
		t.Errorf("no log shipper writes into %s", logDir)
	}
}

// mountsUnder returns the mount points in this process's mount namespace
// at or below root, deepest first.
func mountsUnder(t testing.TB, root string) []string {
	t.Helper()
	mps, err := mountinfo.Under(mountinfo.Self, root)
	if err != nil {
		t.Fatal(err)
	}
	return mps
}

// unmountUnder detaches every mount below root, so that a failed test
// leaves no mount behind (and its root can be removed).
func unmountUnder(t testing.TB, root string) {
	if err := mountinfo.DetachUnder(root); err != nil {
		t.Log(err)
	}
}

// volumeMounts returns the mounts under the env's data dir other than the
// agent's own: the CSI mount root (a shared bind mount of itself) and the
// task-writable trees it makes nosuid,nodev binds of themselves (alloc/,
// sockets/). What is left is what a volume left behind.
func (e *env) volumeMounts(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, m := range mountsUnder(t, e.dataDir) {
		switch m {
		case filepath.Join(e.dataDir, "csi"), filepath.Join(e.dataDir, "alloc"), filepath.Join(e.dataDir, "sockets"):
		default:
			out = append(out, m)
		}
	}
	return out
}
