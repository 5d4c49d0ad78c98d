package cgroup

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpu (MHz) → cpu.shares → cpu.weight as Nomad computes it; the figures
// are opencontainers/cgroups v0.0.7's, which Nomad pins.
func TestCPUConversion(t *testing.T) {
	for _, c := range []struct {
		mhz    int
		shares uint64
		weight uint64
	}{
		{0, 1024, 100}, {1, 2, 1}, {2, 2, 1}, {3, 3, 2}, {10, 10, 4}, {100, 100, 17},
		{250, 250, 34}, {500, 500, 58}, {1000, 1000, 99}, {1024, 1024, 100}, {2000, 2000, 170},
		{4096, 4096, 303}, {10000, 10000, 627}, {100000, 100000, 4340},
		{262143, 262143, 10000}, {262144, 262144, 10000}, {1 << 20, 262144, 10000},
	} {
		s := CPUShares(c.mhz)
		w := CPUWeight(s)
		if s != c.shares || w != c.weight {
			t.Errorf("cpu %d MHz: shares %d weight %d, want %d %d", c.mhz, s, w, c.shares, c.weight)
		}
	}
	prev := uint64(0)
	for s := uint64(2); s <= 262144; s++ {
		w := CPUWeight(s)
		if w < prev || w < 1 || w > 10000 {
			t.Fatalf("CPUWeight(%d) = %d after %d: not monotonic within [1, 10000]", s, w, prev)
		}
		prev = w
	}
}

