package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pluginhost/pluginhost/api"
)

// scrape reads the agent's metrics in the Prometheus text format and parses
// them with Prometheus' own parser.
func (a *agentProc) scrape() map[string]*dto.MetricFamily {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	if err := a.client.MetricsPrometheus(ctx, &b); err != nil {
		a.t.Fatalf("scrape: %v", err)
	}
	return parseProm(a.t, b.String())
}

func parseProm(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse the Prometheus text format: %v\n%s", err, text)
	}
	return fams
}

// metricValue is the value of the series of family name whose labels
// include want (counter, gauge, or a histogram's sample count); found is
// false when there is none.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, found bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if have[k] != w {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			v += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			v += float64(m.GetHistogram().GetSampleCount())
		}
		found = true
	}
	return v, found
}

// TestMetrics scrapes a running agent that runs a CSI plugin, a plugin of
// another type (plugins/kv), a task that keeps exiting and a volume whose creation fails twice before it works:
// every metric family the README lists is there, in both forms, with the
// values those events imply. The profiler answers because the config sets
// enable_debug.
func TestMetrics(t *testing.T) {
	e := newEnv(t, csiConfig+"enable_debug = true\n")
	a := e.start()
	startVolPlugin(t, e, a, "go_plugin", "mplug", map[string]string{"MOCKCSI_FAIL": "CreateVolume:2:INTERNAL"})

	task := shTask("blip", e.markerFor("blip"), "exit 0")
	id := a.runJob("blip", jobHCL("blip", restartPolicy, task))[0]
	a.waitAlloc(id, "a restart of blip", hasEvents("blip", "Restarting", 1))

	// A plugin that is not CSI (plugins/kv) counts under its own type.
	kvID := a.runJob("kv", kvJob(t, 0))[0]
	a.waitAlloc(kvID, "kv healthy", and(running("kv"), hasEvents("kv", api.TaskPluginHealthy, 1)))

	file := filepath.Join(e.root, "mv.hcl")
	writeFile(t, file, volSpec("mv", "mplug", "1MiB", "1GiB"))
	e.mustCLI(t, []string{`Volume "mv" is ready`}, "volume", "create", file)

	fams := a.scrape()
	type check struct {
		name   string
		labels map[string]string
		min    float64 // the value is at least this
		max    float64 // and at most this, when max >= min
	}
	blip := map[string]string{"job": "blip", "task_group": "g", "task": "blip"}
	checks := []check{
		{"pluginhost_client_allocs_start", blip, 1, -1},
		{"pluginhost_client_allocs_start", map[string]string{"job": "mplug", "task": "plugin"}, 1, 1},
		{"pluginhost_client_allocs_restart", blip, 1, -1},
		{"pluginhost_client_allocs_exit", map[string]string{"job": "blip", "outcome": "success"}, 1, -1},
		{"pluginhost_csi_rpc_seconds", map[string]string{"method": "Probe", "code": "OK"}, 1, -1},
		{"pluginhost_csi_rpc_seconds", map[string]string{"method": "GetPluginInfo", "code": "OK"}, 1, -1},
		{"pluginhost_csi_rpc_seconds", map[string]string{"method": "CreateVolume", "code": "Internal"}, 2, 2},
		{"pluginhost_csi_rpc_seconds", map[string]string{"method": "CreateVolume", "code": "OK"}, 1, 1},
		{"pluginhost_plugins", map[string]string{"type": "csi-node", "health": "healthy"}, 1, 1},
		{"pluginhost_plugins", map[string]string{"type": "csi-controller", "health": "healthy"}, 1, 1},
		{"pluginhost_plugins", map[string]string{"type": "csi-controller", "health": "unhealthy"}, 0, 0},
		{"pluginhost_plugin_healthy", map[string]string{"type": "csi-controller", "plugin": "mplug"}, 1, 1},
		{"pluginhost_plugins", map[string]string{"type": "kv", "health": "healthy"}, 1, 1},
		{"pluginhost_plugins", map[string]string{"type": "kv", "health": "unhealthy"}, 0, 0},
		{"pluginhost_plugin_healthy", map[string]string{"type": "kv", "plugin": "kv-main"}, 1, 1},
		{"pluginhost_registry_plugins", map[string]string{"type": "kv"}, 1, 1},
		{"pluginhost_registry_plugins", map[string]string{"type": "csi-node"}, 1, 1},
		{"pluginhost_registry_allocations", map[string]string{"type": "csi-controller"}, 1, 1},
		{"pluginhost_registry_events", map[string]string{"type": "csi-node", "event": "registered"}, 1, 1},
		{"pluginhost_state_commit_seconds", nil, 5, -1},
		{"pluginhost_state_commit_writes", nil, 5, -1},
		{"pluginhost_state_commit_errors", nil, 0, 0},
		{"pluginhost_reconcile_passes", map[string]string{"queue": "jobs"}, 2, -1},
		{"pluginhost_reconcile_passes", map[string]string{"queue": "volumes"}, 3, -1},
		{"pluginhost_reconcile_retries", map[string]string{"queue": "volumes"}, 2, 2},
		{"pluginhost_reconcile_queue_depth", map[string]string{"queue": "volumes"}, 0, 0},
		{"pluginhost_reconcile_queue_running", map[string]string{"queue": "jobs"}, 0, -1},
		{"pluginhost_reconcile_queue_delayed", map[string]string{"queue": "volumes"}, 0, 0},
		{"go_goroutines", nil, 1, -1},
		{"pluginhost_process_resident_memory_bytes", nil, 1, -1},
	}
	for _, c := range checks {
		v, ok := metricValue(fams, c.name, c.labels)
		switch {
		case !ok:
			t.Errorf("%s%v: no such series", c.name, c.labels)
		case v < c.min || (c.max >= c.min && v > c.max):
			t.Errorf("%s%v = %v, want in [%v, %v]", c.name, c.labels, v, c.min, c.max)
		}
	}

	// The JSON form has the same figures.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := a.client.Metrics(ctx)
	if err != nil {
		t.Fatalf("metrics JSON: %v", err)
	}
	var starts float64
	for _, c := range sum.Counters {
		if c.Name == "pluginhost_client_allocs_start" && c.Labels["job"] == "blip" {
			starts += c.Value
		}
	}
	var probes uint64
	for _, s := range sum.Samples {
		if s.Name == "pluginhost_csi_rpc_seconds" && s.Labels["method"] == "Probe" {
			probes += s.Count
			if s.Mean <= 0 || s.Buckets["+Inf"] != s.Count {
				t.Errorf("Probe sample %+v: want a mean and +Inf bucket = count", s)
			}
		}
	}
	if starts < 1 || probes < 1 {
		t.Errorf("JSON: blip starts %v, Probe calls %d; want both >= 1", starts, probes)
	}
	// A counter only grows: the JSON was read after the scrape.
	if v, _ := metricValue(fams, "pluginhost_client_allocs_start", blip); starts < v {
		t.Errorf("JSON starts %v < scraped %v", starts, v)
	}

	// The CLI prints both forms.
	parseProm(t, e.mustCLI(t, []string{"pluginhost_csi_rpc_seconds_bucket"}, "operator", "metrics", "-format", "prometheus").stdout)
	var js api.MetricsSummary
	mustJSON(t, e.mustCLI(t, nil, "operator", "metrics"), &js)
	if len(js.Counters) == 0 || len(js.Samples) == 0 {
		t.Errorf("operator metrics: %d counters, %d samples", len(js.Counters), len(js.Samples))
	}

	// enable_debug serves the profiler.
	if code, _ := rawAPI(t, e, http.MethodGet, "/debug/pprof/goroutine?debug=1", ""); code != http.StatusOK {
		t.Errorf("/debug/pprof/goroutine: %d", code)
	}
}
