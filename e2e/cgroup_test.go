package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cgroupRoots are the hierarchies the agent makes task cgroups in on this
// kind of machine (v1), and the v2 root.
var cgroupRoots = []string{
	"/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct",
	"/sys/fs/cgroup/freezer", "/sys/fs/cgroup/pids", "/sys/fs/cgroup",
}

// taskCgroups lists the task cgroups under parent in every hierarchy.
func taskCgroups(parent string) []string {
	var out []string
	for _, r := range cgroupRoots {
		ents, err := os.ReadDir(filepath.Join(r, parent))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(r, parent, e.Name()))
			}
		}
	}
	return out
}

// assertNoCgroups fails the test if a task cgroup is left under parent.
func assertNoCgroups(t testing.TB, parent string) {
	t.Helper()
	if left := taskCgroups(parent); len(left) > 0 {
		t.Errorf("task cgroups left behind: %s", strings.Join(left, ", "))
	}
}

// removeCgroups kills whatever is left in the env's task cgroups and
// removes them and the parent: a killed agent leaves its tasks' groups, by
// design, and the test's cleanup must not.
func removeCgroups(t testing.TB, parent string) {
	for _, dir := range taskCgroups(parent) {
		removeCgroupDir(t, dir)
	}
	for _, r := range cgroupRoots {
		_ = os.Remove(filepath.Join(r, parent))
	}
}

// removeCgroupDir kills every process in one task cgroup directory and
// removes it. The group is thawed first, whichever hierarchy dir is in: a
// frozen process does not act on SIGKILL, so an agent killed mid-sweep
// (group frozen) would otherwise leave the memory directory, which comes
// before the freezer's, busy until the deadline.
func removeCgroupDir(t testing.TB, dir string) {
	thaw(dir)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) || time.Now().After(deadline) {
			if err != nil && !os.IsNotExist(err) {
				t.Logf("remove cgroup %s: %v", dir, err)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// thaw thaws the task group that dir, a directory of it in any hierarchy,
// belongs to.
func thaw(dir string) {
	for _, r := range cgroupRoots[:len(cgroupRoots)-1] { // the v1 ones
		if rel, ok := strings.CutPrefix(dir, r+"/"); ok {
			_ = os.WriteFile(filepath.Join("/sys/fs/cgroup/freezer", rel, "freezer.state"), []byte("THAWED"), 0)
			return
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("0"), 0)
}
