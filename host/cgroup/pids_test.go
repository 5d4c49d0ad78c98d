package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forkBomb tries 200 times to leave a sleep behind, each from a subshell:
// a subshell that cannot fork exits alone (a shell that cannot fork
// exits), so the script goes on and counts the refusals, then stays, as
// one process, with what it made.
const forkBomb = `ok=0; no=0; i=0
while [ $i -lt 200 ]; do
  if (sleep 300 &) 2>/dev/null; then ok=$((ok+1)); else no=$((no+1)); fi
  i=$((i+1))
done
echo "ok=$ok refused=$no"
exec sleep 300`

var forkBombResult = regexp.MustCompile(`ok=(\d+) refused=(\d+)`)

// pidsGroup makes a group with limit n on m, or skips when m has no pids
// controller (a v2 mount that does not offer it).
func pidsGroup(t *testing.T, m *Manager, name string, n int) *Group {
	t.Helper()
	if !m.has("pids") {
		t.Skipf("no pids controller here (v%d, controllers %v)", m.version, m.Info().Controllers)
	}
	g, err := m.Create(name, Limits{MemoryMB: 256, PidsLimit: n})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != strconv.Itoa(n) {
		t.Fatalf("pids.max = %s, want %d", got, n)
	}
	return g
}

// checkPeak fails unless the group's pids.peak (where the kernel keeps
// one) is n, and its pids.events counts refused forks.
func checkPeak(t *testing.T, g *Group, n int) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(g.pids, "pids.peak")); err == nil {
		if peak := strings.TrimSpace(string(b)); peak != strconv.Itoa(n) {
			t.Errorf("pids.peak = %s, want the limit %d", peak, n)
		}
	}
	ev, err := readKV(filepath.Join(g.pids, "pids.events"))
	if err != nil {
		t.Fatal(err)
	}
	if ev["max"] == 0 {
		t.Errorf("pids.events counts no refused fork: %v", ev)
	}
}

