package api

// MetricsSummary is the JSON form of GET /v1/metrics. Its top-level keys are
// Nomad's (Timestamp, Gauges, Counters, Samples); the values are the same
// cumulative figures the Prometheus form has, not go-metrics' per-interval
// aggregates: a counter's Value only grows, and a sample (a histogram)
// carries its count, sum and cumulative buckets since the agent started.
type MetricsSummary struct {
	// Timestamp is when the metrics were gathered (RFC 3339, UTC).
	Timestamp string
	Gauges    []GaugeValue
	Counters  []CounterValue
	Samples   []SampleValue
}

// GaugeValue is a gauge (or an untyped metric) with its labels.
type GaugeValue struct {
	Name   string
	Value  float64
	Labels map[string]string
}

// CounterValue is a counter with its labels.
type CounterValue struct {
	Name   string
	Value  float64
	Labels map[string]string
}

// SampleValue is a histogram or summary: how many observations, their sum
// and mean, and for histograms the cumulative count at each upper bound
// (Prometheus' le, as a string: "0.005", "+Inf").
type SampleValue struct {
	Name    string
	Count   uint64
	Sum     float64
	Mean    float64
	Buckets map[string]uint64 `json:",omitempty"`
	Labels  map[string]string
}
