package api

import (
	"context"
	"testing"
)

// BenchmarkGetJob is one JSON request/answer over the unix socket: the cost
// of every CLI read.
func BenchmarkGetJob(b *testing.B) {
	ts := startBenchServer(b)
	ts.be.jobs["web"] = &Job{ID: "web", Type: "service", Status: JobStatusRunning}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ts.client.Job(ctx, "web"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventStream is events per second through the server to a client:
// encode, flush per event, decode.
func BenchmarkEventStream(b *testing.B) {
	ts := startBenchServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := ts.client.Events(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer stream.Close()
	<-ts.be.subd
	ev := &Event{Topic: TopicTask, Type: "TaskEvent", Key: "a1",
		Payload: EventPayload{AllocID: "a1", TaskName: "web", TaskEvent: &TaskEvent{Type: TaskStarted, DisplayMessage: "Task started by client"}}}
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			ts.be.publish(ev)
		}
	}()
	for range b.N {
		if _, err := stream.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func startBenchServer(b *testing.B) *testServer {
	b.Helper()
	// Quiet logger: per-request debug lines would measure the test log.
	return startServer(b, func(c *ServerConfig) { c.Logger = nil })
}
