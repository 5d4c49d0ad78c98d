package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/internal/reconcile"
)

// The collectors in this file read a point-in-time view when the registry
// is gathered, so nothing has to keep a gauge in step with the object it
// describes.

var (
	descRegistryPlugins = prometheus.NewDesc(Namespace+"_registry_plugins",
		"Plugin names with at least one registered allocation, by plugin type.", []string{"type"}, nil)
	descRegistryAllocs = prometheus.NewDesc(Namespace+"_registry_allocations",
		"Registered plugin allocations (active or standing by), by plugin type.", []string{"type"}, nil)
	descRegistryEvents = prometheus.NewDesc(Namespace+"_registry_events",
		"Registry events published since the agent started, by plugin type and event (registered, updated, deregistered, activated).",
		[]string{"type", "event"}, nil)

	descPlugins = prometheus.NewDesc(Namespace+"_plugins",
		"Active plugin instances, by plugin type (csi-controller, csi-node, or a generic plugin's) and health (healthy, unhealthy).", []string{"type", "health"}, nil)
	descPluginHealthy = prometheus.NewDesc(Namespace+"_plugin_healthy",
		"1 when the plugin's active instance of this type passed its latest fingerprint (CSI) or health check, else 0.", []string{"type", "plugin"}, nil)
)

// collectorFunc adapts a describe and a collect function to a
// prometheus.Collector.
type collectorFunc struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// WatchRegistry reports the plugin registry's sizes and event counts.
func (m *Metrics) WatchRegistry(stats func() map[string]dynamic.TypeStats) error {
	return m.register("registry", collectorFunc{
		descs: []*prometheus.Desc{descRegistryPlugins, descRegistryAllocs, descRegistryEvents},
		collect: func(ch chan<- prometheus.Metric) {
			for typ, s := range stats() {
				ch <- prometheus.MustNewConstMetric(descRegistryPlugins, prometheus.GaugeValue, float64(s.Plugins), typ)
				ch <- prometheus.MustNewConstMetric(descRegistryAllocs, prometheus.GaugeValue, float64(s.Allocations), typ)
				for _, et := range dynamic.EventTypes {
					ch <- prometheus.MustNewConstMetric(descRegistryEvents, prometheus.CounterValue, float64(s.Events[et]), typ, et.String())
				}
			}
		},
	})
}

// PluginHealth is one active plugin instance's health as the agent last
// saw it: a CSI plugin's latest fingerprint, any other plugin's latest
// health check.
type PluginHealth struct {
	Type, Name string
	Healthy    bool
}

// WatchPlugins reports the health of every plugin's active instances, of
// every plugin type. Types with no plugin report zero healthy and
// unhealthy instances rather than nothing, once types lists them.
func (m *Metrics) WatchPlugins(types func() []string, plugins func() []PluginHealth) error {
	return m.register("plugins", collectorFunc{
		descs: []*prometheus.Desc{descPlugins, descPluginHealthy},
		collect: func(ch chan<- prometheus.Metric) {
			type count struct{ healthy, unhealthy int }
			counts := map[string]*count{}
			for _, t := range types() {
				counts[t] = &count{}
			}
			for _, p := range plugins() {
				c := counts[p.Type]
				if c == nil {
					c = &count{}
					counts[p.Type] = c
				}
				v := 0.0
				if p.Healthy {
					c.healthy++
					v = 1
				} else {
					c.unhealthy++
				}
				ch <- prometheus.MustNewConstMetric(descPluginHealthy, prometheus.GaugeValue, v, p.Type, p.Name)
			}
			for typ, c := range counts {
				ch <- prometheus.MustNewConstMetric(descPlugins, prometheus.GaugeValue, float64(c.healthy), typ, "healthy")
				ch <- prometheus.MustNewConstMetric(descPlugins, prometheus.GaugeValue, float64(c.unhealthy), typ, "unhealthy")
			}
		},
	})
}

// WatchQueue reports a reconcile queue's depth, passes and retries under
// the label queue=name.
func (m *Metrics) WatchQueue(name string, stats func() reconcile.Stats) error {
	// The queue's name is a constant label: a registry refuses two
	// collectors with identical descriptors, and each queue has its own.
	desc := func(metric, help string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_"+metric, help, nil, prometheus.Labels{"queue": name})
	}
	descQueueDepth := desc("reconcile_queue_depth", "Keys waiting for a worker of a reconcile queue (jobs, volumes).")
	descQueueRunning := desc("reconcile_queue_running", "Keys a worker of the queue is reconciling now.")
	descQueueDelayed := desc("reconcile_queue_delayed", "Keys waiting for a retry or a requeue timer.")
	descQueuePasses := desc("reconcile_passes", "Reconcile passes finished since the agent started.")
	descQueueRetries := desc("reconcile_retries", "Reconcile passes that failed and were scheduled for a retry with backoff.")
	return m.register("queue "+name, collectorFunc{
		descs: []*prometheus.Desc{descQueueDepth, descQueueRunning, descQueueDelayed, descQueuePasses, descQueueRetries},
		collect: func(ch chan<- prometheus.Metric) {
			s := stats()
			ch <- prometheus.MustNewConstMetric(descQueueDepth, prometheus.GaugeValue, float64(s.Depth))
			ch <- prometheus.MustNewConstMetric(descQueueRunning, prometheus.GaugeValue, float64(s.Running))
			ch <- prometheus.MustNewConstMetric(descQueueDelayed, prometheus.GaugeValue, float64(s.Delayed))
			ch <- prometheus.MustNewConstMetric(descQueuePasses, prometheus.CounterValue, float64(s.Passes))
			ch <- prometheus.MustNewConstMetric(descQueueRetries, prometheus.CounterValue, float64(s.Retries))
		},
	})
}

func (m *Metrics) register(what string, c prometheus.Collector) error {
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("metrics: registering the %s collector: %w", what, err)
	}
	return nil
}
