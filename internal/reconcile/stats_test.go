package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStatsDepthRunningRetries(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	ok := func(context.Context, string) (Result, error) { return Result{}, nil }
	q, _, _ := startQueue(t, Config{Workers: 1, BaseDelay: time.Hour, Reconcile: funcs{
		"block": func(context.Context, string) (Result, error) {
			entered <- struct{}{}
			<-release
			return Result{}, nil
		},
		"a": ok, "b": ok,
		"fail": func(context.Context, string) (Result, error) { return Result{}, errors.New("boom") },
	}.reconcile})

	q.Add("block")
	<-entered
	q.Add("a")
	q.Add("b")
	q.Add("a") // coalesces
	if got := q.Stats(); got.Depth != 2 || got.Running != 1 || got.Passes != 0 {
		t.Fatalf("while one pass runs and two keys wait: %+v, want Depth 2, Running 1, Passes 0", got)
	}
	close(release)
	if err := q.AddAndWait(context.Background(), "fail"); err == nil {
		t.Fatal("fail: no error")
	}
	flush(t, q)
	got := q.Stats()
	// block, a, b, fail, flush.
	if got.Depth != 0 || got.Running != 0 || got.Passes != 5 || got.Retries != 1 || got.Delayed != 1 {
		t.Fatalf("after the passes: %+v, want Depth 0, Running 0, Passes 5, Retries 1, Delayed 1 (fail's retry timer)", got)
	}
}
