package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// hog20 holds a 20 MB string in its shell for as long as it runs.
const hog20 = `x=$(head -c 20000000 /dev/zero | tr '\0' a); echo held; sleep 1000`

// TestAllocStats runs a raw_exec task holding 20 MB in its cgroup and
// reads its use the three ways a user can: the API's
// /v1/client/allocation/<id>/stats, the client.allocs gauges of
// /v1/metrics (both forms), and `alloc status -stats`. A task the OOM
// killer ends is counted in client.allocs.oom_killed. Once the job is
// stopped its figures are gone.
func TestAllocStats(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	id := a.runJob("hog", jobHCL("hog", "", shTask("hog", e.markerFor("hog"), hog20)))[0]
	a.waitAlloc(id, "hog running", running("hog"))

	// The shell fills its 20 MB after it started: wait on the figure.
	var usage *api.AllocResourceUsage
	a.mustWait("hog's RSS over 15 MB", 60*time.Second, func(ctx context.Context) (bool, error) {
		u, err := a.client.AllocStats(ctx, id)
		if err != nil {
			return false, err
		}
		usage = u
		tu := u.Tasks["hog"]
		return tu != nil && tu.ResourceUsage.MemoryStats.RSS > 15e6, nil
	}, api.TopicTask)
	ru := usage.Tasks["hog"].ResourceUsage
	ms, cs := ru.MemoryStats, ru.CpuStats
	if ms.Usage < 15e6 || ms.Usage < ms.RSS {
		t.Errorf("Usage %d, want over 15 MB and at least RSS %d", ms.Usage, ms.RSS)
	}
	for _, f := range []string{"RSS", "Cache", "Usage"} {
		if !slices.Contains(ms.Measured, f) {
			t.Errorf("memory Measured %v lacks %q", ms.Measured, f)
		}
	}
	if !slices.Contains(cs.Measured, "Percent") || !slices.Contains(cs.Measured, "User Mode") {
		t.Errorf("cpu Measured %v lacks Percent or User Mode", cs.Measured)
	}
	if usage.Timestamp == 0 || usage.Tasks["hog"].Timestamp != usage.Timestamp ||
		usage.ResourceUsage.MemoryStats.RSS != ms.RSS {
		t.Errorf("allocation totals and timestamps %+v do not match the one task's %+v", usage.ResourceUsage.MemoryStats, ms)
	}
	// Building the string took CPU; the first sample is the launch's
	// average, the percentage and its MHz form are both above zero.
	if cs.Percent <= 0 || cs.TotalTicks <= 0 || cs.UserMode+cs.SystemMode <= 0 {
		t.Errorf("CPU %+v: building 20 MB in a shell takes CPU", cs)
	}
	// Its processes are counted against the default pids_limit.
	if ps := ru.PidsStats; hostHasPids() && (ps == nil || ps.Limit != 2048 || ps.Current < 1) {
		t.Errorf("PidsStats %+v: want the shell's processes of the default 2048", ps)
	}

	// The same figure in /v1/metrics, under Nomad's name and labels.
	labels := map[string]string{"alloc_id": id, "job": "hog", "task_group": "g", "task": "hog"}
	fams := a.scrape()
	for _, name := range []string{"memory_rss", "memory_usage", "memory_cache", "memory_swap", "memory_max_usage",
		"memory_kernel_usage", "memory_kernel_max_usage", "cpu_total_percent", "cpu_system", "cpu_user",
		"cpu_throttled_time", "cpu_throttled_periods", "cpu_total_ticks"} {
		if _, ok := metricValue(fams, "pluginhost_client_allocs_"+name, labels); !ok {
			t.Errorf("no pluginhost_client_allocs_%s%v", name, labels)
		}
	}
	if v, _ := metricValue(fams, "pluginhost_client_allocs_memory_rss", labels); v < 15e6 {
		t.Errorf("pluginhost_client_allocs_memory_rss = %v, want over 15 MB", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := a.client.Metrics(ctx)
	if err != nil {
		t.Fatalf("metrics JSON: %v", err)
	}
	jsonRSS := 0.0
	for _, g := range sum.Gauges {
		if g.Name == "pluginhost_client_allocs_memory_rss" && g.Labels["alloc_id"] == id {
			jsonRSS = g.Value
		}
	}
	if jsonRSS < 15e6 {
		t.Errorf("JSON metrics: memory_rss of %s = %v, want over 15 MB", short(id), jsonRSS)
	}

	// alloc status, by prefix, with and without -stats.
	r := e.mustCLI(t, []string{"Task Resources:", " MHz", "/300 MiB"}, "alloc", "status", short(id))
	if strings.Contains(r.stdout, "Memory Stats") {
		t.Errorf("alloc status without -stats prints the detailed tables:\n%s", r.stdout)
	}
	r = e.mustCLI(t, []string{"Task Resources:", "/100 MHz", "Memory Stats\n", "CPU Stats\n", "RSS", "Usage", "Percent", "User Mode"},
		"alloc", "status", "-stats", short(id))
	t.Logf("alloc status -stats:\n%s", r.stdout)

	// An unknown allocation: 404 with a JSON error that names it.
	code, er := rawAPI(t, e, http.MethodGet, "/v1/client/allocation/ffffffff-0000/stats", "")
	if code != http.StatusNotFound || er.Error != `allocation "ffffffff-0000": not found` {
		t.Errorf("unknown allocation: %d %+v", code, er)
	}
	if _, err := a.client.AllocStats(ctx, "ffffffff-0000"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("client: unknown allocation: %v", err)
	}

	// memory = 32 and a 200 MB shell: the kernel kills it, once (no
	// restart), and the counter says so.
	oom := shTask("oom", e.markerFor("oom"), `x=$(head -c 200000000 /dev/zero | tr '\0' a); sleep 1000`)
	oom.extra = "      resources {\n        memory = 32\n      }\n"
	oomID := a.runJob("oom", jobHCL("oom", "    restart {\n      attempts = 0\n      mode = \"fail\"\n    }", oom))[0]
	a.waitAlloc(oomID, "oom dead", taskDead("oom"))
	v, ok := metricValue(a.scrape(), "pluginhost_client_allocs_oom_killed", map[string]string{"job": "oom", "task_group": "g", "task": "oom"})
	if !ok || v != 1 {
		t.Errorf("pluginhost_client_allocs_oom_killed{job=oom} = %v (present %v), want 1", v, ok)
	}
	if _, ok := metricValue(a.scrape(), "pluginhost_client_allocs_oom_killed", map[string]string{"job": "hog"}); ok {
		t.Errorf("oom_killed counted for hog, which was not OOM-killed")
	}

	// Stopped: no task to sample, no series left.
	a.stopJob("hog")
	a.waitAlloc(id, "hog dead", taskDead("hog"))
	u, err := a.client.AllocStats(ctx, id)
	if err != nil || len(u.Tasks) != 0 {
		t.Errorf("stats after stop: %v, %v; want no tasks", u, err)
	}
	if _, ok := metricValue(a.scrape(), "pluginhost_client_allocs_memory_rss", labels); ok {
		t.Errorf("memory_rss of %s still reported after stop", short(id))
	}
	assertNoCgroups(t, e.cgroupParent)
}
