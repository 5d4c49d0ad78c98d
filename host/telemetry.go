package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/metrics"
	"github.com/pluginhost/pluginhost/host/supervisor"
)

// watchMetrics points the agent's metrics at the views they read when
// scraped: the registry, the CSI plugins' fingerprints, the running
// tasks' cgroups, and both reconcile queues.
func watchMetrics(a *Agent) error {
	if err := a.metrics.WatchRegistry(a.registry.Stats); err != nil {
		return err
	}
	pluginTypes := func() []string {
		return append([]string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode}, a.registry.Types()...)
	}
	if err := a.metrics.WatchPlugins(pluginTypes, func() []metrics.PluginHealth { return pluginHealth(a.csi, a.registry, a.health) }); err != nil {
		return err
	}
	if err := a.metrics.WatchTaskUsage(a.taskUsage); err != nil {
		return err
	}
	if err := a.metrics.WatchQueue("jobs", a.jobs.QueueStats); err != nil {
		return err
	}
	return a.metrics.WatchQueue("volumes", a.volumes.QueueStats)
}

// pluginHealth is the health of every active plugin instance: CSI
// plugins' from the CSI manager's fingerprints, the others' from their
// supervision's latest health check (not checked yet is unhealthy).
func pluginHealth(mgr *plugins.Manager, reg *dynamic.Registry, health *supervisor.HealthTable) []metrics.PluginHealth {
	var out []metrics.PluginHealth
	for _, p := range mgr.Plugins() {
		for _, fp := range p.Allocations {
			out = append(out, metrics.PluginHealth{Type: fp.Type, Name: fp.PluginID, Healthy: fp.Healthy})
		}
	}
	for _, t := range reg.Types() {
		if isCSIType(t) {
			continue
		}
		for _, p := range reg.List(t) {
			h, _ := health.Get(p.Type, p.Name, p.AllocID)
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
	var out []metrics.TaskUsage
	for _, r := range a.jobs.All() {
		samples, err := runnerStats(r)
		if err != nil {
			a.logger.Warn("reading task stats for metrics", "alloc_id", r.ID(), "error", err)
		}
		if len(samples) == 0 {
			continue
		}
		al := r.State().Alloc
		for task, s := range samples {
			out = append(out, metrics.TaskUsage{
				AllocID: r.ID(), Job: al.JobID, Group: al.TaskGroup, Task: task,
				Stats: s, TotalTicks: a.cpu.Ticks(s.CPUPercent),
			})
		}
	}
	return out
}
