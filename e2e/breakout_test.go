package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// The attacks of issue 25's review, against the real agent with its
// default configuration: each was reproduced on the main branch before
// the containment work, and each test says what main did. "Another local
// user" is a real process with a uid no one else has.

// strangerUID is another local user: a uid with no entry anywhere, no
// group of the agent's, nothing in common with any task.
const strangerUID = 61234

// asUser runs script under /bin/sh as uid:gid with groups and returns its
// output and whether it succeeded.
func asUser(t *testing.T, uid, gid uint32, groups []uint32, script string) (string, bool) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// hostFixture is what a task would like root to touch: a secret file and
// a directory of the host's, both root's, and their modes before.
type hostFixture struct {
	secret, dir string
}

func newHostFixture(t *testing.T, e *env) hostFixture {
	t.Helper()
	h := hostFixture{secret: filepath.Join(e.root, "host", "secret"), dir: filepath.Join(e.root, "host", "etc")}
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, h.secret, "root:x:0:0:root:/root:/bin/sh\n")
	if err := os.Chmod(h.secret, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// unchanged fails if the secret's content or mode, or the directory's
// owner, mode or contents changed.
func (h hostFixture) unchanged(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(h.secret); err != nil || string(b) != "root:x:0:0:root:/root:/bin/sh\n" {
		t.Errorf("the host's secret file now holds %q (%v)", b, err)
	}
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{h.secret, 0o600}, {h.dir, os.ModeDir | 0o755}} {
		fi, err := os.Stat(p.path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode() != p.mode || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s is now %v %d:%d", p.path, fi.Mode(), st.Uid, st.Gid)
		}
	}
	if ents, _ := os.ReadDir(h.dir); len(ents) != 0 {
		t.Errorf("files appeared in the host's directory: %v", ents)
	}
}

func (e *env) taskDir(alloc, task string) string {
	return filepath.Join(e.dataDir, "alloc", alloc, task)
}

func (e *env) logDir(alloc string) string {
	return filepath.Join(e.dataDir, "alloc", alloc, "alloc", "logs")
}

// waitEvent waits for an event of typ on the task whose message holds
// every one of want, and returns the allocation.
func (a *agentProc) waitEvent(alloc, task, typ string, want ...string) *api.Allocation {
	a.t.Helper()
	return a.waitAlloc(alloc, typ+" event saying "+strings.Join(want, ", "), func(al *api.Allocation) bool {
		for _, ev := range events(al, task, typ) {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(ev.DisplayMessage, w)
			}
			if ok {
				return true
			}
		}
		return false
	})
}

