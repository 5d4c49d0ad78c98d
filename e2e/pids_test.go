package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// hostHasPids says whether the agent can limit and count a task's
// processes here: a v1 pids hierarchy, or a v2 root offering pids.
func hostHasPids() bool {
	if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err == nil {
		return true
	}
	b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	return err == nil && strings.Contains(string(b), "pids")
}

// e2ePidsLimit is the agent's pids_limit in TestPidsLimit.
const e2ePidsLimit = 64

// pidsBomb tries 8,001 times to leave a sleep behind, each from a
// subshell (a shell that cannot fork exits; a subshell that cannot exits
// alone), writes how many it started and how many were refused, and
// stays, as one process, with its sleeps.
const pidsBomb = `ok=0; no=0; i=0
while [ $i -lt 8001 ]; do
  if (sleep 1000 &) 2>/dev/null; then ok=$((ok+1)); else no=$((no+1)); fi
  i=$((i+1))
done
echo "ok=$ok refused=$no" > "$NOMAD_ALLOC_DIR/bomb"
exec sleep 1000`

var pidsBombResult = regexp.MustCompile(`^ok=(\d+) refused=(\d+)\n$`)

// TestPidsLimit: under an agent with pids_limit = 64, a raw_exec task that
// tries to start 8,001 processes holds 64 at most (itself, a subshell and
// 62 sleeps), every further fork is refused, and the agent carries on: it
// answers, starts another task and stops both. The count and the limit
// are in the stats API, in `alloc status` and in the metrics.
func TestPidsLimit(t *testing.T) {
	needCgroups(t)
	if !hostHasPids() {
		t.Skip("no pids controller on this machine")
	}
	t.Parallel()
	e := newEnv(t, fmt.Sprintf("pids_limit = %d\n", e2ePidsLimit))
	a := e.start()
	marker := e.markerFor("bomb")
	id := a.runJob("bomb", jobHCL("bomb", noRestart, shTask("bomb", marker, pidsBomb)))[0]
	a.waitAlloc(id, "bomb running", running("bomb"))

	// Every sample while the loop runs, and after, is within the limit.
	result := filepath.Join(e.dataDir, "alloc", id, "alloc", "bomb")
	samples := 0
	var usage *api.PidsStats
	var out []byte
	a.mustWait("the fork loop's 8,001 tries", 3*time.Minute, func(ctx context.Context) (bool, error) {
		u, err := a.client.AllocStats(ctx, id)
		if err != nil {
			return false, err
		}
		if tu := u.Tasks["bomb"]; tu != nil && tu.ResourceUsage.PidsStats != nil {
			usage = tu.ResourceUsage.PidsStats
			samples++
			if usage.Limit != e2ePidsLimit || usage.Current > e2ePidsLimit {
				return false, fmt.Errorf("stats say %d of %d processes, want at most %d of %d",
					usage.Current, usage.Limit, e2ePidsLimit, e2ePidsLimit)
			}
		}
		out, err = os.ReadFile(result)
		return err == nil && pidsBombResult.Match(out), nil
	}, api.TopicTask)
	m := pidsBombResult.FindSubmatch(out)
	started, _ := strconv.Atoi(string(m[1]))
	refused, _ := strconv.Atoi(string(m[2]))
	t.Logf("pids_limit %d: %d sleeps started, %d forks refused; %d stats samples while it ran", e2ePidsLimit, started, refused, samples)
	if started != e2ePidsLimit-2 || refused != 8001-started {
		t.Errorf("started %d, refused %d; want %d and %d", started, refused, e2ePidsLimit-2, 8001-(e2ePidsLimit-2))
	}
	if usage == nil {
		t.Fatal("the stats API never counted the task's processes")
	}

	// The kernel's own record: the group never held more than the limit.
	dir := filepath.Join("/sys/fs/cgroup/pids", e.cgroupParent, id+".bomb")
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join("/sys/fs/cgroup", e.cgroupParent, id+".bomb")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "pids.peak")); err == nil {
		if peak := strings.TrimSpace(string(b)); peak != strconv.Itoa(e2ePidsLimit) {
			t.Errorf("pids.peak of %s = %s, want %d", dir, peak, e2ePidsLimit)
		}
	} else {
		t.Logf("no pids.peak (%v): the kernel keeps none", err)
	}

	// Left: the script turned sleep and its sleeps.
	want := uint64(started + 1)
	a.mustWait("the count settled", 30*time.Second, func(ctx context.Context) (bool, error) {
		u, err := a.client.AllocStats(ctx, id)
		if err != nil {
			return false, err
		}
		if tu := u.Tasks["bomb"]; tu != nil && tu.ResourceUsage.PidsStats != nil {
			usage = tu.ResourceUsage.PidsStats
		}
		return usage.Current == want, nil
	})
	if u, err := a.client.AllocStats(context.Background(), id); err != nil || u.ResourceUsage.PidsStats == nil ||
		*u.ResourceUsage.PidsStats != (api.PidsStats{Current: want, Limit: e2ePidsLimit}) {
		t.Errorf("allocation's PidsStats: %+v (%v), want %d of %d", u, err, want, e2ePidsLimit)
	}
	r := e.mustCLI(t, []string{"Task Resources:", "Pids", fmt.Sprintf("%d/%d", want, e2ePidsLimit)}, "alloc", "status", short(id))
	t.Logf("alloc status:\n%s", r.stdout)
	labels := map[string]string{"alloc_id": id, "job": "bomb", "task_group": "g", "task": "bomb"}
	fams := a.scrape()
	if v, ok := metricValue(fams, "pluginhost_client_allocs_pids_current", labels); !ok || v != float64(want) {
		t.Errorf("pluginhost_client_allocs_pids_current = %v (present %v), want %d", v, ok, want)
	}
	if v, ok := metricValue(fams, "pluginhost_client_allocs_pids_limit", labels); !ok || v != e2ePidsLimit {
		t.Errorf("pluginhost_client_allocs_pids_limit = %v (present %v), want %d", v, ok, e2ePidsLimit)
	}

	// The agent is fine: the task was never restarted, and another one
	// starts, runs and gets a limit of its own.
	al, err := a.client.Allocation(context.Background(), id)
	if err != nil || al.TaskStates["bomb"].Restarts != 0 || al.TaskStates["bomb"].State != api.TaskStateRunning {
		t.Fatalf("bomb after its loop: %v; %s", err, allocSummary(al))
	}
	other := a.runJob("other", jobHCL("other", noRestart, shTask("other", e.markerFor("other"), sleeper)))[0]
	a.waitAlloc(other, "other running", running("other"))
	a.mustWait("other counted", 30*time.Second, func(ctx context.Context) (bool, error) {
		u, err := a.client.AllocStats(ctx, other)
		if err != nil {
			return false, err
		}
		tu := u.Tasks["other"]
		return tu != nil && tu.ResourceUsage.PidsStats != nil &&
			*tu.ResourceUsage.PidsStats == api.PidsStats{Current: 1, Limit: e2ePidsLimit}, nil
	})

	a.stopJob("bomb")
	a.stopJob("other")
	waitGone(t, marker, 30*time.Second)
	a.waitAlloc(id, "bomb dead", taskDead("bomb"))
	a.waitAlloc(other, "other dead", taskDead("other"))
	assertNoCgroups(t, e.cgroupParent)
}
