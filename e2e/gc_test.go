package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// TestGCCollectsReplacedAllocations: with gc_max_allocs = 3, a job updated
// six times keeps at most three allocations, its current one among them;
// collected allocations leave no directory, no socket directory and no
// state behind, and a dead allocation's sockets go at once. Before, every
// replaced allocation and its sockets stayed until `job stop -purge`.
func TestGCCollectsReplacedAllocations(t *testing.T) {
	e := newEnv(t, "gc_interval = \"1s\"\ngc_max_allocs = 3\n")
	a := e.start()
	var all []string
	for v := range 6 {
		spec := shTask("t", e.markerFor(fmt.Sprintf("v%d", v)), sleeper)
		spec.env = map[string]string{"V": fmt.Sprint(v)}
		all = append(all, a.runJob("gc", jobHCL("gc", restartPolicy, spec))...)
		a.jobConverged("gc", uint64(v), 1, 30*time.Second)
	}
	cur := all[len(all)-1]
	a.mustWait("at most 3 allocations left", 30*time.Second, func(ctx context.Context) (bool, error) {
		stubs, err := a.client.JobAllocations(ctx, "gc")
		return err == nil && len(stubs) <= 3, err
	}, api.TopicAllocation)
	stubs, err := a.client.JobAllocations(context.Background(), "gc")
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, s := range stubs {
		kept[s.ID] = true
	}
	if !kept[cur] {
		t.Fatalf("the current allocation %s was collected; kept %v", short(cur), kept)
	}
	for _, id := range all {
		dir := filepath.Join(e.dataDir, "alloc", id)
		_, err := os.Stat(dir)
		switch {
		case kept[id] && err != nil:
			t.Errorf("kept allocation %s lost its directory: %v", short(id), err)
		case !kept[id] && !os.IsNotExist(err):
			t.Errorf("collected allocation %s left %s: %v", short(id), dir, err)
		}
	}
	// The kept dead allocations have no sockets left: nothing listens.
	for id := range kept {
		if id == cur {
			continue
		}
		al, err := a.client.Allocation(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if al.ClientStatus == api.AllocClientStatusRunning {
			continue
		}
		a.mustWait("dead allocation's sockets removed", 10*time.Second, func(ctx context.Context) (bool, error) {
			ents, _ := filepath.Glob(filepath.Join(e.dataDir, "sockets", id))
			return len(ents) == 0, nil
		})
	}
	// Collected allocations are gone from the state too: a restarted agent
	// restores only the kept ones.
	a.kill()
	a = e.start()
	stubs, err = a.client.JobAllocations(context.Background(), "gc")
	if err != nil || len(stubs) > 3 {
		t.Fatalf("after restart: %v, %d allocations", err, len(stubs))
	}
}