// Finding 1: root's log shipper wrote through a task's links, and the log
// API read through them. On main the exec task's links in /alloc/logs
// were followed at the next rotation (a line appended to the target), a
// link planted while the agent was down was written through at the
// restart, and the API served the management token through a link.
func TestBreakoutLogLinks(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	h := newHostFixture(t, e)
	a := e.start()
	script := fmt.Sprintf(`{ ln -s %[1]s /alloc/logs/t.stdout.1 && echo LINKED; ln -s %[2]s/new /alloc/logs/t.stderr.1 && echo LINKED;
  mv /alloc/logs /alloc/logs.old && echo MOVED; } > /alloc/try 2>&1
head -c 1200000 /dev/zero | tr '\0' x; head -c 1200000 /dev/zero | tr '\0' y >&2
echo ok > /alloc/done.tmp && mv /alloc/done.tmp /alloc/done
exec sleep 1000000`, h.secret, h.dir)
	tk := execTask("t", e.markerFor("lg"), script)
	tk.extra = "      logs {\n        max_file_size = 1\n      }\n"
	alloc := a.runJob("lg", jobHCL("lg", restartPolicy, tk))[0]
	e.allocFile(t, a, alloc, "done")
	if try := e.allocFile(t, a, alloc, "try"); strings.Contains(try, "LINKED") || strings.Contains(try, "MOVED") {
		t.Fatalf("the task planted links in, or moved, /alloc/logs:\n%s", try)
	}
	logs := e.logDir(alloc)
	a.mustWait("the task's output rotated into t.stdout.1 and t.stderr.1", 30*time.Second, func(context.Context) (bool, error) {
		for _, f := range []string{"t.stdout.1", "t.stderr.1"} {
			fi, err := os.Lstat(filepath.Join(logs, f))
			if err != nil || !fi.Mode().IsRegular() {
				return false, nil
			}
		}
		return true, nil
	}, api.TopicTask)
	h.unchanged(t)

	// Planted while the agent is down: the newest stdout file becomes a
	// link to the secret, and the task dies, so that the next agent
	// starts it again with a new shipper on that file.
	a.kill()
	for _, pid := range topMarked(e.markerFor("lg")) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(t, e.markerFor("lg"), 10*time.Second)
	next := 1 + highestIndex(t, logs, "t.stdout.")
	planted := filepath.Join(logs, fmt.Sprintf("t.stdout.%d", next))
	if err := os.Symlink(h.secret, planted); err != nil {
		t.Fatal(err)
	}
	a = e.start()
	a.waitEvent(alloc, "t", api.TaskRestartSignal, planted+" is a symbolic link")
	a.waitAlloc(alloc, "failed", func(al *api.Allocation) bool { return al.ClientStatus == "failed" })
	h.unchanged(t)

	// The log API: a file of the series linked to the token file, or a
	// second name of a secret, is refused and named; neither is read. (A
	// hard link from outside the allocation tree cannot be made at all:
	// the tree is a mount of its own. One from inside it can.)
	inside := filepath.Join(e.taskDir(alloc, "t"), "local", "Secret")
	writeFile(t, inside, "Secret\n")
	for i, link := range []func(string, string) error{
		func(_, p string) error { return os.Symlink(filepath.Join(e.dataDir, "acl-tokens.json"), p) },
		func(_, p string) error { return os.Link(inside, p) },
	} {
		p := filepath.Join(logs, fmt.Sprintf("t.stderr.%d", 90+i))
		if err := link("", p); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := a.client.AllocLogs(context.Background(), alloc, "t", true, false, &out)
		if err == nil || !strings.Contains(err.Error(), p) || strings.Contains(out.String(), "Secret") {
			t.Fatalf("alloc logs with %s planted: %v\n%.300s", p, err, out.String())
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// highestIndex is the largest N of the files prefix<N> in dir.
func highestIndex(t *testing.T, dir, prefix string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	hi := -1
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix)); err == nil && strings.HasPrefix(e.Name(), prefix) && n > hi {
			hi = n
		}
	}
	return hi
}

// Finding 2: the agent chowned and chmodded through links a task left in
// its own directory. On main an exec task that replaced /local and /tmp
// with links to host directories and exited got the first given to its
// user and chmodded 0700, and the second chmodded 0777, at its restart.
// Now the restart is refused, the event names the link, and the host's
// directories are as they were.
func TestBreakoutTaskDirLinks(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	for _, c := range []struct{ name, plant, refused, event string }{
		{"local", `mv /local /local.old && ln -s %s /local`, "local", api.TaskSetupFailure},
		{"tmp", `rm -rf /tmp && ln -s %s /tmp`, "tmp", api.TaskNotRestarting},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "")
			h := newHostFixture(t, e)
			a := e.start()
			script := `if [ -e /alloc/once ]; then touch /alloc/ran-again; exec sleep 1000000; fi; touch /alloc/once; ` + fmt.Sprintf(c.plant, h.dir) + `; exit 1`
			alloc := a.runJob("td", jobHCL("td", restartPolicy, execTask("t", e.markerFor("td"), script)))[0]
			at := filepath.Join(e.taskDir(alloc, "t"), c.refused)
			refused := func(al *api.Allocation) bool {
				for _, ev := range events(al, "t", c.event) {
					if strings.Contains(ev.DisplayMessage, at+" is a symbolic link") {
						return true
					}
				}
				return false
			}
			// Refused, or (as on main) run again over the links.
			ranAgain := filepath.Join(e.dataDir, "alloc", alloc, "alloc", "ran-again")
			al := a.waitAlloc(alloc, "the second launch refused or run", func(al *api.Allocation) bool {
				_, err := os.Stat(ranAgain)
				return refused(al) || err == nil
			})
			h.unchanged(t)
			if !refused(al) {
				t.Fatalf("the second launch was not refused: %s", allocSummary(al))
			}
			a.waitAlloc(alloc, "failed", func(al *api.Allocation) bool { return al.ClientStatus == "failed" })
		})
	}
}

