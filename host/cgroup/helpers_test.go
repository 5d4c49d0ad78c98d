package cgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/testproc"
)

// testLogger logs into the test's output; benchmarks get no logger, so
// that logging is not what they measure.
func testLogger(t testing.TB) hclog.Logger {
	if _, ok := t.(*testing.B); ok {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testParent() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "/pluginhost-test-" + hex.EncodeToString(b[:])
}

// realV1 gives a Manager on this machine's v1 hierarchies under a parent
// of its own, removed with everything in it when the test ends.
func realV1(t testing.TB) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroups need root")
	}
	m := Detect(testLogger(t), Options{Mode: "v1", Parent: testParent()})
	if !m.Enabled() {
		t.Skipf("no cgroup v1 here: %s", m.Reason())
	}
	cleanupParent(t, m)
	return m
}

// realUnified gives a v2 Manager on the cgroup2 mount of a hybrid host
// (/sys/fs/cgroup/unified): no controllers, but real membership,
// cgroup.kill, cgroup.freeze and rmdir. On a pure v2 host it uses the real
// root, where controllers are enabled too.
func realUnified(t testing.TB) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroups need root")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no mountinfo: %v", err)
	}
	mounts, err := cgroupMounts(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var root string
	for _, mt := range mounts {
		if mt.v2 {
			root = mt.dir
			break
		}
	}
	if root == "" {
		t.Skip("no cgroup2 filesystem mounted")
	}
	m := Detect(testLogger(t), Options{Mode: "v2", Root: root, Parent: testParent()})
	if !m.Enabled() {
		t.Skipf("cgroup2 at %s unusable: %s", root, m.Reason())
	}
	cleanupParent(t, m)
	return m
}

