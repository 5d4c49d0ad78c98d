package apiserver

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pluginhost/pluginhost/api"
)

// errNoMetrics: the server was built without ServerConfig.Metrics.
var errNoMetrics = fmt.Errorf("metrics are not served by this server: %w", api.ErrNotFound)

// metrics serves GET /v1/metrics: JSON by default, the Prometheus text
// format with ?format=prometheus (Nomad's endpoint and parameter).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		writeError(w, r, s.log, errNoMetrics)
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "prometheus":
		s.promHandler.ServeHTTP(w, r)
	case "", "json":
		families, err := s.cfg.Metrics.Gather()
		if err != nil && len(families) == 0 {
			writeError(w, r, s.log, err)
			return
		}
		if err != nil {
			// A collector failed; the rest is still worth serving.
			s.log.Warn("gathering metrics", "error", err)
		}
		writeJSON(w, s.log, http.StatusOK, summarize(families, time.Now()))
	default:
		writeError(w, r, s.log, fieldErrorf("format", `format must be "prometheus" or left out (JSON), got %q`, f))
	}
}

// summarize turns gathered families into the JSON form.
func summarize(families []*dto.MetricFamily, now time.Time) *api.MetricsSummary {
	out := &api.MetricsSummary{
		Timestamp: now.UTC().Format(time.RFC3339Nano),
		Gauges:    []api.GaugeValue{}, Counters: []api.CounterValue{}, Samples: []api.SampleValue{},
	}
	for _, mf := range families {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out.Counters = append(out.Counters, api.CounterValue{Name: name, Value: m.GetCounter().GetValue(), Labels: labels})
			case dto.MetricType_GAUGE:
				out.Gauges = append(out.Gauges, api.GaugeValue{Name: name, Value: m.GetGauge().GetValue(), Labels: labels})
			case dto.MetricType_UNTYPED:
				out.Gauges = append(out.Gauges, api.GaugeValue{Name: name, Value: m.GetUntyped().GetValue(), Labels: labels})
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				sv := api.SampleValue{Name: name, Count: h.GetSampleCount(), Sum: h.GetSampleSum(), Labels: labels,
					Buckets: make(map[string]uint64, len(h.GetBucket())+1)}
				for _, b := range h.GetBucket() {
					sv.Buckets[strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = b.GetCumulativeCount()
				}
				sv.Buckets["+Inf"] = h.GetSampleCount()
				out.Samples = append(out.Samples, withMean(sv))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				out.Samples = append(out.Samples, withMean(api.SampleValue{Name: name, Count: sm.GetSampleCount(), Sum: sm.GetSampleSum(), Labels: labels}))
			}
		}
	}
	return out
}

func withMean(sv api.SampleValue) api.SampleValue {
	if sv.Count > 0 {
		sv.Mean = sv.Sum / float64(sv.Count)
	}
	if math.IsNaN(sv.Sum) || math.IsInf(sv.Sum, 0) {
		// JSON has no NaN or infinities.
		sv.Sum, sv.Mean = 0, 0
	}
	return sv
}