// Finding 3: setuid files and device nodes a task makes. On main an exec
// task copied id to its /tmp, gave it to root with the setuid bit, and
// another local user ran it through the host's path and got uid 0; a
// device node it made opened through the host's path. Now another local
// user cannot reach the task's tree at all, a task of the same allocation
// that can gets no setuid (the tree is nosuid), and no node of it opens
// (nodev), not even for root.
func TestBreakoutSetuidAndDevices(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	openToEveryone(t, e)
	a := e.start()
	script := `id -u > /alloc/uid.tmp && mv /alloc/uid.tmp /alloc/uid
cp /usr/bin/id /tmp/id && chown 0:0 /tmp/id && chmod 4755 /tmp/id && echo SUID > /alloc/planted
mknod /tmp/null c 1 3 && chmod 666 /tmp/null && echo NODE >> /alloc/planted
echo done > /alloc/done.tmp && mv /alloc/done.tmp /alloc/done
exec sleep 1000000`
	alloc := a.runJob("su", jobHCL("su", restartPolicy, execTask("t", e.markerFor("su"), script)))[0]
	e.allocFile(t, a, alloc, "done")
	if p := e.allocFile(t, a, alloc, "planted"); p != "SUID\nNODE\n" {
		t.Fatalf("the task could not plant its files (the attack's premise): %q", p)
	}
	uid, err := strconv.Atoi(strings.TrimSpace(e.allocFile(t, a, alloc, "uid")))
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(e.taskDir(alloc, "t"), "tmp", "id")
	node := filepath.Join(e.taskDir(alloc, "t"), "tmp", "null")
	if out, ok := asUser(t, strangerUID, strangerUID, nil, suid+" -u"); ok {
		t.Errorf("another local user ran the planted binary: %q", out)
	}
	// A user of the allocation (its group) reaches it, and it does not
	// run as root.
	al, err := a.client.Allocation(context.Background(), alloc)
	if err != nil {
		t.Fatal(err)
	}
	gid := allocGroup(t, e, al.ID)
	out, ok := asUser(t, uint32(uid), uint32(uid), []uint32{gid}, suid+" -u")
	if !ok || strings.TrimSpace(out) != strconv.Itoa(uid) {
		t.Errorf("the planted setuid binary, run by the allocation's own user: %q %v, want uid %d (nosuid)", out, ok, uid)
	}
	f, err := os.OpenFile(node, os.O_WRONLY, 0)
	if err == nil {
		_ = f.Close()
		t.Fatalf("root opened the task's device node %s through the host's path", node)
	}
	if !errors.Is(err, syscall.EACCES) {
		t.Fatalf("opening the task's device node: %v, want EACCES (nodev)", err)
	}
}

// allocGroup is the group of the allocation's tree (its alloc/<id> dir).
func allocGroup(t *testing.T, e *env, alloc string) uint32 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(e.dataDir, "alloc", alloc))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Gid
}