func TestMemoryBytes(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		l          Limits
		hard, soft int64
	}{
		{Limits{MemoryMB: 300}, 300 * mb, -1},
		{Limits{}, -1, -1},
		{Limits{MemoryMB: 64, MemoryMaxMB: 128}, 128 * mb, 64 * mb},
		{Limits{MemoryMB: 64, MemoryMaxMB: -1}, -1, 64 * mb},
		{Limits{MemoryMB: 64, MemoryMaxMB: 64}, 64 * mb, 64 * mb},
	} {
		if h, s := c.l.memoryBytes(); h != c.hard || s != c.soft {
			t.Errorf("%+v: hard %d soft %d, want %d %d", c.l, h, s, c.hard, c.soft)
		}
	}
	for _, bad := range []Limits{{MemoryMB: -1}, {MemoryMaxMB: -2}, {MemoryMB: 128, MemoryMaxMB: 64}, {CPU: -5},
		{PidsLimit: -1}, {PidsLimit: MaxPidsLimit + 1}} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestCgroupMounts(t *testing.T) {
	const info = `24 1 0:22 / /sys rw,nosuid - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
99 50 0:32 / /var/lib/x/cg\040mem rw - cgroup cgroup rw,memory
`
	got, err := cgroupMounts(strings.NewReader(info))
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{dir: "/sys/fs/cgroup/cpu,cpuacct", controllers: []string{"cpu", "cpuacct"}},
		{dir: "/sys/fs/cgroup/memory", controllers: []string{"memory"}},
		{dir: "/sys/fs/cgroup/freezer", controllers: []string{"freezer"}},
		{dir: "/sys/fs/cgroup/systemd"},
		{dir: "/sys/fs/cgroup/unified", v2: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"0b0a5a2e-1c3d-4e5f-8a9b-0c1d2e3f4a5b.web", "a", "web-1"} {
		if err := checkName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "cgroup.procs", "memory.max", "x\n"} {
		if err := checkName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for in, want := range map[string]string{"": "/pluginhost", "nomad": "/nomad", "/a/b/": "/a/b", "a//b": "/a/b"} {
		if got, err := cleanParent(in); err != nil || got != want {
			t.Errorf("cleanParent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/", "/..", "/a/cgroup.procs"} {
		if _, err := cleanParent(bad); err == nil {
			t.Errorf("parent %q accepted", bad)
		}
	}
}

func TestParseKV(t *testing.T) {
	kv := parseKV([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 7\nweird line here\n\n"))
	if kv["oom_kill"] != 7 || len(kv) != 3 {
		t.Errorf("%v", kv)
	}
}

// Detect never fails; a disabled Manager says why and refuses work.
func TestDetectDisabled(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		opts Options
		why  string
	}{
		{Options{Mode: "v3"}, "unknown cgroup mode"},
		{Options{Parent: "/"}, "root of a hierarchy"},
		{Options{Root: root}, "cgroup.controllers"},
		{Options{V1Roots: map[string]string{"cpu": root}}, "no memory hierarchy"},
	} {
		m := Detect(nil, c.opts)
		if m.Enabled() || m.Version() != 0 || !strings.Contains(m.Reason(), c.why) {
			t.Errorf("%+v: enabled %v reason %q, want %q", c.opts, m.Enabled(), m.Reason(), c.why)
		}
		if m.Info().Reason != m.Reason() {
			t.Errorf("Info %+v", m.Info())
		}
		if _, err := m.Create("x", Limits{}); err == nil {
			t.Error("Create on a disabled manager")
		}
		if _, err := m.Open("/pluginhost/x"); err == nil {
			t.Error("Open on a disabled manager")
		}
		if l, err := m.Leftovers(); l != nil || err != nil {
			t.Error("Leftovers on a disabled manager")
		}
	}
	// A v2 root without memory is usable only when given explicitly.
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := Detect(nil, Options{Root: root})
	if !m.Enabled() || !slices.Equal(m.Info().Controllers, []string{"cpu", "pids"}) {
		t.Errorf("explicit root: %+v", m.Info())
	}
	m = &Manager{logger: m.logger, parent: "/p"}
	if err := m.setupV2(root, true); err == nil || !strings.Contains(err.Error(), "no memory controller") {
		t.Errorf("detected root without memory: %v", err)
	}
}

// v1 roots given as directories: co-mounted controllers share one
// hierarchy, limits land in the right files, and FD is refused.
func TestV1LimitsOnFakeRoots(t *testing.T) {
	mem, cpu := t.TempDir(), t.TempDir()
	m := Detect(testLogger(t), Options{V1Roots: map[string]string{"memory": mem, "cpu": cpu, "cpuacct": cpu}, Parent: "nomad"})
	if m.Version() != 1 {
		t.Fatal(m.Reason())
	}
	if in := m.Info(); !slices.Equal(in.Hierarchies, []string{mem, cpu}) || !slices.Equal(in.Controllers, []string{"memory", "cpu", "cpuacct"}) {
		t.Fatalf("info %+v", in)
	}
	for _, f := range []string{"memory.limit_in_bytes", "memory.soft_limit_in_bytes", "memory.swappiness", "cgroup.procs"} {
		mustWrite(t, filepath.Join(mem, "nomad", "a.web", f))
	}
	for _, f := range []string{"cpu.shares", "cgroup.procs"} {
		mustWrite(t, filepath.Join(cpu, "nomad", "a.web", f))
	}
	g, err := m.Create("a.web", Limits{MemoryMB: 64, MemoryMaxMB: 96, CPU: 250})
	if err != nil {
		t.Fatal(err)
	}
	if g.Fresh() {
		t.Error("a group whose directories were there already is Fresh")
	}
	for f, want := range map[string]string{
		filepath.Join(mem, "nomad/a.web/memory.limit_in_bytes"):      strconv.Itoa(96 << 20),
		filepath.Join(mem, "nomad/a.web/memory.soft_limit_in_bytes"): strconv.Itoa(64 << 20),
		filepath.Join(mem, "nomad/a.web/memory.swappiness"):          "0",
		filepath.Join(cpu, "nomad/a.web/cpu.shares"):                 "250",
	} {
		if got := readTrim(t, f); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if !slices.Equal(g.ProcsFiles(), []string{filepath.Join(mem, "nomad/a.web/cgroup.procs"), filepath.Join(cpu, "nomad/a.web/cgroup.procs")}) {
		t.Errorf("ProcsFiles %v", g.ProcsFiles())
	}
	if err := g.AddPid(77); err != nil {
		t.Fatal(err)
	}
	if got, _ := g.Pids(); !slices.Equal(got, []int{77}) {
		t.Errorf("Pids %v", got)
	}
	if _, err := g.FD(); err == nil {
		t.Error("FD on v1")
	}
	// A fresh Stats sample of an empty memory.stat reads as zeros.
	mustWrite(t, filepath.Join(mem, "nomad/a.web/memory.stat"))
	if _, err := g.Stats(); err == nil {
		t.Error("Stats without memory.usage_in_bytes")
	}
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCPUPercent(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := Stats{Time: t0, CPUUsageNanos: 1e9, CPUUserNanos: 8e8, CPUSystemNanos: 2e8}
	b := Stats{Time: t0.Add(time.Second), CPUUsageNanos: 2.5e9, CPUUserNanos: 2e9, CPUSystemNanos: 5e8}
	tot, u, s := CPUPercent(a, b)
	if tot != 150 || u != 120 || s != 30 {
		t.Errorf("%v %v %v", tot, u, s)
	}
	if tot, _, _ := CPUPercent(b, a); tot != 0 {
		t.Errorf("reversed samples: %v", tot)
	}
	if mhz := TicksConsumed(150, 4000, 2); mhz != 3000 {
		t.Errorf("ticks %v", mhz)
	}
}
