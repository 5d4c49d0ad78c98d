package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A task past its 32 MB hard limit is killed by the kernel's OOM killer,
// the exit looks like any kill -9, and OOMKills is what tells them apart.
func TestV1OOMKillIsCounted(t *testing.T) {
	m := realV1(t)
	g, err := m.Create("oom", Limits{MemoryMB: 32, CPU: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(g.mem, "memory.limit_in_bytes")); got != strconv.Itoa(32<<20) {
		t.Fatalf("memory.limit_in_bytes = %s, want %d", got, 32<<20)
	}
	before, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	if before != 0 {
		t.Fatalf("a new group has %d OOM kills", before)
	}
	p := startIn(t, g, `x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived`)
	st := p.wait(t, 30*time.Second)
	if !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Fatalf("allocating 200 MB under a 32 MB limit ended with %v; output %q", st, p.out)
	}
	after, err := g.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("OOMKills = %d after the kill, want more than %d", after, before)
	}
	t.Logf("exit %v, OOMKills %d → %d", st, before, after)
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
}

// setsid and double-forked children stay in the group and die with it.
func TestV1KillTakesSetsidAndDoubleForkedChildren(t *testing.T) {
	m := realV1(t)
	if m.v1["freezer"] == "" {
		t.Log("no freezer hierarchy: Kill sweeps without freezing")
	}
	g, err := m.Create("tree", Limits{MemoryMB: 64, CPU: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkTreeKilled(t, g)
	if g.freezer != "" {
		if st := readTrim(t, filepath.Join(g.freezer, "freezer.state")); st != "THAWED" {
			t.Errorf("Kill left the group %s", st)
		}
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
}

// A task forking orphans as fast as it can is emptied by the
// freeze–kill–thaw sweep.
func TestV1KillForkLoop(t *testing.T) {
	m := realV1(t)
	g, err := m.Create("forker", Limits{MemoryMB: 256, CPU: 100})
	if err != nil {
		t.Fatal(err)
	}
	checkForkLoopKilled(t, g)
}

// Without a freezer hierarchy Kill still empties a group, setsid, double
// forks and fork loop included: with the pids hierarchy no fork succeeds
// while it sweeps; without it either, one generation goes per round.
func TestV1KillWithoutFreezer(t *testing.T) {
	real := realV1(t)
	for _, c := range []struct {
		name    string
		without []string
	}{
		{"pids holds forks", []string{"freezer"}},
		{"no pids either", []string{"freezer", "pids"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			roots := map[string]string{}
			for ctrl, dir := range real.v1 {
				if !slices.Contains(c.without, ctrl) {
					roots[ctrl] = dir
				}
			}
			m := Detect(testLogger(t), Options{Mode: "v1", Parent: real.Parent(), V1Roots: roots})
			for _, ctrl := range c.without {
				if !m.Enabled() || m.has(ctrl) {
					t.Fatalf("manager without %s: %+v", ctrl, m.Info())
				}
			}
			if !slices.Contains(c.without, "pids") && !m.has("pids") {
				t.Skip("no pids hierarchy here")
			}
			g, err := m.Create("nofreezer", Limits{MemoryMB: 256, PidsLimit: 4096})
			if err != nil {
				t.Fatal(err)
			}
			checkTreeKilled(t, g)
			checkForkLoopKilled(t, g)
		})
	}
}

// Stats sees the memory and CPU a busy task uses, limits are written as
// Nomad writes them, and CPUPercent turns two samples into a percentage.
func TestV1StatsOfBusyTask(t *testing.T) {
	m := realV1(t)
	g, err := m.Create("busy", Limits{MemoryMB: 256, CPU: 500})
	if err != nil {
		t.Fatal(err)
	}
	if g.cpu != "" {
		if got := readTrim(t, filepath.Join(g.cpu, "cpu.shares")); got != "500" {
			t.Errorf("cpu.shares = %s, want 500", got)
		}
	}
	if got := readTrim(t, filepath.Join(g.mem, "memory.swappiness")); got != "0" {
		t.Errorf("memory.swappiness = %s, want 0", got)
	}
	startIn(t, g, `x=$(head -c 20000000 /dev/zero | tr "\0" a); while :; do :; done`)
	var s1 Stats
	waitFor(t, 10*time.Second, "20 MB and 200 ms of CPU", func() bool {
		s1, err = g.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return s1.MemoryRSS >= 20e6 && s1.CPUUsageNanos >= 200e6
	})
	time.Sleep(200 * time.Millisecond)
	s2, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", s2)
	if s2.MemoryUsage < s2.MemoryRSS || s2.MemoryMaxUsage < s2.MemoryUsage {
		t.Errorf("usage %d, max usage %d, rss %d: want rss ≤ usage ≤ max", s2.MemoryUsage, s2.MemoryMaxUsage, s2.MemoryRSS)
	}
	// cpuacct's user/system split is sampled per tick while its total is
	// exact, so the two need not add up.
	if s2.CPUUserNanos == 0 {
		t.Errorf("no user time: user %d system %d total %d", s2.CPUUserNanos, s2.CPUSystemNanos, s2.CPUUsageNanos)
	}
	total, user, _ := CPUPercent(s1, s2)
	if total < 10 || user <= 0 {
		t.Errorf("a busy loop used %.1f%% (user %.1f%%) of a core", total, user)
	}
	t.Logf("busy loop: %.0f%% of a core, %.0f MHz of a 2-core 4000 MHz box", total, TicksConsumed(total, 4000, 2))
	for _, want := range []string{"RSS", "Cache", "Usage", "Max Usage"} {
		if !slices.Contains(s2.MemoryMeasured, want) {
			t.Errorf("MemoryMeasured %v lacks %q", s2.MemoryMeasured, want)
		}
	}
	if !slices.Contains(s2.CPUMeasured, "Percent") {
		t.Errorf("CPUMeasured %v lacks Percent", s2.CPUMeasured)
	}
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// After an agent restart (a fresh Manager) a task's group is found by its
// path with its process still in it, Leftovers lists every group, and
// Destroy removes the group from every hierarchy, twice without error.
func TestV1OpenAfterRestartLeftoversDestroy(t *testing.T) {
	m := realV1(t)
	a, err := m.Create("alloc1.web", Limits{MemoryMB: 64, MemoryMaxMB: 128, CPU: 100})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Create("alloc2.db", Limits{MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Dirs()) != len(m.Info().Hierarchies) {
		t.Fatalf("group dirs %v, hierarchies %v", a.Dirs(), m.Info().Hierarchies)
	}
	for _, d := range a.Dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Fatal(err)
		}
	}
	p := startIn(t, a, "exec sleep 300")
	pid := p.cmd.Process.Pid

	// The agent is killed; a new one starts with the same options.
	m2 := Detect(testLogger(t), Options{Mode: "v1", Parent: m.Parent()})
	left, err := m2.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a.Path(), b.Path()}; !slices.Equal(left, want) {
		t.Fatalf("Leftovers = %v, want %v", left, want)
	}
	a2, err := m2.Open(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a2.Dirs(), a.Dirs()) || a2.Path() != a.Path() {
		t.Fatalf("reopened %v %v, made %v %v", a2.Path(), a2.Dirs(), a.Path(), a.Dirs())
	}
	ps, err := a2.Pids()
	if err != nil || !slices.Equal(ps, []int{pid}) {
		t.Fatalf("reopened group holds %v (%v), want [%d]", ps, err, pid)
	}
	// Create again is idempotent and rewrites the limits.
	if _, err := m2.Create("alloc1.web", Limits{MemoryMB: 96}); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(a.mem, "memory.limit_in_bytes")); got != strconv.Itoa(96<<20) {
		t.Errorf("memory.limit_in_bytes after re-Create = %s", got)
	}
	if ps, _ := a2.Pids(); !slices.Equal(ps, []int{pid}) {
		t.Errorf("re-Create moved processes: %v", ps)
	}

	if err := a2.Destroy(); err == nil {
		t.Fatal("Destroy of a group with a live process succeeded")
	} else {
		t.Logf("Destroy with a process inside: %v", err)
	}
	for _, d := range a2.Dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("a refused Destroy removed %s: %v", d, err)
		}
	}
	if err := a2.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a2.Destroy(); err != nil {
			t.Fatal(err)
		}
	}
	checkGone(t, a2)
	if _, err := m2.Open(a.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a removed group: %v, want ErrNotExist", err)
	}
	if left, _ := m2.Leftovers(); !slices.Equal(left, []string{b.Path()}) {
		t.Fatalf("Leftovers after Destroy = %v", left)
	}
	if _, err := m2.Open("/alloc2.db"); err == nil {
		t.Fatal("Open of a group in the root cgroup succeeded")
	}
	// cgroup_parent changed while b's task ran: the next agent finds b
	// where it was made, still limited, and can kill and remove it.
	q := startIn(t, b, "exec sleep 300")
	m3 := Detect(testLogger(t), Options{Mode: "v1", Parent: testParent()})
	cleanupParent(t, m3)
	b3, err := m3.Open(b.Path())
	if err != nil {
		t.Fatalf("Open under the earlier parent: %v", err)
	}
	if !slices.Equal(b3.Dirs(), b.Dirs()) || b3.Path() != b.Path() {
		t.Fatalf("reopened %v %v, made %v %v", b3.Path(), b3.Dirs(), b.Path(), b.Dirs())
	}
	if ps, _ := b3.Pids(); !slices.Equal(ps, []int{q.cmd.Process.Pid}) {
		t.Fatalf("group under the earlier parent holds %v, want [%d]", ps, q.cmd.Process.Pid)
	}
	if got := readTrim(t, filepath.Join(b3.mem, "memory.limit_in_bytes")); got != strconv.Itoa(64<<20) {
		t.Errorf("memory.limit_in_bytes under the earlier parent = %s", got)
	}
	if err := b3.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b3.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, b3)
}