// openToEveryone makes the test's root and data dir passable (0711), as an
// operator's would be, so that what keeps another local user out is the
// agent's own tree.
func openToEveryone(t *testing.T, e *env) {
	t.Helper()
	for _, d := range []string{e.root, e.dataDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

// Finding 4: pid_mode = "host" let an exec task reach every process of the
// host (and through /proc/<pid>/root the host's root and its cgroups). It
// is now the operator's to allow; a job that asks without it is refused,
// naming the field and the key that allows it.
func TestBreakoutHostModesAreOptIn(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	a := e.start()
	tk := execTask("t", e.markerFor("hp"), sleeper)
	tk.extra = ""
	src := strings.Replace(jobHCL("hp", noRestart, tk), `command = "/bin/sh"`, `command = "/bin/sh"`+"\n        pid_mode = \"host\"", 1)
	_, err := a.client.RegisterJobSource(context.Background(), "hp.hcl", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "PIDMode") || !strings.Contains(err.Error(), "allow_pid_mode_host") {
		t.Fatalf("pid_mode = host on a default agent: %v", err)
	}

	allowed := newEnv(t, "exec {\n  allow_pid_mode_host = true\n}\n")
	b := allowed.start()
	script := `cat /proc/1/comm > /alloc/pid1.tmp; grep Seccomp: /proc/self/status >> /alloc/pid1.tmp; mv /alloc/pid1.tmp /alloc/pid1; exec sleep 1000000`
	tk = execTask("t", allowed.markerFor("hp"), script)
	src = strings.Replace(jobHCL("hp", noRestart, tk), `command = "/bin/sh"`, `command = "/bin/sh"`+"\n        pid_mode = \"host\"", 1)
	alloc := b.runJob("hp", src)[0]
	got := allowed.allocFile(t, b, alloc, "pid1")
	if strings.HasPrefix(got, "sh\n") || !strings.Contains(got, "Seccomp:\t2") {
		t.Fatalf("allowed pid_mode = host: the task sees %q as pid 1 (want the host's), and must stay filtered", got)
	}
}

// Finding 5: go_plugin ignored `user`, and denied_host_uids did not hold
// for a task without one. On main a go_plugin task with user = "nobody"
// ran as root.
func TestBreakoutGoPluginUser(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, csiConfig)
	openToEveryone(t, e)
	// nobody must be able to run the binary: a copy of mockcsi in a
	// directory anyone may pass.
	bin := filepath.Join(e.root, "mockcsi")
	b, err := os.ReadFile(testbin.MustPath(t, "mockcsi"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	a := e.start()
	w := a.watchPlugins()
	tk := csiTask(t, "go_plugin", "p", e.markerFor("gp"), "gpu", "30s")
	tk.cmd = bin
	tk.extra += "      user = \"nobody\"\n"
	alloc := a.runJob("gp", jobHCL("gp", restartPolicy, tk))[0]
	w.waitHealthy(alloc)
	al, err := a.client.Allocation(context.Background(), alloc)
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", lastPid(al, "p")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nUid:\t65534\t65534\t65534\t65534\n") {
		t.Fatalf("the go_plugin task with user = \"nobody\" does not run as nobody:\n%s", status)
	}

	// A task without a user runs as the agent's (root): denied_host_uids
	// refuses it under every driver.
	d := newEnv(t, `denied_host_uids = "0"`+"\n")
	da := d.start()
	_, err = da.client.RegisterJobSource(context.Background(), "gp.hcl",
		[]byte(jobHCL("gp", restartPolicy, csiTask(t, "go_plugin", "p", d.markerFor("gp"), "gpu", "30s"))))
	if err == nil || !strings.Contains(err.Error(), "no user given, so the agent's user") {
		t.Fatalf("go_plugin without user on an agent that denies uid 0: %v", err)
	}
}

// Finding 6: other local users and other tasks read and changed task
// data. On main the tree was 0755 with 0644 logs (a local user read
// DB_PASSWORD=... from a job's log), /tmp was 0777 without its sticky
// bit, and a raw_exec task running as nobody read and overwrote an exec
// task's local/private.key (both ran as nobody).
func TestBreakoutOtherUsersAndTasks(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	openToEveryone(t, e)
	a := e.start()
	script := `echo DB_PASSWORD=hunter2; umask 077; echo key > /local/private.key
echo done > /alloc/done.tmp && mv /alloc/done.tmp /alloc/done; exec sleep 1000000`
	alloc := a.runJob("sec", jobHCL("sec", restartPolicy, execTask("t", e.markerFor("sec"), script)))[0]
	e.allocFile(t, a, alloc, "done")
	key := filepath.Join(e.taskDir(alloc, "t"), "local", "private.key")
	log := filepath.Join(e.logDir(alloc), "t.stdout.0")
	a.mustWait("the password in the task's log", 30*time.Second, func(context.Context) (bool, error) {
		b, _ := os.ReadFile(log)
		return bytes.Contains(b, []byte("hunter2")), nil
	}, api.TopicTask)

	// The modes, each on disk.
	g := allocGroup(t, e, alloc)
	for _, c := range []struct {
		path      string
		uid, gid  int
		mode      os.FileMode
		checkUser bool
	}{
		{filepath.Join(e.dataDir, "alloc"), 0, 0, os.ModeDir | 0o711, true},
		{filepath.Join(e.dataDir, "alloc", alloc), 0, int(g), os.ModeDir | 0o710, true},
		{filepath.Join(e.dataDir, "alloc", alloc, "alloc"), 0, int(g), os.ModeDir | os.ModeSetgid | os.ModeSticky | 0o770, true},
		{e.logDir(alloc), 0, int(g), os.ModeDir | os.ModeSetgid | 0o750, true},
		{log, 0, int(g), 0o640, true},
		{e.taskDir(alloc, "t"), 0, int(g), os.ModeDir | 0o750, true},
		{filepath.Join(e.taskDir(alloc, "t"), "local"), -1, -1, os.ModeDir | 0o700, false},
		{filepath.Join(e.taskDir(alloc, "t"), "tmp"), 0, 0, os.ModeDir | os.ModeSticky | 0o777, true},
	} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != c.mode || (c.checkUser && (int(st.Uid) != c.uid || int(st.Gid) != c.gid)) {
			t.Errorf("%s: %v %d:%d, want %v %d:%d", c.path, fi.Mode(), st.Uid, st.Gid, c.mode, c.uid, c.gid)
		}
	}

	for _, try := range []string{"cat " + log, "ls " + filepath.Join(e.dataDir, "alloc", alloc), "cat " + key} {
		if out, ok := asUser(t, strangerUID, strangerUID, nil, try); ok {
			t.Errorf("another local user could %q: %s", try, out)
		}
	}

	// Another job's raw_exec task running as nobody.
	openProbe := fmt.Sprintf(`{ cat %[1]s && echo READ; echo owned > %[1]s && echo WROTE; cat %[2]s && echo LOG; } > $NOMAD_ALLOC_DIR/probe.tmp 2>&1; mv $NOMAD_ALLOC_DIR/probe.tmp $NOMAD_ALLOC_DIR/probe`, key, log)
	raw := shTask("r", e.markerFor("raw"), openProbe)
	raw.extra = "      user = \"nobody\"\n"
	ralloc := a.runJob("raw", jobHCL("raw", noRestart, raw))[0]
	if got := e.allocFile(t, a, ralloc, "probe"); strings.Contains(got, "READ") || strings.Contains(got, "WROTE") || strings.Contains(got, "LOG") {
		t.Fatalf("a nobody task of another job got into the exec task's files:\n%s", got)
	}
	if b, _ := os.ReadFile(key); string(b) != "key\n" {
		t.Fatalf("the private key now holds %q", b)
	}
}

// Finding 7: descriptors the agent inherited reached its tasks. On main
// an agent started with 7</ gave its tasks a handle on the host's /.
func TestBreakoutInheritedDescriptors(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	root, err := os.Open("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	e := newEnv(t, "")
	e.extraFiles = []*os.File{root} // fd 3 of the agent, not close-on-exec
	a := e.start()
	probe := `{ [ -e /proc/$$/fd/3 ] && echo LEAKED || echo clean; } > $NOMAD_ALLOC_DIR/fd.tmp && mv $NOMAD_ALLOC_DIR/fd.tmp $NOMAD_ALLOC_DIR/fd`
	for _, tk := range []taskSpec{shTask("r", e.markerFor("r"), probe), execTask("x", e.markerFor("x"), probe)} {
		id := "fd-" + tk.name
		alloc := a.runJob(id, jobHCL(id, noRestart, tk))[0]
		if got := e.allocFile(t, a, alloc, "fd"); got != "clean\n" {
			t.Errorf("%s task: fd 3 is %q", tk.name, got)
		}
	}
}

// Finding 8: a plugin's handshake named another plugin's socket. On main
// the liar was registered healthy on it, and when its job stopped the
// agent sent go-plugin's Shutdown to the other plugin, which exited. Now
// the liar's launch is refused with the reason, and the victim keeps
// running, healthy, with the same pid.
func TestBreakoutHandshakeNamesAnotherSocket(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	victim := a.runJob("victim", jobHCL("victim", restartPolicy, csiTask(t, "go_plugin", "p", e.markerFor("victim"), "vic", "30s")))[0]
	w.waitHealthy(victim)
	al, err := a.client.Allocation(context.Background(), victim)
	if err != nil {
		t.Fatal(err)
	}
	pid := lastPid(al, "p")
	plugins, err := a.client.RegisteredPlugins(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	sock := ""
	for _, p := range plugins {
		if p.ActiveAllocID == victim {
			sock = p.SocketPath
		}
	}
	if sock == "" {
		t.Fatalf("the victim's socket is not in the registry: %+v", plugins)
	}
	liar := filepath.Join(e.root, "liar")
	writeFile(t, liar, fmt.Sprintf("#!/bin/sh\necho '1|1|unix|%s|grpc'\nexec sleep 1000000\n", sock))
	if err := os.Chmod(liar, 0o755); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`job "liar" {
  group "g" {
%s
    task "l" {
      driver = "go_plugin"
      config {
        command = %q
        handshake {
          magic_cookie_key   = "LIAR"
          magic_cookie_value = "yes"
          protocol_versions  = [1]
        }
        plugin {
          type = "kv"
          name = "liar"
        }
      }
      env {
        E2E_MARK = %q
      }
    }
  }
}
`, noRestart, liar, e.markerFor("liar"))
	la := a.runJob("liar", src)[0]
	// Refused, or (as on main) running: either way the liar's job then
	// stops, which on main sent the victim go-plugin's Shutdown.
	al = a.waitAlloc(la, "the liar refused or running", func(al *api.Allocation) bool {
		return al.ClientStatus == api.AllocClientStatusFailed || al.ClientStatus == api.AllocClientStatusRunning
	})
	a.stopJob("liar")
	if !alive(pid) {
		t.Fatalf("the victim plugin (pid %d) died when the liar's job stopped", pid)
	}
	w.waitHealthy(victim)
	vl, err := a.client.Allocation(context.Background(), victim)
	if err != nil || lastPid(vl, "p") != pid {
		t.Fatalf("the victim was restarted (pid %d, was %d): %v", lastPid(vl, "p"), pid, err)
	}
	found := false
	for _, ev := range events(al, "l", api.TaskDriverFailure) {
		found = found || strings.Contains(ev.DisplayMessage, "outside its own socket directory")
	}
	if !found {
		t.Fatalf("the liar's launch was not refused with the reason: %s", allocSummary(al))
	}
}

// Finding 10: a clean stop left the agent's empty parent cgroups and a
// <data_dir>/csi bind mount, even on an agent that never served CSI. Now
// an agent that stops with no allocation leaves no mount and no parent
// cgroup; one whose task runs on keeps only what that task needs.
func TestCleanStopLeavesNothing(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, "")
	a := e.start()
	a.runJob("brief", jobHCL("brief", noRestart, shTask("t", e.markerFor("brief"), sleeper)))
	if err := a.client.StopJob(context.Background(), "brief", true); err != nil {
		t.Fatal(err)
	}
	a.stop(t)
	if m := mountsUnder(t, e.dataDir); len(m) != 0 {
		t.Errorf("mounts left by a clean stop: %v", m)
	}
	if dirs := cgroupDirs(e.cgroupParent); len(dirs) != 0 {
		t.Errorf("parent cgroups left by a clean stop: %v", dirs)
	}

	b := e.start()
	b.runStarted("stays", jobHCL("stays", noRestart, shTask("t", e.markerFor("stays"), sleeper)), 1)
	b.stop(t)
	if len(topMarked(e.markerFor("stays"))) != 1 {
		t.Fatal("the task did not outlive the agent's clean stop")
	}
	if len(cgroupDirs(e.cgroupParent)) == 0 {
		t.Error("the parent cgroup of a task that runs on was removed")
	}
	if m := mountsUnder(t, e.dataDir); len(m) != 1 || m[0] != filepath.Join(e.dataDir, "alloc") {
		t.Errorf("mounts after a clean stop with a task running: %v, want the allocation tree's only", m)
	}
}

// stop stops the agent cleanly (SIGTERM) and waits for it to exit.
func (a *agentProc) stop(t *testing.T) {
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent did not stop on SIGTERM:\n%s", a.output())
	}
	a.client.Close()
}

