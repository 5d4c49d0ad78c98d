package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// Containment: every task runs in a cgroup of its own that enforces its
// resources and takes every descendant with it, and exec tasks run in a
// root of their own as their user. Real agents, real cgroups (v1 on this
// machine), real namespaces.

// noRestart fails a task at its first exit.
const noRestart = "    restart {\n      attempts = 0\n      mode     = \"fail\"\n    }\n"

// execTask is an exec task running script under /bin/sh in its own root.
func execTask(name, marker, script string) taskSpec {
	tk := shTask(name, marker, script)
	tk.driver = "exec"
	return tk
}

// needCgroups skips a test on a machine where the agent cannot use cgroups.
func needCgroups(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups and namespaces need root")
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			t.Skip("no cgroup file system")
		}
	}
}

// A task over its memory limit is OOM-killed, and says so: Nomad's exit
// code and signal, plus what Nomad on cgroup v1 leaves to the kernel log.
func TestContainmentOOMKill(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	a := e.start()
	tk := shTask("hog", e.markerFor("hog"), `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived`)
	tk.extra = "      resources {\n        memory = 32\n      }\n"
	alloc := a.runJob("oom", jobHCL("oom", noRestart, tk))[0]
	al := a.waitAlloc(alloc, "task dead", taskDead("hog"))
	evs := events(al, "hog", "Terminated")
	if len(evs) != 1 {
		t.Fatalf("Terminated events: %+v", evs)
	}
	ev := evs[0]
	if ev.ExitCode != 137 || ev.Signal != 9 || ev.Details["oom_killed"] != "true" ||
		!strings.Contains(ev.DisplayMessage, "OOM Killed") || !strings.Contains(ev.DisplayMessage, "32 MB") {
		t.Fatalf("Terminated event %+v: want exit 137, signal 9, oom_killed and the limit", ev)
	}
	res := e.cli("alloc", "status", alloc)
	if !strings.Contains(res.stdout, "OOM Killed") {
		t.Fatalf("alloc status does not show the OOM kill:\n%s", res.stdout)
	}
	assertNoCgroups(t, e.cgroupParent)
}

// escapeScript leaves three processes that a process-group kill misses:
// one in a session of its own, one double-forked orphan, and the task.
const escapeScript = `setsid sh -c 'exec sleep 1000' & (sleep 1000 &) ; exec sleep 1000`

// waitMarked waits until at least n processes carry marker.
func waitMarked(t *testing.T, marker string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(marker)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes with marker %s, want %d: %s", len(marked(marker)), marker, n, describe(marked(marker)))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stop kills every process of the task's cgroup, also those that left
// its session or process group, also after a kill -9 of the agent, under
// raw_exec and exec (whose namespaces end with it); and the group goes
// with the task.
func TestContainmentStopKillsDescendants(t *testing.T) {
	needCgroups(t)
	for _, c := range []struct {
		driver string
		kill9  bool
		// newParent: the agent comes back with another cgroup_parent,
		// and finds the task's group under the earlier one.
		newParent bool
	}{{"raw_exec", false, false}, {"raw_exec", true, false}, {"exec", false, false}, {"exec", true, false}, {"raw_exec", true, true}} {
		kill9 := c.kill9
		name := fmt.Sprintf("%s/kill9=%t", c.driver, kill9)
		if c.newParent {
			name += "/new_cgroup_parent"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "")
			a := e.start()
			marker := e.markerFor("esc")
			tk := shTask("t", marker, escapeScript)
			tk.driver = c.driver
			// Started, not "running": the task's handle must be stored
			// before the kill -9 (see runStarted).
			alloc := a.runStarted("esc", jobHCL("esc", noRestart, tk), 1)[0]
			waitMarked(t, marker, 3)
			if left := taskCgroups(e.cgroupParent); len(left) == 0 {
				t.Fatalf("the running task has no cgroup under %s", e.cgroupParent)
			}
			if kill9 {
				a.kill()
				if c.newParent {
					e.setCgroupParent(t, e.cgroupParent+"-new")
				}
				a = e.start()
				a.waitAlloc(alloc, "re-adopted", hasEvents("t", "Reattached", 1))
				if n := len(marked(marker)); n < 3 {
					t.Fatalf("a kill -9 of the agent took task processes with it: %d left", n)
				}
			}
			a.stopJob("esc")
			waitGone(t, marker, 5*time.Second)
			assertNoCgroups(t, e.cgroupParent)
			if c.newParent {
				assertNoCgroups(t, e.cgroupParent+"-new")
			}
		})
	}
}

