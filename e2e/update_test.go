package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// pluginSampler asks for a plugin's status every 20 ms and counts the
// samples in which no node instance of it was healthy.
type pluginSampler struct {
	samples, empty atomic.Int64
	stop           context.CancelFunc
	wg             sync.WaitGroup
}

func (a *agentProc) samplePlugin(id string) *pluginSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &pluginSampler{stop: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p, err := a.client.Plugin(ctx, id)
			if ctx.Err() != nil {
				return
			}
			s.samples.Add(1)
			if err != nil || p.NodesHealthy == 0 || p.ControllersHealthy == 0 {
				s.empty.Add(1)
			}
		}
	}()
	a.t.Cleanup(s.close)
	return s
}

func (s *pluginSampler) close() { s.stop(); s.wg.Wait() }

// TestUpdateKeepsPluginAvailable updates a CSI plugin job to a version
// that needs two seconds to become ready, then to one that never does: the
// plugin is healthy in every 20 ms sample throughout, the first update
// completes once the new version is healthy, and the broken one is stopped
// with the old version still serving and the failure on the job's status.
// Before, the old allocation stopped as soon as the new one ran, leaving no
// plugin for the new one's start-up, and for good when it never started.
func TestUpdateKeepsPluginAvailable(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	group := restartPolicy + "\n    update {\n      healthy_deadline = \"6s\"\n      min_healthy_time = \"0s\"\n    }\n"
	spec := func(version string, env map[string]string) string {
		tk := csiTask(t, "go_plugin", "plugin", e.markerFor("plugin-"+version), "e2e-upd", "30s")
		tk.env = map[string]string{"E2E_VERSION": version}
		for k, v := range env {
			tk.env[k] = v
		}
		return jobHCL("upd", group, tk)
	}
	ids := a.runJob("upd", spec("a", nil))
	w.waitHealthy(ids[0])
	s := a.samplePlugin("e2e-upd")

	// A slow starter: its Probe says not ready for 2 s.
	a.runJob("upd", spec("b", map[string]string{"MOCKCSI_NOT_READY_FOR": "2s"}))
	a.mustWait("version 1 rolled out", 60*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "upd")
		return err == nil && j.Update != nil && j.Update.Version == 1 && j.Update.Status == "successful", err
	}, api.TopicAllocation, api.TopicTask)
	waitGone(t, e.markerFor("plugin-a"), 30*time.Second)

	// A broken one: Probe always fails, so it never registers.
	a.runJob("upd", spec("c", map[string]string{"MOCKCSI_PROBE_FAIL": "1"}))
	a.mustWait("version 2's roll-out failed", 60*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "upd")
		return err == nil && j.Update != nil && j.Update.Version == 2 && j.Update.Status == "failed", err
	}, api.TopicAllocation, api.TopicTask)
	waitGone(t, e.markerFor("plugin-c"), 30*time.Second)
	if n := len(topMarked(e.markerFor("plugin-b"))); n != 1 {
		t.Fatalf("%d processes of version 1 run after the failed update, want 1", n)
	}
	j, err := a.client.Job(context.Background(), "upd")
	if err != nil {
		t.Fatal(err)
	}
	if j.StatusDescription == "" || j.Update.Description == "" {
		t.Fatalf("the failed update is not explained: %+v %+v", j, j.Update)
	}
	t.Logf("status after the failed update: %s", j.StatusDescription)

	s.close()
	if s.samples.Load() < 50 {
		t.Fatalf("only %d samples taken", s.samples.Load())
	}
	if n := s.empty.Load(); n != 0 {
		t.Fatalf("the plugin had no healthy instance in %d of %d samples", n, s.samples.Load())
	}
	t.Logf("%d samples, plugin healthy in all", s.samples.Load())

	// Submitting the broken version again retries it (a new version).
	resp, err := a.client.RegisterJobSource(context.Background(), "upd.hcl", []byte(spec("c", map[string]string{"MOCKCSI_PROBE_FAIL": "1"})))
	if err != nil || len(resp.AllocIDs) != 1 {
		t.Fatalf("re-submitting the failed version: %v %+v", err, resp)
	}
}

