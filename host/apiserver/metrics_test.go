package apiserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func testRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_count", Help: "c"}, []string{"k"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t_seconds", Help: "h", Buckets: []float64{0.1, 1}})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_gauge", Help: "g"})
	reg.MustRegister(c, h, g)
	c.WithLabelValues("a").Add(3)
	h.Observe(0.05)
	h.Observe(0.5)
	g.Set(7)
	return reg
}

func TestMetricsJSONAndPrometheus(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.Metrics = testRegistry() })

	m, err := ts.client.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Counters) != 1 || m.Counters[0].Name != "t_count" || m.Counters[0].Value != 3 || m.Counters[0].Labels["k"] != "a" {
		t.Errorf("counters %+v", m.Counters)
	}
	if len(m.Gauges) != 1 || m.Gauges[0].Value != 7 {
		t.Errorf("gauges %+v", m.Gauges)
	}
	if len(m.Samples) != 1 {
		t.Fatalf("samples %+v", m.Samples)
	}
	s := m.Samples[0]
	if s.Count != 2 || s.Sum != 0.55 || s.Mean != 0.275 || s.Buckets["0.1"] != 1 || s.Buckets["1"] != 2 || s.Buckets["+Inf"] != 2 {
		t.Errorf("sample %+v", s)
	}
	if m.Timestamp == "" {
		t.Error("no timestamp")
	}

	var b strings.Builder
	if err := ts.client.MetricsPrometheus(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, b.String())
	}
	if f := fams["t_count"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 3 {
		t.Errorf("t_count: %v", f)
	}
	if f := fams["t_seconds"]; f == nil || f.GetMetric()[0].GetHistogram().GetSampleCount() != 2 {
		t.Errorf("t_seconds: %v", f)
	}

	code, er := ts.rawDo(t, http.MethodGet, "/v1/metrics?format=xml", "")
	if code != http.StatusBadRequest || er.Field != "format" {
		t.Errorf("format=xml: %d %+v, want 400 naming format", code, er)
	}
	if code, _ := ts.rawDo(t, http.MethodPost, "/v1/metrics", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}
}

func TestMetricsAndDebugOffByDefault(t *testing.T) {
	ts := startServer(t, nil)
	if code, _ := ts.rawDo(t, http.MethodGet, "/v1/metrics", ""); code != http.StatusNotFound {
		t.Errorf("/v1/metrics without Metrics: %d, want 404", code)
	}
	if code, _ := ts.rawDo(t, http.MethodGet, "/debug/pprof/", ""); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without EnableDebug: %d, want 404", code)
	}
}

func TestDebugServesPprof(t *testing.T) {
	ts := startServer(t, func(c *ServerConfig) { c.EnableDebug = true })
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if code, _ := ts.rawDo(t, http.MethodGet, path, ""); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, code)
		}
	}
}