// An exec task sees its own root, runs as a uid of its own from the
// dynamic range (nobody on Nomad), is pid 1 of its own pid namespace, and
// finds NOMAD_* paths inside its root.
func TestContainmentExecIsolation(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	a := e.start()
	hostFile := filepath.Join(e.root, "host-only")
	writeFile(t, hostFile, "x")
	script := fmt.Sprintf(`{ id -u; echo $$; echo $NOMAD_TASK_DIR $NOMAD_ALLOC_DIR; test -e %q && echo HOST || echo hidden; test -d /local && echo local; } > /alloc/out.tmp && mv /alloc/out.tmp /alloc/out`, hostFile)
	alloc := a.runJob("iso", jobHCL("iso", noRestart, execTask("t", e.markerFor("iso"), script)))[0]
	got := e.allocFile(t, a, alloc, "out")
	uid, rest, _ := strings.Cut(got, "\n")
	if n, err := strconv.Atoi(uid); err != nil || n < 80000 || n > 89999 {
		t.Fatalf("exec task ran as uid %q, want one of the dynamic range 80000-89999", uid)
	}
	if want := "1\n/local /alloc\nhidden\nlocal\n"; rest != want {
		t.Fatalf("exec task reported %q, want %q", rest, want)
	}
	a.waitAlloc(alloc, "dead", taskDead("t"))
	assertNoCgroups(t, e.cgroupParent)
}

// An exec task running as its dynamic uid writes into a root-owned CSI
// volume (as on Nomad, through CAP_DAC_OVERRIDE); a second job reads the
// file back; the claims are released and nothing stays mounted.
func TestContainmentExecVolume(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, csiConfig)
	a := e.start()
	startVolPlugin(t, e, a, "go_plugin", "ex-vol", nil)
	createVolume(t, e, "data", "ex-vol", "single-node-writer")
	vb := volumeBlock("data", "data", "single-node-writer", false)

	w := execTask("w", e.markerFor("w"), `id -u > /srv/data/who && cp /srv/data/who /alloc/wrote`)
	w.extra = volumeMount("data", "/srv/data", false)
	alloc := a.runJob("writer", jobHCL("writer", noRestart+vb, w))[0]
	wrote := e.allocFile(t, a, alloc, "wrote")
	if n, err := strconv.Atoi(strings.TrimSpace(wrote)); err != nil || n < 80000 || n > 89999 {
		t.Fatalf("writer: %q, want a uid of the dynamic range", wrote)
	}
	a.stopJob("writer")
	a.waitVolume("data", "claims released", noClaims)

	r := execTask("r", e.markerFor("r"), `cp /srv/data/who /alloc/read`)
	r.extra = volumeMount("data", "/srv/data", true)
	alloc = a.runJob("reader", jobHCL("reader", noRestart+vb, r))[0]
	if got := e.allocFile(t, a, alloc, "read"); got != wrote {
		t.Fatalf("reader read back %q, want %q", got, wrote)
	}
	a.stopJob("reader")
	a.waitVolume("data", "claims released", noClaims)
	if m := e.volumeMounts(t); len(m) != 0 {
		t.Fatalf("mounts left after both jobs stopped: %v", m)
	}
	a.stopJob("ex-vol")
	assertNoCgroups(t, e.cgroupParent)
}

// A raw_exec task with `user` runs as that user, with HOME set and its
// task directories its own. While a directory above data_dir does not let
// that user pass, job run refuses the job, naming the directory, its mode
// and its owner, and records nothing (issue 26 §4); before, the task
// failed with "fork/exec /bin/sh: permission denied" and restarted for
// ever, its allocation pending.
func TestContainmentRawExecUser(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	a := e.start()
	tk := shTask("t", e.markerFor("u"), `{ id -u; id -g; echo $HOME; echo x > $NOMAD_TASK_DIR/f && echo wrote; } > $NOMAD_ALLOC_DIR/tmp && mv $NOMAD_ALLOC_DIR/tmp $NOMAD_ALLOC_DIR/out`)
	tk.extra = "      user = \"nobody\"\n"
	// The test's root is 0700 (os.MkdirTemp), as `mktemp -d` makes it.
	path := filepath.Join(e.root, "u.hcl")
	writeFile(t, path, jobHCL("u", noRestart, tk))
	r := e.cli("job", "run", path)
	for _, want := range []string{e.root + " is drwx------ root:root", `user "nobody" (uid 65534) cannot reach its task directory`, "chmod o+x"} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("job run with a data_dir nobody may reach: want %q in the error\n%+v", want, r)
		}
	}
	if _, err := a.client.Job(context.Background(), "u"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("the refused job was recorded: %v", err)
	}
	if entries, err := os.ReadDir(filepath.Join(e.dataDir, "alloc")); err == nil && len(entries) > 0 {
		t.Fatalf("the refused job left allocation directories: %v", entries)
	}
	// data_dir's parents are the operator's to open to task users.
	if err := os.Chmod(e.root, 0o711); err != nil {
		t.Fatal(err)
	}
	alloc := a.runJob("u", jobHCL("u", noRestart, tk))[0]
	if got, want := e.allocFile(t, a, alloc, "out"), "65534\n65534\n/nonexistent\nwrote\n"; got != want {
		t.Fatalf("raw_exec as nobody reported %q, want %q", got, want)
	}
	// An unknown user is refused at job run, naming the field.
	_, err := a.client.RegisterJobSource(context.Background(), "bad.hcl",
		[]byte(strings.Replace(jobHCL("bad", noRestart, tk), `user = "nobody"`, `user = "no-such-user-x"`, 1)))
	if err == nil || !strings.Contains(err.Error(), "user") || !strings.Contains(err.Error(), "no-such-user-x") {
		t.Fatalf("job run with an unknown user: %v", err)
	}
}
