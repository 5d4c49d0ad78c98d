package taskrunner

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// withCgroups gives the test agent a real cgroup manager under a parent
// of the test's own, removed when the test ends (after the agent's
// cleanup, which destroys the tasks' groups: cleanups run last first).
func withCgroups(t *testing.T, a *agent) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real cgroups need root")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	parent := "/pluginhost-trtest-" + hex.EncodeToString(b[:])
	m := cgroup.Detect(hclog.NewNullLogger(), cgroup.Options{Parent: parent})
	if !m.Enabled() {
		t.Skipf("no usable cgroups: %s", m.Reason())
	}
	t.Cleanup(func() {
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu",
			"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"} {
			_ = os.Remove(filepath.Join(root, parent))
		}
	})
	a.Cfg.Cgroups = m
}

// shTask is a raw_exec task running script under /bin/sh.
func shTask(name, script string) *jobspec.Task {
	t := rawTask(name)
	t.Config = &jobspec.TaskConfig{Command: "/bin/sh", Args: []string{"-c", script}}
	return t
}

// A task holding 20 MB shows it in its stats, the CPU it burned building
// the string as a percentage, and nothing once it is stopped. Concurrent
// readers are safe (go test -race).
func TestStatsOfRunningTask(t *testing.T) {
	a := newAgent(t, "")
	withCgroups(t, a)
	job := testJob(jobspec.JobTypeService, shTask("hog", `x=$(head -c 20000000 /dev/zero | tr '\0' a); echo held; sleep 1000`),
		rawTask("idle", "sleep", "1000"))
	ar := a.Run(job)
	a.Events.Wait(t, "hog", EventStarted, 1)
	a.Events.Wait(t, "idle", EventStarted, 1)

	// The shell fills its memory after it started: wait for it, on the
	// figure itself.
	var got map[string]*TaskStats
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		got, err = ar.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if s := got["hog"]; s != nil && s.MemoryRSS > 15e6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hog's RSS never passed 15 MB: %+v", got["hog"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	hog := got["hog"]
	if hog.MemoryUsage < hog.MemoryRSS || hog.CPUUsageNanos == 0 || len(hog.MemoryMeasured) == 0 || len(hog.CPUMeasured) == 0 {
		t.Errorf("hog's sample is incomplete: %+v", hog)
	}
	if hog.CPUPercent <= 0 || hog.CPUPercent > 100*float64(runtime.NumCPU()) {
		t.Errorf("hog's CPU percent %v: building 20 MB in a shell takes CPU", hog.CPUPercent)
	}
	if idle := got["idle"]; idle == nil || idle.MemoryRSS > 5e6 {
		t.Errorf("idle's sample %+v, want one under 5 MB", idle)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := ar.Stats(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	a.Stop(ar)
	got, err := ar.Stats()
	if err != nil || len(got) != 0 {
		t.Fatalf("stats of a stopped allocation: %v, %v; want none", got, err)
	}
}

// Each launch's group gets the agent's pids limit, whatever the job's
// resources say, and its stats count the task's processes against it.
func TestStatsPidsLimit(t *testing.T) {
	a := newAgent(t, "")
	withCgroups(t, a)
	if !slices.Contains(a.Cfg.Cgroups.Info().Controllers, "pids") {
		t.Skip("no pids controller here")
	}
	a.Cfg.PidsLimit = 40
	two := shTask("two", `sleep 1000 & exec sleep 1000`)
	two.Resources = &jobspec.Resources{CPU: 100, MemoryMB: 64}
	ar := a.Run(testJob(jobspec.JobTypeService, two, shTask("one", "exec sleep 1000")))
	a.Events.Wait(t, "two", EventStarted, 1)
	a.Events.Wait(t, "one", EventStarted, 1)
	var got map[string]*TaskStats
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if got, err = ar.Stats(); err != nil {
			t.Fatal(err)
		}
		if s := got["two"]; s != nil && s.PidsCurrent == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two's stats never counted its two sleeps: %+v", got["two"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	for task, want := range map[string]uint64{"two": 2, "one": 1} {
		s := got[task]
		if s == nil || !s.PidsMeasured || s.PidsLimit != 40 || s.PidsCurrent != want {
			t.Errorf("%s: %+v, want %d processes of 40", task, s, want)
		}
	}
	a.Stop(ar)
}

// Without cgroups there are no stats, and no error.
func TestStatsWithoutCgroups(t *testing.T) {
	a := newAgent(t, "")
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("idle", "sleep", "1000")))
	a.Events.Wait(t, "idle", EventStarted, 1)
	got, err := ar.Stats()
	if err != nil || len(got) != 0 {
		t.Fatalf("stats without cgroups: %v, %v", got, err)
	}
}

// The percentage is computed over at least statsWindow, whatever the
// cadence of the readers: a sample right after another is compared with
// an older reference.
func TestStatsWindow(t *testing.T) {
	g := &taskCgroup{}
	sp := &statsSampler{}
	t0 := time.Unix(1000, 0)
	sample := func(at time.Duration, cpu time.Duration) cgroup.Stats {
		return cgroup.Stats{Time: t0.Add(at), CPUUsageNanos: uint64(cpu)}
	}
	pct := func(cur cgroup.Stats) float64 {
		p, _, _ := sp.percent(g, t0, cur)
		return p
	}
	// Half a core for 2 s, then a full core.
	if p := pct(sample(2*time.Second, time.Second)); p != 50 {
		t.Errorf("first sample: %v%%, want the launch's 50%%", p)
	}
	if p := pct(sample(2*time.Second+time.Millisecond, time.Second+time.Millisecond)); p < 49 || p > 51 {
		t.Errorf("1 ms later: %v%%, want about 50%% (against the launch, not a 1 ms span)", p)
	}
	if p := pct(sample(3*time.Second, 2*time.Second)); p != 100 {
		t.Errorf("a window later: %v%%, want 100%%", p)
	}
	// A new launch (a new group) starts from its own zero.
	g2 := &taskCgroup{}
	if p, _, _ := sp.percent(g2, t0.Add(10*time.Second), sample(14*time.Second, time.Second)); p != 25 {
		t.Errorf("new launch: %v%%, want its own average, 25%%", p)
	}
}

// oomCountingMetrics is countingMetrics that also counts OOM kills.
type oomCountingMetrics struct {
	countingMetrics
	oom []TaskLabels
}

func (m *oomCountingMetrics) TaskOOMKilled(l TaskLabels) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oom = append(m.oom, l)
}

// A launch the OOM killer ends is counted once, with the task's labels; a
// task that exits on its own is not.
func TestOOMKillCounted(t *testing.T) {
	a := newAgent(t, "")
	withCgroups(t, a)
	m := &oomCountingMetrics{countingMetrics: countingMetrics{exits: map[string]int{}}}
	a.Cfg.Metrics = m
	hog := shTask("hog", `x=$(head -c 200000000 /dev/zero | tr '\0' a); exec sleep 1000`)
	hog.Resources = &jobspec.Resources{CPU: 100, MemoryMB: 32}
	job := testJob(jobspec.JobTypeBatch, hog, rawTask("fine", "exit", "0"))
	job.TaskGroups[0].Restart.Attempts = 0
	ar := a.Run(job)
	a.Events.Wait(t, "hog", EventNotRestarting, 1)
	<-ar.Done()
	m.mu.Lock()
	defer m.mu.Unlock()
	want := TaskLabels{Job: job.ID, Group: "g", Task: "hog"}
	if len(m.oom) != 1 || m.oom[0] != want {
		t.Fatalf("OOM kills counted: %+v, want one for %+v", m.oom, want)
	}
}