// cleanupParent removes, when the test ends (failed or not), every task
// cgroup under m's parent and the parent itself, killing what is left in
// them, and fails the test if anything stays.
func cleanupParent(t testing.TB, m *Manager) {
	t.Cleanup(func() {
		for _, root := range m.Info().Hierarchies {
			parent := filepath.Join(root, m.parent)
			ents, _ := os.ReadDir(parent)
			for _, e := range ents {
				if !e.IsDir() {
					continue
				}
				dir := filepath.Join(parent, e.Name())
				_ = writeFile(filepath.Join(dir, "freezer.state"), "THAWED")
				_ = writeFile(filepath.Join(dir, "cgroup.freeze"), "0")
				for range 200 {
					ps, _ := readPids(filepath.Join(dir, "cgroup.procs"))
					if len(ps) == 0 {
						break
					}
					for _, pid := range ps {
						_ = unix.Kill(pid, unix.SIGKILL)
					}
					time.Sleep(5 * time.Millisecond)
				}
				for range 200 {
					if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if err := unix.Rmdir(parent); err != nil && !errors.Is(err, unix.ENOENT) {
				t.Errorf("cleanup: rmdir %s: %v", parent, err)
			}
			if _, err := os.Stat(parent); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("cleanup: %s is still there (%v)", parent, err)
			}
		}
	})
}

// killGroup SIGKILLs every process listed in g, thawed first, until none
// is or a second has passed. Cleanups use it rather than Kill, the code
// under test.
func killGroup(g *Group) {
	for _, dir := range g.dirs {
		_ = writeFile(filepath.Join(dir, "freezer.state"), "THAWED")
		_ = writeFile(filepath.Join(dir, "cgroup.freeze"), "0")
	}
	for range 200 {
		n := 0
		for _, f := range g.procs {
			ps, _ := readPids(f)
			n += len(ps)
			for _, pid := range ps {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// proc is a shell script started inside a group.
type proc struct {
	cmd *exec.Cmd
	// out is the script's stdout and stderr, readable while it runs.
	out    *testproc.Buffer
	waited chan error
}

// startIn starts `sh -c script` inside g. On v2 it joins through clone3
// with the group's descriptor; on v1 the script first blocks reading stdin
// until AddPid has moved it, as the driver's ptrace stop would. The process
// is killed and reaped when the test ends.
func startIn(t testing.TB, g *Group, script string) *proc {
	t.Helper()
	p := &proc{out: &testproc.Buffer{}, waited: make(chan error, 1)}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	var gate io.WriteCloser
	if g.m.version == 2 {
		fd, err := g.FD()
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	} else {
		cmd.Args = []string{"sh", "-c", "read _ ; " + script}
		var err error
		if gate, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %q: %v", script, err)
	}
	p.cmd = cmd
	go func() { p.waited <- cmd.Wait() }()
	t.Cleanup(func() {
		// The script's orphans hold its output pipe, which Wait waits
		// for: a test that failed before its Kill would otherwise wait
		// here as long as they sleep.
		killGroup(g)
		_ = cmd.Process.Kill()
		select {
		case <-p.waited:
		case <-time.After(10 * time.Second):
			t.Errorf("cleanup: %q not reaped 10 s after its group was killed", script)
		}
	})
	if gate != nil {
		if err := g.AddPid(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if _, err := gate.Write([]byte("go\n")); err != nil {
			t.Fatal(err)
		}
		gate.Close()
	}
	return p
}

// wait waits for the process to end and returns its wait status.
func (p *proc) wait(t testing.TB, d time.Duration) syscall.WaitStatus {
	t.Helper()
	select {
	case err := <-p.waited:
		p.waited <- err // for the cleanup
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("waiting: %v", err)
		}
		return p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	case <-time.After(d):
		t.Fatalf("process still running after %v; output: %s", d, p.out)
	}
	return 0
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// comm is a process's command name, "" if gone.
func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readTrim(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// treeScript leaves four sleeps behind: one in a session of its own
// (setsid), two double-forked orphans and the script itself turned sleep.
const treeScript = `setsid sh -c 'exec sleep 300' &
(sleep 301 &)
sh -c 'sleep 302 & exit 0'
exec sleep 303`

// checkTreeKilled starts treeScript in g, waits for its four sleeps, kills
// the group and checks every one of them is gone.
func checkTreeKilled(t *testing.T, g *Group) {
	p := startIn(t, g, treeScript)
	var pids []int
	waitFor(t, 5*time.Second, "four sleeps in the group", func() bool {
		ps, err := g.Pids()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, pid := range ps {
			if comm(pid) == "sleep" {
				n++
			}
		}
		pids = ps
		return n == 4 && len(ps) == 4
	})
	main := p.cmd.Process.Pid
	if !slices.Contains(pids, main) {
		t.Fatalf("the task's own pid %d is not among %v", main, pids)
	}
	mainSid, _ := unix.Getsid(main)
	sessions := map[int]bool{}
	for _, pid := range pids {
		sid, err := unix.Getsid(pid)
		if err != nil {
			t.Fatal(err)
		}
		sessions[sid] = true
	}
	if len(sessions) < 2 {
		t.Fatalf("expected a setsid child: all of %v are in session %d", pids, mainSid)
	}
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ps, err := g.Pids(); err != nil || len(ps) != 0 {
		t.Fatalf("after Kill the group holds %v (%v)", ps, err)
	}
	for _, pid := range pids {
		if processLive(pid) {
			t.Errorf("pid %d (%s) survived Kill", pid, comm(pid))
		}
	}
	st := p.wait(t, 5*time.Second)
	if !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Errorf("task ended with %v, want killed by SIGKILL", st)
	}
}

// checkGone fails unless every directory of g is gone.
func checkGone(t testing.TB, g *Group) {
	t.Helper()
	for _, d := range g.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still exists (%v)", d, err)
		}
	}
}

// checkForkLoopKilled starts a loop forking orphans as fast as it can
// (bounded: 5000 forks, each child sleeping 30 s) in g, kills the group
// while it forks and destroys it.
func checkForkLoopKilled(t *testing.T, g *Group) {
	t.Helper()
	var pidsMax string
	if g.pids != "" {
		pidsMax = readTrim(t, filepath.Join(g.pids, "pids.max"))
	}
	startIn(t, g, `i=0; while [ $i -lt 5000 ]; do (sleep 30 &); i=$((i+1)); done; exec sleep 300`)
	waitFor(t, 10*time.Second, "50 processes", func() bool {
		ps, _ := g.Pids()
		return len(ps) >= 50
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ps, _ := g.Pids()
	start := time.Now()
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %d+ processes of a fork loop in %v", len(ps), time.Since(start))
	// A process may still be listed while it finishes exiting (its
	// orphans' reaper is this machine's init, which may be slow under
	// load): what must not be left is a live one.
	if left, _ := g.Pids(); len(liveOnly(left)) != 0 {
		t.Fatalf("left alive: %v", liveOnly(left))
	}
	// Kill held forks with pids.max 0 while it swept; the limit is back.
	if g.pids != "" {
		if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != pidsMax {
			t.Errorf("pids.max after Kill = %s, want %s as before", got, pidsMax)
		}
		ev, _ := readKV(filepath.Join(g.pids, "pids.events"))
		t.Logf("forks refused while Kill swept: %d", ev["max"])
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
}