// memory_max makes memory the soft limit, as in Nomad's oversubscription;
// dropping memory_max again resets the soft limit.
func TestV1MemoryOversubscription(t *testing.T) {
	m := realV1(t)
	unlimited := readTrim(t, filepath.Join(m.v1["memory"], "memory.limit_in_bytes"))
	for _, c := range []struct {
		l          Limits
		hard, soft string
	}{
		{Limits{MemoryMB: 64, MemoryMaxMB: 128}, strconv.Itoa(128 << 20), strconv.Itoa(64 << 20)},
		{Limits{MemoryMB: 64}, strconv.Itoa(64 << 20), unlimited},
		{Limits{MemoryMB: 64, MemoryMaxMB: -1}, unlimited, strconv.Itoa(64 << 20)},
	} {
		g, err := m.Create("over", c.l)
		if err != nil {
			t.Fatal(err)
		}
		hard := readTrim(t, filepath.Join(g.mem, "memory.limit_in_bytes"))
		soft := readTrim(t, filepath.Join(g.mem, "memory.soft_limit_in_bytes"))
		if hard != c.hard || soft != c.soft {
			t.Errorf("%+v: limit %s soft %s, want %s %s", c.l, hard, soft, c.hard, c.soft)
		}
	}
	if _, err := m.Create("bad", Limits{MemoryMB: 128, MemoryMaxMB: 64}); err == nil {
		t.Error("memory_max below memory accepted")
	}
	if left, _ := m.Leftovers(); len(left) != 1 {
		t.Errorf("a refused Create left %v", left)
	}
	g, _ := m.Open(filepath.Join(m.Parent(), "over"))
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// Detect with no options on a v1 (or hybrid) host picks v1 and lists the
// hierarchies it uses.
func TestDetectRealHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	m := Detect(testLogger(t), Options{})
	in := m.Info()
	t.Logf("detected: %+v", in)
	if !m.Enabled() {
		t.Skipf("no cgroups here: %s", m.Reason())
	}
	if in.Parent != DefaultParent || m.Reason() != "" {
		t.Errorf("info %+v", in)
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil && in.Version != 1 {
		t.Errorf("v1 memory hierarchy mounted but detected v%d", in.Version)
	}
	if in.Version == 1 && in.Controllers[0] != "memory" {
		t.Errorf("controllers %v: memory must come first", in.Controllers)
	}
}

// A group left in only some hierarchies (an agent killed in the middle of
// Destroy) is still listed, opened and removed.
func TestV1HalfRemovedGroup(t *testing.T) {
	m := realV1(t)
	g, err := m.Create("half", Limits{MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Dirs()) < 2 {
		t.Skip("only one v1 hierarchy")
	}
	if err := os.Remove(g.mem); err != nil {
		t.Fatal(err)
	}
	if left, _ := m.Leftovers(); !slices.Equal(left, []string{g.Path()}) {
		t.Fatalf("Leftovers = %v", left)
	}
	h, err := m.Open(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Dirs()) != len(g.Dirs())-1 {
		t.Fatalf("opened %v", h.Dirs())
	}
	if _, err := h.Stats(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stats without the memory hierarchy: %v", err)
	}
	if err := h.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := h.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
	if _, err := m.Open(g.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a removed group: %v", err)
	}
}

// A thread that enters a group forks a child born in it, in every
// hierarchy, and comes back to its own cgroups; the process it belongs to
// is not left listed in the group.
func TestV1EnterThreadForksIntoTheGroup(t *testing.T) {
	m := realV1(t)
	g, err := m.Create("thread", Limits{MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Fresh() {
		t.Error("a group Create made (parent included) is not Fresh")
	}
	type result struct {
		before, after string
		cmd           *exec.Cmd
		err           error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var r result
		b, _ := os.ReadFile("/proc/thread-self/cgroup")
		r.before = string(b)
		leave, err := g.EnterThread()
		if err != nil {
			r.err = err
			ch <- r
			return // locked: the thread ends with the goroutine
		}
		r.cmd = exec.Command("sleep", "300")
		r.err = r.cmd.Start()
		if err := leave(); err != nil {
			r.err = errors.Join(r.err, err)
			ch <- r
			return
		}
		b, _ = os.ReadFile("/proc/thread-self/cgroup")
		r.after = string(b)
		runtime.UnlockOSThread()
		ch <- r
	}()
	r := <-ch
	if r.cmd != nil && r.cmd.Process != nil {
		t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.after != r.before {
		t.Fatalf("the thread did not come back:\nbefore %s\nafter %s", r.before, r.after)
	}
	pid := r.cmd.Process.Pid
	for _, f := range g.ProcsFiles() {
		if got := readTrim(t, f); got != strconv.Itoa(pid) {
			t.Errorf("%s lists %q, want the child %d alone", f, got, pid)
		}
	}
	if err := g.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
}
