package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// Issue 26 §9: kill_timeout = "87600h" on a task that ignores SIGTERM made
// its job impossible to stop or purge: job stop -purge blocked, the
// allocation stayed running. The agent caps it with max_kill_timeout, as
// Nomad's client does (30 s by default; 2 s here), says so at job run and
// in the Killing event, and the purge completes.
func TestMaxKillTimeout(t *testing.T) {
	e := newEnv(t, "max_kill_timeout = \"2s\"\n")
	a := e.start()
	tk := shTask("t", e.markerFor("stubborn"), `trap "" TERM; echo started; while :; do sleep 1; done`)
	tk.extra = "      kill_timeout = \"87600h\"\n"
	resp, err := a.client.RegisterJobSource(context.Background(), "stubborn.hcl", []byte(jobHCL("stubborn", noRestart, tk)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(resp.Warnings, "\n"), `kill_timeout 87600h0m0s is capped at the agent's max_kill_timeout 2s`) {
		t.Errorf("job run does not warn about the cap: %q", resp.Warnings)
	}
	a.waitAlloc(resp.AllocIDs[0], "running", running("t"))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.client.StopJob(ctx, "stubborn", true); err != nil {
		t.Fatalf("job stop -purge: %v", err)
	}
	a.mustWait("the job purged", 20*time.Second, func(ctx context.Context) (bool, error) {
		_, err := a.client.Job(ctx, "stubborn")
		return err != nil && strings.Contains(err.Error(), "not found"), nil
	}, api.TopicJob, api.TopicAllocation)
	took := time.Since(start)
	if took > 15*time.Second {
		t.Errorf("the purge took %s with max_kill_timeout 2s", took)
	}
	if n := len(topMarked(e.markerFor("stubborn"))); n != 0 {
		t.Errorf("%d processes of the stubborn task left", n)
	}
	t.Logf("purged %s after the stop", took)
}