// TestEarlyUpdateKeepsPlugin updates a plugin job a moment after its first
// version became healthy, well within min_healthy_time, to a version that
// never becomes ready (issue 26 §3). The first version served when the
// update arrived, so it serves on: the plugin is healthy in every 20 ms
// sample until the update fails at its healthy_deadline, and after. Before,
// the first version counted as "superseded before it became healthy" and
// was stopped at once, leaving no plugin at all.
func TestEarlyUpdateKeepsPlugin(t *testing.T) {
	e := newEnv(t, csiConfig)
	a := e.start()
	w := a.watchPlugins()
	group := restartPolicy + "\n    update {\n      healthy_deadline = \"6s\"\n      min_healthy_time = \"4s\"\n    }\n"
	spec := func(version string, env map[string]string) string {
		tk := csiTask(t, "go_plugin", "plugin", e.markerFor("plugin-"+version), "e2e-early", "30s")
		tk.env = map[string]string{"E2E_VERSION": version}
		for k, v := range env {
			tk.env[k] = v
		}
		return jobHCL("early", group, tk)
	}
	ids := a.runJob("early", spec("a", nil))
	w.waitHealthy(ids[0])
	s := a.samplePlugin("e2e-early")
	a.runJob("early", spec("b", map[string]string{"MOCKCSI_PROBE_FAIL": "1"}))
	j, err := a.client.Job(context.Background(), "early")
	if err != nil || j.Update != nil {
		t.Fatalf("version 0's roll-out was judged before the update arrived (min_healthy_time too short for the test): %v %+v", err, j.Update)
	}
	a.mustWait("version 1's roll-out failed", 60*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "early")
		return err == nil && j.Update != nil && j.Update.Version == 1 && j.Update.Status == "failed", err
	}, api.TopicAllocation, api.TopicTask, api.TopicJob)
	waitGone(t, e.markerFor("plugin-b"), 30*time.Second)
	if n := len(topMarked(e.markerFor("plugin-a"))); n != 1 {
		t.Fatalf("%d processes of version 0 run after the failed update, want 1", n)
	}
	s.close()
	if s.samples.Load() < 100 {
		t.Fatalf("only %d samples taken", s.samples.Load())
	}
	if n := s.empty.Load(); n != 0 {
		t.Fatalf("the plugin had no healthy instance in %d of %d samples", n, s.samples.Load())
	}
	t.Logf("%d samples, plugin healthy in all", s.samples.Load())
	vs, err := a.client.JobVersions(context.Background(), "early")
	if err != nil || len(vs) != 2 || vs[0].Stable || !vs[1].Stable {
		t.Fatalf("history: version 0 should be stable (healthy for min_healthy_time meanwhile), version 1 not: %v %+v", err, vs)
	}
}

// TestJobRunFollowsPlugins: `job run` of a CSI plugin job follows it until
// the plugin is healthy (exit 0), and exits 2 with the reason when it never
// becomes healthy, like `nomad job run` monitoring a deployment. It used
// to report success as soon as the task ran.
func TestJobRunFollowsPlugins(t *testing.T) {
	e := newEnv(t, csiConfig)
	e.start()
	group := restartPolicy + "\n    update {\n      healthy_deadline = \"3s\"\n      min_healthy_time = \"0s\"\n    }\n"
	write := func(name string, env map[string]string) string {
		tk := csiTask(t, "go_plugin", "plugin", e.markerFor(name), name, "30s")
		tk.env = env
		path := filepath.Join(e.root, name+".hcl")
		writeFile(t, path, jobHCL(name, group, tk))
		return path
	}
	r := e.cli("job", "run", write("good", nil))
	if r.code != 0 || !strings.Contains(r.stdout, "is healthy") {
		t.Fatalf("job run of a healthy plugin: %+v", r)
	}
	r = e.cli("job", "run", write("bad", map[string]string{"MOCKCSI_PROBE_FAIL": "1"}))
	if r.code != 2 || !strings.Contains(r.stderr, "healthy_deadline") {
		t.Fatalf("job run of a plugin that never becomes healthy: %+v", r)
	}
}

// TestUpdateAutoRevert: with auto_revert, a version whose allocation fails
// is stopped and the last stable version is submitted again as the next
// version, as Nomad does; `job history` marks which versions were stable.
func TestUpdateAutoRevert(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	group := "    restart {\n      attempts = 0\n      interval = \"1m\"\n      delay = \"1s\"\n      mode = \"fail\"\n    }\n" +
		// min_healthy_time: a task that dies at once must not count as
		// healthy for the instant it runs.
		"    update {\n      auto_revert = true\n      healthy_deadline = \"10s\"\n      min_healthy_time = \"1s\"\n    }\n"
	good := jobHCL("rev", group, shTask("t", e.markerFor("good"), sleeper))
	a.runJob("rev", good)
	a.mustWait("version 0 stable", 30*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "rev")
		return err == nil && j.Update != nil && j.Update.Version == 0 && j.Update.Status == "successful", err
	}, api.TopicJob, api.TopicAllocation)
	a.runJob("rev", jobHCL("rev", group, shTask("t", e.markerFor("bad"), "exit 3")))
	// Version 1 fails; version 2 is version 0 again and rolls out.
	a.mustWait("reverted to a stable version", 60*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "rev")
		return err == nil && j.Version == 2 && j.Update != nil && j.Update.Version == 2 && j.Update.Status == "successful", err
	}, api.TopicJob, api.TopicAllocation)
	// Version 0's allocation (the same spec) stops in the background once
	// version 2 is healthy.
	a.mustWait("one process of the stable version", 30*time.Second, func(ctx context.Context) (bool, error) {
		return len(topMarked(e.markerFor("good"))) == 1, nil
	}, api.TopicAllocation, api.TopicTask)
	vs, err := a.client.JobVersions(context.Background(), "rev")
	if err != nil || len(vs) != 3 || !vs[0].Stable || vs[1].Stable || !vs[2].Stable {
		t.Fatalf("history after the revert: %v %+v", err, vs)
	}
}
