package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/config"
)

// newEnvDefaultCgroupParent is newEnv for an agent whose configuration
// sets no cgroup_parent, as a user's does: it takes the default, a parent
// of its own derived from its data dir.
func newEnvDefaultCgroupParent(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, "")
	b, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	line := "cgroup_parent = \"" + e.cgroupParent + "\"\n"
	if !strings.Contains(string(b), line) {
		t.Fatalf("config has no %q", line)
	}
	if err := os.WriteFile(e.cfgPath, []byte(strings.Replace(string(b), line, "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cgroupParent = config.CgroupParentFor(e.dataDir)
	t.Cleanup(func() { removeCgroups(t, e.cgroupParent) })
	return e
}

// Issue 26, section 1: two agents on one machine killed each other's
// tasks. Every agent defaulted to cgroup_parent "/pluginhost" and at its
// start killed every task group there it had not recorded, the other
// agent's included; starting agent B killed agent A's sleep. Now each
// agent's default parent is its own, and the start-up sweep touches only
// groups of allocations the agent's own records hold, so even two agents
// configured with one cgroup_parent leave each other alone. Both run a
// task; each agent is killed with SIGKILL and restarted, then stopped
// cleanly; the other's task runs on with its pid.
func TestTwoAgentsLeaveEachOthersTasksAlone(t *testing.T) {
	needCgroups(t)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) (a, b *env)
	}{
		{"default settings", func(t *testing.T) (*env, *env) {
			return newEnvDefaultCgroupParent(t), newEnvDefaultCgroupParent(t)
		}},
		{"one cgroup_parent for both", func(t *testing.T) (*env, *env) {
			a := newEnv(t, "")
			b := newEnv(t, "")
			b.setCgroupParent(t, a.cgroupParent)
			b.cgroupParent = a.cgroupParent
			return a, b
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ea, eb := c.setup(t)
			if c.name == "default settings" && ea.cgroupParent == eb.cgroupParent {
				t.Fatalf("two data dirs share the default cgroup parent %s", ea.cgroupParent)
			}
			a, b := ea.start(), eb.start()
			a.runStarted("sa", jobHCL("sa", restartPolicy, shTask("t", ea.markerFor("sa"), sleeper)), 1)
			b.runStarted("sb", jobHCL("sb", restartPolicy, shTask("t", eb.markerFor("sb"), sleeper)), 1)
			pa, pb := topMarked(ea.markerFor("sa")), topMarked(eb.markerFor("sb"))
			if len(pa) != 1 || len(pb) != 1 {
				t.Fatalf("tasks: %v and %v", pa, pb)
			}
			same := func(what string) {
				t.Helper()
				if got := topMarked(ea.markerFor("sa")); !sameSet(got, pa) {
					t.Fatalf("%s: agent A's task is now %v, was %v", what, got, pa)
				}
				if got := topMarked(eb.markerFor("sb")); !sameSet(got, pb) {
					t.Fatalf("%s: agent B's task is now %v, was %v", what, got, pb)
				}
			}
			b.kill()
			b = eb.start()
			same("agent B killed and restarted")
			a.kill()
			a = ea.start()
			same("agent A killed and restarted")
			b.stop(t)
			same("agent B stopped cleanly")
			a.stop(t)
			same("both stopped")
		})
	}
}

// Review of issue 25: two agents on one machine, both with the default
// users range (80000-89999), handed out the same uids, so an exec task of
// one ran as the uid of the other's and could use its files. The agents
// now lease each id machine-wide (/run/pluginhost/ids): their exec tasks
// and their allocations' groups get ids of their own, also after a
// kill -9 and restart.
func TestTwoAgentsGiveOutDifferentIDs(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	ea, eb := newEnvDefaultCgroupParent(t), newEnvDefaultCgroupParent(t)
	a, b := ea.start(), eb.start()
	ids := func(e *env, ag *agentProc, job string) (uid string, gid uint32) {
		t.Helper()
		script := `id -u > /alloc/uid.tmp && mv /alloc/uid.tmp /alloc/uid; exec sleep 1000000`
		alloc := ag.runJob(job, jobHCL(job, restartPolicy, execTask("t", e.markerFor(job), script)))[0]
		return strings.TrimSpace(e.allocFile(t, ag, alloc, "uid")), allocGroup(t, e, alloc)
	}
	seen := map[string]string{}
	note := func(who, uid string, gid uint32) {
		t.Helper()
		for _, id := range []string{"uid " + uid, "gid " + strconv.FormatUint(uint64(gid), 10)} {
			if other, dup := seen[strings.Fields(id)[1]]; dup {
				t.Fatalf("%s has %s, which %s has too", who, id, other)
			}
			seen[strings.Fields(id)[1]] = who + " " + id
		}
	}
	ua, ga := ids(ea, a, "xa")
	note("agent A's task", ua, ga)
	ub, gb := ids(eb, b, "xb")
	note("agent B's task", ub, gb)
	a.kill()
	a = ea.start()
	uc, gc := ids(ea, a, "xc")
	note("agent A's task after a kill -9", uc, gc)
}
