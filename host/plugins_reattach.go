package host

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/csiplugin"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// PluginReattach implements apiserver.ReattachBackend: go-plugin's reattach record
// of a plugin's active instance, and of its standby, from the options its
// supervision registered with each (the task's handle at launch or
// re-adoption). The registry is the truth about which instance is active,
// so the answer and the PluginActiveInstance events agree.
func (a *Agent) PluginReattach(_ context.Context, pluginType, name string) (*api.PluginReattach, error) {
	active, standby := a.registry.ActiveAndStandby(pluginType, name)
	if active == nil {
		return nil, fmt.Errorf("no active instance: %w", api.ErrNotFound)
	}
	return apiconv.PluginReattachWithStandby(pluginType, name, active, standby)
}

// HoldBroker implements apiserver.BrokerBackend. A consumer holds the lease while
// its go-plugin broker stream to the instance is open; when the lease ends
// (the stream ended, or the consumer's process exited) go-plugin's broker in
// the plugin is closed for good (v1.8's gRPCBrokerServer.StartStream defers
// Close), so no later consumer's callbacks would work. The agent restarts
// the instance at once, outside its restart policy, and says why in the
// task's "Restart Signaled" event. Nothing happens if the agent is
// stopping, or if the instance is no longer the launch the lease was for.
func (a *Agent) HoldBroker(ctx context.Context, pluginType, name, allocID string, pid int, held func()) error {
	if !isLaunch(a.registry, pluginType, name, allocID, pid) {
		return fmt.Errorf("no registration of this launch (pid %d): %w", pid, api.ErrNotFound)
	}
	a.mu.Lock()
	runCtx := a.runCtx
	a.mu.Unlock()
	if runCtx == nil {
		return fmt.Errorf("the agent is not running: %w", api.ErrNotFound)
	}
	held()
	select {
	case <-ctx.Done():
	case <-runCtx.Done():
	}
	if runCtx.Err() != nil || !isLaunch(a.registry, pluginType, name, allocID, pid) {
		return nil
	}
	for _, d := range declaredGeneric(a.jobs)[genericKey(pluginType, name)] {
		if d.snap.Alloc.ID != allocID {
			continue
		}
		ar, ok := a.jobs.Alloc(allocID).(*taskrunner.AllocRunner)
		if !ok {
			continue
		}
		if tr := ar.Task(d.task); tr != nil {
			a.logger.Info("restarting plugin: a consumer's go-plugin broker stream ended",
				"plugin", pluginType+"/"+name, "alloc_id", allocID, "pid", pid)
			tr.RestartNow(fmt.Sprintf("plugin %s/%s: go-plugin's GRPCBroker was closed when a consumer that used it went away "+
				"(go-plugin v1.8 serves one broker stream per plugin process); restarting so that callbacks work again", pluginType, name))
		}
	}
	return nil
}

// isLaunch reports whether allocID's registration of the plugin is the
// launch with pid.
func isLaunch(reg *dynamic.Registry, pluginType, name, allocID string, pid int) bool {
	p, ok := reg.ForAlloc(pluginType, name, allocID)
	return ok && p.Options[csiplugin.OptionGoPluginPid] == strconv.Itoa(pid)
}
