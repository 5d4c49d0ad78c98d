package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pluginhost/pluginhost/dynamic"
)

// watchMetrics points the agent's metrics at the views they read when
// scraped: the registry, the CSI plugins' fingerprints, and both reconcile
// queues.
func (a *Agent) watchMetrics() error {
	if err := a.metrics.WatchRegistry(a.registry.Stats); err != nil {
		return err
	}
	types := []string{dynamic.PluginTypeCSIController, dynamic.PluginTypeCSINode}
	if err := a.metrics.WatchPlugins(types, a.csi.Plugins); err != nil {
		return err
	}
	if err := a.metrics.WatchQueue("jobs", a.jobQueue.Stats); err != nil {
		return err
	}
	return a.metrics.WatchQueue("volumes", a.volumes.QueueStats)
}

// Metrics is what the HTTP API serves at /v1/metrics: the agent's own
// registry, never the Prometheus client's global one.
func (a *Agent) Metrics() prometheus.Gatherer { return a.metrics.Gatherer() }
