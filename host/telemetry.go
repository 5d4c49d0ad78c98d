package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/metrics"
)

// watchMetrics points the agent's metrics at the views they read when
// scraped: the registry, the CSI plugins' fingerprints, the running
// tasks' cgroups, and both reconcile queues.
func (a *Agent) watchMetrics() error {
	if err := a.metrics.WatchRegistry(a.registry.Stats); err != nil {
		return err
	}
	if err := a.metrics.WatchPlugins(a.pluginTypes, a.pluginHealth); err != nil {
		return err
	}
	if err := a.metrics.WatchTaskUsage(a.taskUsage); err != nil {
		return err
	}
	if err := a.metrics.WatchQueue("jobs", a.jobQueue.Stats); err != nil {
		return err
	}
	return a.metrics.WatchQueue("volumes", a.volumes.QueueStats)
}

// pluginTypes are CSI's types and every type the registry has held.
func (a *Agent) pluginTypes() []string {
	return append([]string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode}, a.registry.Types()...)
}

// pluginHealth is the health of every active plugin instance: CSI
// plugins' from the CSI manager's fingerprints, the others' from their
// supervision's latest health check (not checked yet is unhealthy).
func (a *Agent) pluginHealth() []metrics.PluginHealth {
	var out []metrics.PluginHealth
	for _, p := range a.csi.Plugins() {
		for _, fp := range p.Allocations {
			out = append(out, metrics.PluginHealth{Type: fp.Type, Name: fp.PluginID, Healthy: fp.Healthy})
		}
	}
	for _, t := range a.registry.Types() {
		if isCSIType(t) {
			continue
		}
		for _, p := range a.registry.List(t) {
			h, _ := a.health.Get(p.Type, p.Name, p.AllocID)
			out = append(out, metrics.PluginHealth{Type: t, Name: p.Name, Healthy: h.Healthy})
		}
	}
	return out
}

// Metrics is what the HTTP API serves at /v1/metrics: the agent's own
// registry, never the Prometheus client's global one.
func (a *Agent) Metrics() prometheus.Gatherer { return a.metrics.Gatherer() }

// taskUsage samples every running task of every allocation, for the
// client.allocs.* gauges, at scrape time.
func (a *Agent) taskUsage() []metrics.TaskUsage {
	a.mu.Lock()
	entries := make([]*allocEntry, 0, len(a.allocs))
	for _, e := range a.allocs {
		entries = append(entries, e)
	}
	a.mu.Unlock()
	var out []metrics.TaskUsage
	for _, e := range entries {
		samples, err := e.runner.Stats()
		if err != nil {
			a.logger.Warn("reading task stats for metrics", "alloc_id", e.runner.ID(), "error", err)
		}
		for task, s := range samples {
			out = append(out, metrics.TaskUsage{
				AllocID: e.runner.ID(), Job: e.jobID, Group: e.runner.TaskGroup(), Task: task,
				Stats: s, TotalTicks: a.ticks(s.CPUPercent),
			})
		}
	}
	return out
}
