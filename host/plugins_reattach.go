package host

import (
	"context"
	"fmt"
	"strconv"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/apiconv"
	"github.com/pluginhost/pluginhost/host/jobs"
	"github.com/pluginhost/pluginhost/host/supervisor"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// PluginReattach implements apiserver.ReattachBackend: go-plugin's reattach record
// of a plugin's active instance, and of its standby, from the options its
// supervision registered with each (the task's handle at launch or
// re-adoption). The registry is the truth about which instance is active,
// so the answer and the PluginActiveInstance events agree.
//
// A plugin that an allocation declares but whose instance is (re)starting,
// or whose active instance's broker a consumer's lease just closed, is
// unavailable (503), not unknown (404): the client waits for the next
// instance (api.HostedClientConfig). Before, a `counter put` made during
// the broker restart failed with "no active instance: not found".
func (a *Agent) PluginReattach(_ context.Context, pluginType, name string) (*api.PluginReattach, error) {
	active, standby := a.registry.ActiveAndStandby(pluginType, name)
	if active != nil && a.isBrokerClosed(launchKey{pluginType, name, active.AllocID, active.Options[supervisor.OptionGoPluginPid]}) {
		return nil, fmt.Errorf("the active instance (allocation %s) is restarting: a consumer closed its go-plugin broker: %w", active.AllocID, api.ErrUnavailable)
	}
	if active == nil {
		if len(a.jobs.DeclaredGeneric()[jobs.GenericKey(pluginType, name)]) > 0 {
			return nil, fmt.Errorf("no active instance yet: an allocation declares the plugin and is starting it: %w", api.ErrUnavailable)
		}
		return nil, fmt.Errorf("no active instance: %w", api.ErrNotFound)
	}
	return apiconv.PluginReattachWithStandby(pluginType, name, active, standby)
}

// launchKey names one launch of a plugin.
type launchKey struct{ typ, name, allocID, pid string }

// brokerLeases counts the leases held on a launch.
func (a *Agent) brokerLeases(k launchKey) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.leases[k]
}

// isBrokerClosed reports whether the launch had its broker closed by a
// consumer's lease.
func (a *Agent) isBrokerClosed(k launchKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.brokerClosed[k]
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
	k := launchKey{pluginType, name, allocID, strconv.Itoa(pid)}
	a.mu.Lock()
	if a.leases == nil {
		a.leases = map[launchKey]int{}
	}
	a.leases[k]++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.leases[k]--; a.leases[k] <= 0 {
			delete(a.leases, k)
		}
		a.mu.Unlock()
	}()
	held()
	select {
	case <-ctx.Done():
	case <-runCtx.Done():
	}
	if runCtx.Err() != nil || !isLaunch(a.registry, pluginType, name, allocID, pid) {
		return nil
	}
	for _, d := range a.jobs.DeclaredGeneric()[jobs.GenericKey(pluginType, name)] {
		if d.Snap.Alloc.ID != allocID {
			continue
		}
		ar, ok := a.jobs.Alloc(allocID).(*taskrunner.AllocRunner)
		if !ok {
			continue
		}
		if tr := ar.Task(d.Task); tr != nil {
			// Before the restart: from now on no consumer gets this
			// launch. Its key names a pid, which the next launch has
			// not, and the map is emptied of dead launches here.
			a.mu.Lock()
			if a.brokerClosed == nil {
				a.brokerClosed = map[launchKey]bool{}
			}
			for k := range a.brokerClosed {
				if p, _ := strconv.Atoi(k.pid); !isLaunch(a.registry, k.typ, k.name, k.allocID, p) {
					delete(a.brokerClosed, k)
				}
			}
			a.brokerClosed[launchKey{pluginType, name, allocID, strconv.Itoa(pid)}] = true
			a.mu.Unlock()
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
	return ok && p.Options[supervisor.OptionGoPluginPid] == strconv.Itoa(pid)
}
