package taskrunner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// endpointHook plays the CSI supervisor: it sets CSI_ENDPOINT before each
// launch, fails its first Poststart (asking for a restart), and records
// Stop.
type endpointHook struct {
	poststarts atomic.Int32
	restored   atomic.Bool
	stopped    atomic.Bool
}

func (h *endpointHook) Name() string { return "endpoint" }

func (h *endpointHook) Prestart(_ context.Context, req *HookRequest) error {
	if _, ok := req.Env["CSI_ENDPOINT"]; !ok {
		req.Env["CSI_ENDPOINT"] = "ep1"
	}
	return nil
}

func (h *endpointHook) Poststart(_ context.Context, req *HookRequest, _ driver.Task) error {
	if req.Restored {
		h.restored.Store(true)
	}
	if h.poststarts.Add(1) == 1 {
		return errors.New("plugin unhealthy")
	}
	req.Emit("Plugin became healthy", "probe ok")
	return nil
}

func (h *endpointHook) Stop(context.Context, *HookRequest) error {
	h.stopped.Store(true)
	return nil
}

func TestExtraHookEnvRestartAndStop(t *testing.T) {
	a := newAgent(t, "")
	hook := &endpointHook{}
	a.Cfg.ExtraHooks = func(req *HookRequest) []Hook {
		if req.Task.Name != "plugin" {
			return nil
		}
		return []Hook{hook}
	}
	ar := a.Run(testJob(jobspec.JobTypeService, rawTask("plugin", "env", "${NOMAD_TASK_DIR}/${CSI_ENDPOINT}.env")))
	ev := a.Events.Wait(t, "plugin", EventRestartSignal, 1)
	if !strings.Contains(ev.Message, "plugin unhealthy") {
		t.Fatalf("restart event %q lacks the hook's reason", ev.Message)
	}
	a.Events.Wait(t, "plugin", EventKilling, 1)
	a.Events.Wait(t, "plugin", "Plugin became healthy", 1)
	if n := a.Events.Count("plugin", EventStarted); n != 2 {
		t.Fatalf("%d starts, want 2", n)
	}
	handle(t, ar, "plugin")
	env := string(waitFile(t, filepath.Join(ar.AllocDir(), "plugin", "local", "ep1.env")))
	if !strings.Contains(env, "CSI_ENDPOINT=ep1\n") {
		t.Fatalf("env lacks the hook's CSI_ENDPOINT:\n%s", env)
	}
	if s := ar.Task("plugin").snapshot(); s.State.Restarts != 1 {
		t.Fatalf("restarts %d, want 1 (a hook's restart counts)", s.State.Restarts)
	}

	hook2 := &endpointHook{}
	hook2.poststarts.Store(1) // healthy from the first probe
	b := a.restartWith(func(c *Config) {
		c.ExtraHooks = func(*HookRequest) []Hook { return []Hook{hook2} }
	})
	b.Events.Wait(t, "plugin", EventReattached, 1)
	b.Events.Wait(t, "plugin", "Plugin became healthy", 1)
	if !hook2.restored.Load() {
		t.Fatal("Poststart after re-adoption did not say Restored")
	}
	b.Stop(b.Runners[0])
	if !hook2.stopped.Load() {
		t.Fatal("Stop hook not run on an explicit stop")
	}
	if hook.stopped.Load() {
		t.Fatal("Stop hook ran on agent shutdown")
	}
}
