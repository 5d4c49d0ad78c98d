package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/resolver"
)

// fakeConn is the gRPC side of a resolver: it takes what the resolver
// reports and ignores it.
type fakeConn struct{ resolver.ClientConn }

func (fakeConn) UpdateState(resolver.State) error { return nil }
func (fakeConn) ReportError(error)                {}

// An agent that answers and then ends the stream (a restart) is followed
// again after the shortest wait every time: the backoff grows only while
// the agent does not answer, so a resolver that lived through a few
// restarts does not wait the longest for every later one.
func TestResolverBackoffResetsOnceTheAgentAnswers(t *testing.T) {
	subscribed := make(chan time.Time, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/event/stream":
			subscribed <- time.Now()
			w.WriteHeader(http.StatusOK) // and the stream ends at once
		case strings.HasPrefix(r.URL.Path, "/v1/plugin/"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(ErrorResponse{Error: "no such plugin"})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	r := &pluginResolver{client: c, cc: fakeConn{}, typ: "kv", name: "main", cancel: cancel, done: make(chan struct{})}
	go r.run(ctx)
	defer r.Close()

	var at []time.Time
	deadline := time.After(30 * time.Second)
	for len(at) < 7 {
		select {
		case ts := <-subscribed:
			at = append(at, ts)
		case <-deadline:
			t.Fatalf("%d subscriptions in 30s", len(at))
		}
	}
	// Three more waits of the shortest (50 ms) each; without the reset
	// they would be 0.4, 0.8 and 1.6 s.
	if d := at[6].Sub(at[3]); d > 600*time.Millisecond {
		t.Fatalf("the 4th to the 7th subscription took %v: the backoff kept growing although the agent answered", d)
	}
}