// cgroupDirs lists parent's directory in every cgroup hierarchy where it
// exists.
func cgroupDirs(parent string) []string {
	var out []string
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range append([]string{""}, names(ents)...) {
		p := filepath.Join("/sys/fs/cgroup", h, parent)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

func names(ents []os.DirEntry) []string {
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = e.Name()
	}
	return out
}

// Review finding F4: a raw_exec CSI plugin as nobody whose process says it
// was started with another plugin's endpoint: it re-execs itself with
// CSI_ENDPOINT naming the root plugin's socket, serving its own all along.
// After kill -9 and restart the agent registers it at its own socket, as
// the job launched it. Before, the agent read the endpoint back from
// /proc/<pid>/environ and registered the root plugin's socket under the
// nobody task's allocation (volume create then ran in the root plugin).
func TestBreakoutRewrittenEnvironment(t *testing.T) {
	needCgroups(t)
	t.Parallel()
	e := newEnv(t, csiConfig)
	openToEveryone(t, e)
	a := e.start()
	w := a.watchPlugins()
	victim := a.runJob("victim", jobHCL("victim", restartPolicy, csiTask(t, "raw_exec", "p", e.markerFor("victim"), "victim", "30s")))[0]
	w.waitHealthy(victim)
	sockets := func() map[string]string {
		list, err := a.client.RegisteredPlugins(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range list {
			out[p.Name] = p.SocketPath
		}
		return out
	}
	victimSock := sockets()["victim"]
	if victimSock == "" {
		t.Fatal("the victim plugin has no socket in the registry")
	}
	evil := csiTask(t, "raw_exec", "p", e.markerFor("evil"), "evil", "30s")
	// A copy nobody may run (the test binaries' directory is root's).
	bin := filepath.Join(e.root, "bin", "mockcsi")
	b, err := os.ReadFile(evil.cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	evil.args = []string{"-c", `exec env CSI_ENDPOINT=unix://` + victimSock + ` ` + bin + ` --endpoint=$CSI_ENDPOINT --node-id=evil`}
	evil.cmd = "/bin/sh"
	evil.extra += "      user = \"nobody\"\n"
	ev := a.runJob("evil", jobHCL("evil", restartPolicy, evil))[0]
	w.waitHealthy(ev)
	own := sockets()["evil"]
	if own == "" || own == victimSock {
		t.Fatalf("the evil plugin's socket before the restart: %q", own)
	}

	a.kill()
	a = e.start()
	w = a.watchPlugins()
	a.mustWait("both plugins registered again", 60*time.Second, func(ctx context.Context) (bool, error) {
		s := sockets()
		return s["evil"] != "" && s["victim"] != "", nil
	}, api.TopicRegistry, api.TopicPlugin)
	if got := sockets()["evil"]; got != own {
		t.Fatalf("after the restart the nobody plugin is registered at %q, want its own socket %q (the root plugin's is %q)", got, own, victimSock)
	}
}
