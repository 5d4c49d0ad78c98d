// Package metrics is the agent's telemetry: one Prometheus registry owned by
// the agent (never the client library's global default registry), the
// metrics every part of the agent reports into, and the collectors that read
// point-in-time views (the plugin registry's sizes, the CSI plugins' health,
// the reconcile queues) when the registry is gathered.
//
// # Why the Prometheus client
//
// Nomad uses hashicorp/go-metrics, whose in-memory sink aggregates over
// 10-second intervals: a counter read from its JSON drops back to zero
// when an interval ends, and a scrape between two events sees nothing.
// The Prometheus client keeps counters cumulative and histograms with
// buckets, which is what a scraper (and a test) can rely on; its registry
// is a plain value the agent owns, so there is no global state; and the
// text format it writes is what Nomad's /v1/metrics?format=prometheus
// serves. The JSON form of /v1/metrics is rendered from the same gathered
// families (host/api).
//
// # Who reports what
//
// The packages below the agent do not import a metrics library: csi
// reports calls through csi.RPCObserver (so csi works without the agent),
// the state store through state.CommitObserver, the task runners through
// taskrunner.TaskMetrics, and the registry and reconcile queues expose
// Stats that the collectors here read at scrape time. Metrics implements
// the observer interfaces.
//
// Names follow Nomad's where the concept is the same, under the
// "pluginhost" namespace instead of "nomad" (pluginhost_client_allocs_start
// is Nomad's nomad_client_allocs_start); counters carry Nomad's names, so
// they have no _total suffix. README.md, "Metrics", lists every metric.
package metrics
