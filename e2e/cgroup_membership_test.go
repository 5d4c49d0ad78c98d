package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every process of a raw_exec and of an exec task is in the task's own
// cgroup in every hierarchy, the shell's children included, and no thread
// of the agent is left in a task's cgroup (on cgroup v1 the agent forks a
// task from a thread that enters the task's group and leaves it again).
// Stopping the job leaves no process and no cgroup.
func TestTaskInItsCgroup(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	raw, ex := e.markerFor("raw"), e.markerFor("ex")
	id := a.runJob("cg", jobHCL("cg", "", shTask("raw", raw, termSleeper), execTask("ex", ex, termSleeper)))[0]
	a.waitAlloc(id, "both tasks running", and(running("raw"), running("ex")))
	for task, marker := range map[string]string{"raw": raw, "ex": ex} {
		want := e.cgroupParent + "/" + id + "." + task
		// The shell forks its sleep right after it starts: wait for it.
		var pids []int
		deadline := time.Now().Add(10 * time.Second)
		for len(pids) < 2 && time.Now().Before(deadline) {
			pids = marked(marker)
			time.Sleep(10 * time.Millisecond)
		}
		if len(pids) < 2 {
			t.Fatalf("task %s: processes %v, want the shell and its sleep", task, describe(pids))
		}
		for _, pid := range pids {
			groups := taskGroups(t, fmt.Sprintf("/proc/%d/cgroup", pid))
			if len(groups) == 0 {
				t.Fatalf("task %s pid %d: no cgroup of the task's controllers", task, pid)
			}
			for ctrl, p := range groups {
				if p != want {
					t.Errorf("task %s pid %d: %s cgroup %s, want %s", task, pid, ctrl, p, want)
				}
			}
		}
	}
	threads, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/cgroup", a.pid()))
	if err != nil || len(threads) == 0 {
		t.Fatalf("agent threads: %v %v", threads, err)
	}
	for _, f := range threads {
		for ctrl, p := range taskGroups(t, f) {
			if strings.HasPrefix(p, e.cgroupParent+"/") {
				t.Errorf("agent thread %s is in the task cgroup %s (%s)", f, p, ctrl)
			}
		}
	}
	a.stopJob("cg")
	waitGone(t, raw, 10*time.Second)
	waitGone(t, ex, 10*time.Second)
	assertNoCgroups(t, e.cgroupParent)
}

// taskGroups reads a /proc/<pid>/cgroup file: the path of each controller
// task cgroups use ("" keys the v2 unified line).
func taskGroups(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	v2 := ""
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			v2 = f[2]
		}
		for c := range strings.SplitSeq(f[1], ",") {
			switch c {
			case "memory", "cpu", "cpuacct", "freezer", "pids":
				out[c] = f[2]
			}
		}
	}
	if len(out) == 0 && v2 != "" {
		out[""] = v2
	}
	return out
}
