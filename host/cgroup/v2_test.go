package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// On a real cgroup2 mount a child started with the group's descriptor is
// in the group from its first instruction, and cgroup.kill takes setsid and
// double-forked children with it.
func TestV2JoinByFDAndKill(t *testing.T) {
	m := realUnified(t)
	t.Logf("v2 root %s, controllers %v", m.root, m.controllers)
	g, err := m.Create("tree", Limits{MemoryMB: 64, CPU: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !m.has("memory") {
		t.Log("this cgroup2 mount offers no memory controller: limits are not written (Root given, test mode)")
	}
	if _, err := os.Stat(filepath.Join(g.dirs[0], "cgroup.kill")); err != nil {
		t.Skipf("kernel without cgroup.kill: %v", err)
	}
	checkTreeKilled(t, g)
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
}

// cgroup.kill empties a group that is forking as fast as it can.
func TestV2KillForkLoop(t *testing.T) {
	m := realUnified(t)
	g, err := m.Create("forker", Limits{MemoryMB: 256})
	if err != nil {
		t.Fatal(err)
	}
	checkForkLoopKilled(t, g)
}

// The freeze–kill–thaw sweep (v1's way, and v2's on kernels without
// cgroup.kill) empties a real v2 group too, through cgroup.freeze.
func TestV2FreezeSweepWithoutCgroupKill(t *testing.T) {
	m := realUnified(t)
	g, err := m.Create("sweep", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(g.dirs[0], "cgroup.freeze")); err != nil {
		t.Skipf("no cgroup.freeze: %v", err)
	}
	p := startIn(t, g, treeScript)
	waitFor(t, 5*time.Second, "four processes", func() bool {
		ps, _ := g.Pids()
		return len(ps) == 4
	})
	ps, _ := g.Pids()
	for round := 0; ; round++ {
		left, err := g.sweep(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if round > 100 {
			t.Fatalf("still %v after 100 sweeps", left)
		}
		time.Sleep(time.Millisecond)
	}
	for _, pid := range ps {
		if processLive(pid) {
			t.Errorf("pid %d survived", pid)
		}
	}
	if got := readTrim(t, filepath.Join(g.dirs[0], "cgroup.freeze")); got != "0" {
		t.Errorf("sweep left cgroup.freeze = %s", got)
	}
	p.wait(t, 5*time.Second)
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// Restart, Leftovers, Open, CPU stats and Destroy on a real cgroup2 mount.
func TestV2OpenStatsLeftoversDestroy(t *testing.T) {
	m := realUnified(t)
	g, err := m.Create("alloc1.web", Limits{MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	p := startIn(t, g, "while :; do :; done")
	m2 := Detect(testLogger(t), Options{Mode: "v2", Root: m.root, Parent: m.Parent()})
	left, err := m2.Leftovers()
	if err != nil || !slices.Equal(left, []string{g.Path()}) {
		t.Fatalf("Leftovers = %v, %v", left, err)
	}
	g2, err := m2.Open(g.Path())
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := g2.Pids(); !slices.Equal(ps, []int{p.cmd.Process.Pid}) {
		t.Fatalf("reopened group holds %v", ps)
	}
	var s Stats
	waitFor(t, 10*time.Second, "100 ms of CPU", func() bool {
		s, err = g2.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return s.CPUUsageNanos >= 100e6 && s.CPUUserNanos > 0
	})
	t.Logf("stats: %+v", s)
	fd, err := g2.FD()
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	if err := g2.Kill(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g2.Destroy(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g2)
	if _, err := m2.Open(g.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open after Destroy: %v", err)
	}
	if err := g2.Destroy(); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
}

// fakeV2 lays out a temp dir like a cgroup2 root offering memory, cpu and
// pids, with the files the kernel would put in the task cgroup name once
// the controllers are enabled (a plain directory gets no files by itself).
func fakeV2(t *testing.T, parent string, names ...string) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n")
	write(filepath.Join(root, "cgroup.subtree_control"), "")
	write(filepath.Join(root, parent, "cgroup.subtree_control"), "")
	for _, n := range names {
		dir := filepath.Join(root, parent, n)
		for _, f := range []string{"cgroup.procs", "cgroup.kill", "memory.max", "memory.low", "cpu.weight", "pids.max", "pids.current"} {
			write(filepath.Join(dir, f), "")
		}
	}
	return root
}

// Limits are written as Nomad writes them on v2, and the controllers are
// enabled in every ancestor's subtree_control.
func TestV2LimitsOnFakeRoot(t *testing.T) {
	root := fakeV2(t, "/pluginhost", "a1.web")
	m := Detect(testLogger(t), Options{Root: root})
	if m.Version() != 2 {
		t.Fatalf("version %d: %s", m.Version(), m.Reason())
	}
	if in := m.Info(); !slices.Equal(in.Controllers, []string{"memory", "cpu", "pids"}) || in.Parent != "/pluginhost" {
		t.Fatalf("info %+v", in)
	}
	dir := filepath.Join(root, "pluginhost", "a1.web")
	for _, c := range []struct {
		l                      Limits
		max, low, weight, pids string
	}{
		{Limits{MemoryMB: 300, CPU: 100, PidsLimit: 2048}, strconv.Itoa(300 << 20), "0", "17", "2048"},
		{Limits{MemoryMB: 64, MemoryMaxMB: 128, CPU: 1024}, strconv.Itoa(128 << 20), strconv.Itoa(64 << 20), "100", "max"},
		{Limits{MemoryMB: 64, MemoryMaxMB: -1, CPU: 500, PidsLimit: 1}, "max", strconv.Itoa(64 << 20), strconv.FormatUint(CPUWeight(500), 10), "1"},
		{Limits{}, "max", "0", "100", "max"},
	} {
		g, err := m.Create("a1.web", c.l)
		if err != nil {
			t.Fatal(err)
		}
		if g.Path() != "/pluginhost/a1.web" || g.Dirs()[0] != dir {
			t.Fatalf("path %s dirs %v", g.Path(), g.Dirs())
		}
		got := []string{readTrim(t, filepath.Join(dir, "memory.max")), readTrim(t, filepath.Join(dir, "memory.low")),
			readTrim(t, filepath.Join(dir, "cpu.weight")), readTrim(t, filepath.Join(dir, "pids.max"))}
		if want := []string{c.max, c.low, c.weight, c.pids}; !slices.Equal(got, want) {
			t.Errorf("%+v: memory.max, memory.low, cpu.weight, pids.max = %q, want %q", c.l, got, want)
		}
	}
	for _, p := range []string{"cgroup.subtree_control", "pluginhost/cgroup.subtree_control"} {
		if got := readTrim(t, filepath.Join(root, p)); got != "+memory +cpu +pids" {
			t.Errorf("%s = %q", p, got)
		}
	}
	// A controller file the kernel did not make is an error, not a file we
	// create: it means the controller is not enabled.
	if err := os.Remove(filepath.Join(dir, "memory.max")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create("a1.web", Limits{MemoryMB: 64}); err == nil || !strings.Contains(err.Error(), "memory.max") {
		t.Errorf("Create without memory.max: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Create made memory.max itself")
	}
	// FD is v2's way in; AddPid writes the one cgroup.procs.
	if err := m.group("a1.web").AddPid(4242); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(dir, "cgroup.procs")); got != "4242" {
		t.Errorf("cgroup.procs = %q", got)
	}
}

// OOMKills reads memory.events, and Stats maps v2's files onto Nomad's
// fields.
func TestV2EventsAndStatsOnFakeRoot(t *testing.T) {
	root := fakeV2(t, "/pluginhost", "a1.web")
	m := Detect(testLogger(t), Options{Root: root})
	g, err := m.Create("a1.web", Limits{MemoryMB: 32})
	if err != nil {
		t.Fatal(err)
	}
	dir := g.Dirs()[0]
	if _, err := g.OOMKills(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OOMKills without memory.events: %v", err)
	}
	files := map[string]string{
		"memory.events":       "low 0\nhigh 0\nmax 17\noom 3\noom_kill 2\noom_group_kill 0\n",
		"memory.stat":         "anon 1000\nfile 2000\nkernel 300\nkernel_stack 16384\nfile_mapped 400\nshmem 0\n",
		"memory.current":      "5000\n",
		"memory.peak":         "9000\n",
		"memory.swap.current": "0\n",
		"cpu.stat":            "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 10\nnr_throttled 4\nthrottled_usec 250\nnr_bursts 0\nburst_usec 0\n",
		"pids.current":        "7\n",
		"pids.max":            "2048\n",
	}
	for f, s := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := g.OOMKills(); err != nil || n != 2 {
		t.Errorf("OOMKills = %d, %v; want 2", n, err)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Time: s.Time, MemoryRSS: 1000, MemoryCache: 2000, MemoryMappedFile: 400, MemoryKernelUsage: 300,
		MemoryUsage: 5000, MemoryMaxUsage: 9000, CPUUsageNanos: 1500e3, CPUUserNanos: 1000e3, CPUSystemNanos: 500e3,
		CPUThrottledPeriods: 4, CPUThrottledNanos: 250e3,
		MemoryMeasured: []string{"RSS", "Cache", "Mapped File", "Kernel Usage", "Usage", "Max Usage", "Swap"},
		CPUMeasured:    []string{"System Mode", "User Mode", "Percent", "Throttled Periods", "Throttled Time"},
		PidsCurrent:    7, PidsLimit: 2048, PidsMeasured: true}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Stats\n got %+v\nwant %+v", s, want)
	}
	// Before Linux 5.19 there is no memory.peak: Max Usage is not measured.
	os.Remove(filepath.Join(dir, "memory.peak"))
	if s, _ := g.Stats(); slices.Contains(s.MemoryMeasured, "Max Usage") {
		t.Errorf("Max Usage measured without memory.peak: %v", s.MemoryMeasured)
	}
	// pids.max "max" is no limit, 0 in Stats.
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := g.Stats(); err != nil || s.PidsLimit != 0 || s.PidsCurrent != 7 || !s.PidsMeasured {
		t.Errorf("pids.max max: current %d limit %d measured %v (%v), want 7 0 true", s.PidsCurrent, s.PidsLimit, s.PidsMeasured, err)
	}
}
