package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/codes"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// Namespace prefixes every metric of the agent.
const Namespace = "pluginhost"

// Metrics is the agent's registry and the metrics it records directly.
// Create it with New; it is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	taskStarts   *prometheus.CounterVec
	taskRestarts *prometheus.CounterVec
	taskExits    *prometheus.CounterVec
	oomKills     *prometheus.CounterVec

	csiRPC *prometheus.HistogramVec

	commitSeconds prometheus.Histogram
	commitWrites  prometheus.Histogram
	commitErrors  prometheus.Counter
}

var (
	_ csi.RPCObserver        = (*Metrics)(nil)
	_ state.CommitObserver   = (*Metrics)(nil)
	_ taskrunner.TaskMetrics = (*Metrics)(nil)
	_ taskrunner.OOMMetrics  = (*Metrics)(nil)
)

// latencyBuckets span a local gRPC call or an fsync (~100µs) to a CSI call
// that hit its timeout (minutes).
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
}

// New builds an agent's registry with the Go runtime and process
// collectors (Nomad reports its runtime too) and the agent's own metrics.
func New() *Metrics {
	taskLabels := []string{"job", "task_group", "task"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		taskStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "client", Name: "allocs_start",
			Help: "Tasks launched by the agent (re-adoptions after an agent restart are not starts).",
		}, taskLabels),
		taskRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "client", Name: "allocs_restart",
			Help: "Task restarts decided by the restart policy.",
		}, taskLabels),
		taskExits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "client", Name: "allocs_exit",
			Help: "Task process exits, by outcome: success, failure, killed (stopped by the agent), unknown (died while the agent was down).",
		}, append(taskLabels, "outcome")),
		// Nomad labels client.allocs.oom_killed with alloc_id too; a counter
		// keeps every series it ever had, so here it is labelled like the
		// other task counters, by what is bounded by the jobs.
		oomKills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "client", Name: "allocs_oom_killed",
			Help: "Task launches ended by the kernel's OOM killer (a process of the task's cgroup was OOM-killed).",
		}, taskLabels),
		csiRPC: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "csi", Name: "rpc_seconds",
			Help:    "CSI calls made by the agent: duration of the whole call (retries included) by method and gRPC code of the outcome.",
			Buckets: latencyBuckets,
		}, []string{"method", "code"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "state", Name: "commit_seconds",
			Help:    "Duration of the state store's write transactions (bbolt commit with fsyncs).",
			Buckets: latencyBuckets,
		}),
		commitWrites: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "state", Name: "commit_writes",
			Help:    "Writes carried by each state store transaction (more than one when a group commit shared it).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "state", Name: "commit_errors",
			Help: "State store transactions that failed.",
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: Namespace}),
		m.taskStarts, m.taskRestarts, m.taskExits, m.oomKills, m.csiRPC,
		m.commitSeconds, m.commitWrites, m.commitErrors,
	)
	return m
}

// Gatherer is what the HTTP API serves.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// ObserveRPC implements csi.RPCObserver.
func (m *Metrics) ObserveRPC(method string, code codes.Code, d time.Duration) {
	m.csiRPC.WithLabelValues(method, code.String()).Observe(d.Seconds())
}

// ObserveCommit implements state.CommitObserver.
func (m *Metrics) ObserveCommit(writes int, d time.Duration, err error) {
	if err != nil {
		m.commitErrors.Inc()
		return
	}
	m.commitSeconds.Observe(d.Seconds())
	m.commitWrites.Observe(float64(writes))
}

// TaskStarted implements taskrunner.TaskMetrics.
func (m *Metrics) TaskStarted(t taskrunner.TaskLabels) {
	m.taskStarts.WithLabelValues(t.Job, t.Group, t.Task).Inc()
}

// TaskRestarted implements taskrunner.TaskMetrics.
func (m *Metrics) TaskRestarted(t taskrunner.TaskLabels) {
	m.taskRestarts.WithLabelValues(t.Job, t.Group, t.Task).Inc()
}

// TaskExited implements taskrunner.TaskMetrics.
func (m *Metrics) TaskExited(t taskrunner.TaskLabels, outcome string) {
	m.taskExits.WithLabelValues(t.Job, t.Group, t.Task, outcome).Inc()
}