// checkForkBombHeld runs forkBomb in a group limited to n: the script,
// a subshell and n-2 sleeps fill it, every further fork fails, and what
// stays is the script and its n-2 sleeps.
func checkForkBombHeld(t *testing.T, g *Group, n int) {
	p := startIn(t, g, forkBomb)
	var res []string
	waitFor(t, 60*time.Second, "the fork loop's count", func() bool {
		res = forkBombResult.FindStringSubmatch(p.out.String())
		return res != nil
	})
	ok, _ := strconv.Atoi(res[1])
	refused, _ := strconv.Atoi(res[2])
	t.Logf("limit %d: %d sleeps started, %d forks refused", n, ok, refused)
	if ok != n-2 || refused != 200-ok {
		t.Errorf("started %d sleeps, %d refused; want %d and %d", ok, refused, n-2, 200-(n-2))
	}
	var s Stats
	waitFor(t, 10*time.Second, "the script alone with its sleeps", func() bool {
		var err error
		if s, err = g.Stats(); err != nil {
			t.Fatal(err)
		}
		return s.PidsCurrent == uint64(n-1)
	})
	if !s.PidsMeasured || s.PidsLimit != uint64(n) {
		t.Errorf("stats: current %d limit %d measured %v, want %d %d true", s.PidsCurrent, s.PidsLimit, s.PidsMeasured, n-1, n)
	}
	checkPeak(t, g, n)
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Kill held forks with pids.max 0 while it swept; the limit is back.
	if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != strconv.Itoa(n) {
		t.Errorf("pids.max after Kill = %s, want %d", got, n)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// A group limited to 16 holds 16 processes at most: the 17th fork fails.
func TestV1PidsLimitHoldsForks(t *testing.T) {
	m := realV1(t)
	checkForkBombHeld(t, pidsGroup(t, m, "forks", 16), 16)
}

func TestV2PidsLimitHoldsForks(t *testing.T) {
	m := realUnified(t)
	checkForkBombHeld(t, pidsGroup(t, m, "forks", 16), 16)
}

// envThreads makes the test binary the task of checkThreadsHeld.
const envThreads = "PLUGINHOST_CGROUP_TEST_THREADS"

// TestThreadsHelper is not a test: run with envThreads=N it is a task
// that tries to hold N threads, each a goroutine locked to its thread and
// blocked in a read that never returns.
func TestThreadsHelper(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(envThreads))
	if err != nil {
		t.Skip("the task of TestV1PidsLimitHoldsThreads, not a test")
	}
	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	for range n {
		go func() {
			runtime.LockOSThread()
			var b [1]byte
			_, _ = unix.Read(fds[0], b[:])
		}()
	}
	// Reached only if every thread could be made.
	fmt.Printf("held %d threads\n", n)
	select {}
}

// threadRefused is how the Go runtime dies of a thread it could not make
// for EAGAIN (errno 11): in its own words, or in cgo's, which makes the
// threads of a binary built with -race.
var threadRefused = regexp.MustCompile(`failed to create new OS thread \(have \d+ already; errno=11\)|pthread_create failed: Resource temporarily unavailable`)

// checkThreadsHeld runs a Go program that tries to make 8,001 threads in
// a group limited to n. The clone past the limit fails with EAGAIN, which
// the Go runtime cannot survive: it says so and exits.
func checkThreadsHeld(t *testing.T, g *Group, n int) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := startIn(t, g, fmt.Sprintf("%s=8001 exec %q -test.run='^TestThreadsHelper$'", envThreads, exe))
	st := p.wait(t, 60*time.Second)
	out := p.out.String()
	if !threadRefused.MatchString(out) || st.ExitStatus() != 2 {
		t.Fatalf("8,001 threads under a limit of %d: exit %v, want 2 for a thread refused with EAGAIN; output:\n%s", n, st, out)
	}
	t.Logf("limit %d: %s", n, threadRefused.FindString(out))
	checkPeak(t, g, n)
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// A group limited to 32 holds 32 threads at most: thread 33's clone
// fails as a fork does.
func TestV1PidsLimitHoldsThreads(t *testing.T) {
	m := realV1(t)
	checkThreadsHeld(t, pidsGroup(t, m, "threads", 32), 32)
}

func TestV2PidsLimitHoldsThreads(t *testing.T) {
	m := realUnified(t)
	checkThreadsHeld(t, pidsGroup(t, m, "threads", 32), 32)
}

// pids.max is the limit, "max" for 0, rewritten by every Create, and
// Stats reads it back with the count.
func TestV1PidsMax(t *testing.T) {
	m := realV1(t)
	g := pidsGroup(t, m, "pidsmax", 100)
	p := startIn(t, g, "exec sleep 300")
	var s Stats
	waitFor(t, 5*time.Second, "the sleep counted", func() bool {
		var err error
		if s, err = g.Stats(); err != nil {
			t.Fatal(err)
		}
		return s.PidsCurrent == 1
	})
	if !s.PidsMeasured || s.PidsLimit != 100 {
		t.Errorf("stats: limit %d measured %v, want 100 true", s.PidsLimit, s.PidsMeasured)
	}
	if _, err := m.Create("pidsmax", Limits{MemoryMB: 256}); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != "max" {
		t.Errorf("pids.max with no limit = %s, want max", got)
	}
	if s, err := g.Stats(); err != nil || s.PidsLimit != 0 || s.PidsCurrent != 1 {
		t.Errorf("stats with no limit: limit %d current %d (%v), want 0 1", s.PidsLimit, s.PidsCurrent, err)
	}
	if _, err := m.Create("pidsmax", Limits{PidsLimit: -1}); err == nil {
		t.Error("a negative pids limit was accepted")
	}
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// Without a pids hierarchy the limit cannot be written: Create still
// makes the group, and Stats does not claim a count.
func TestV1WithoutPidsHierarchy(t *testing.T) {
	real := realV1(t)
	roots := map[string]string{}
	for c, dir := range real.v1 {
		if c != "pids" {
			roots[c] = dir
		}
	}
	m := Detect(testLogger(t), Options{Mode: "v1", Parent: real.Parent(), V1Roots: roots})
	if !m.Enabled() || m.has("pids") {
		t.Fatalf("manager without pids: %+v", m.Info())
	}
	g, err := m.Create("nopids", Limits{MemoryMB: 64, PidsLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if g.pids != "" {
		t.Errorf("group has a pids directory %s", g.pids)
	}
	s, err := g.Stats()
	if err != nil || s.PidsMeasured || s.PidsCurrent != 0 || s.PidsLimit != 0 {
		t.Errorf("stats without pids: %+v, %v", s, err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// While holdForks holds a group, a process in it cannot fork, whatever
// its limit: the shell waiting on a fifo dies at its next command; after
// release the limit is what it was.
func TestV1HoldForks(t *testing.T) {
	m := realV1(t)
	g := pidsGroup(t, m, "hold", 50)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// read and echo are builtins: only /bin/true needs a fork.
	p := startIn(t, g, fmt.Sprintf("echo ready; read _ < %q; /bin/true && echo forked", fifo))
	waitFor(t, 5*time.Second, "the shell ready", func() bool { return strings.Contains(p.out.String(), "ready") })
	release, err := g.holdForks()
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != "0" {
		t.Errorf("pids.max while held = %s, want 0", got)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	st := p.wait(t, 10*time.Second)
	if out := p.out.String(); st.ExitStatus() != 2 || strings.Contains(out, "forked") || !strings.Contains(out, "fork") {
		t.Errorf("a fork while held: exit %v, output %q; want the shell's fork error", st, out)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != "50" {
		t.Errorf("pids.max after release = %s, want 50", got)
	}
	// Released, the same script forks.
	p = startIn(t, g, "/bin/true && echo forked")
	if st := p.wait(t, 10*time.Second); st.ExitStatus() != 0 || !strings.Contains(p.out.String(), "forked") {
		t.Errorf("after release: exit %v, output %q", st, p.out.String())
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// Kills of one group overlap at a stop (the driver's and the task
// runner's): they take turns, so the last does not put back the first's
// 0, and both find the group empty. A group per round: the killed
// orphans' zombies keep their pids charge until init reaps them, which
// here can take seconds.
func TestV1ConcurrentKillsPutLimitBack(t *testing.T) {
	m := realV1(t)
	for round := range 5 {
		g := pidsGroup(t, m, fmt.Sprintf("twokills%d", round), 100)
		startIn(t, g, `i=0; while [ $i -lt 5000 ]; do (sleep 30 &); i=$((i+1)); done; exec sleep 300`)
		waitFor(t, 10*time.Second, "20 processes", func() bool {
			ps, _ := g.Pids()
			return len(ps) >= 20
		})
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- g.Kill(t.Context()) }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if got := readTrim(t, filepath.Join(g.pids, "pids.max")); got != "100" {
			t.Fatalf("round %d: pids.max after two Kills = %s, want 100", round, got)
		}
		if left, _ := g.Pids(); len(liveOnly(left)) != 0 {
			t.Fatalf("round %d: left alive: %v", round, liveOnly(left))
		}
		if err := g.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
}
