package apiserver

import (
	"context"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// BenchmarkGetJob is one JSON request/answer over the unix socket: the cost
// of every CLI read.
func BenchmarkGetJob(b *testing.B) {
	ts := startBenchServer(b)
	ts.be.jobs["web"] = &api.Job{ID: "web", Type: "service", Status: api.JobStatusRunning}
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
	ev := &api.Event{Topic: api.TopicTask, Type: "TaskEvent", Key: "a1",
		Payload: api.EventPayload{AllocID: "a1", TaskName: "web", TaskEvent: &api.TaskEvent{Type: api.TaskStarted, DisplayMessage: "Task started by client"}}}
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

// BenchmarkGetJobTCP is BenchmarkGetJob over loopback TCP with a token:
// the guard's checks and the constant-time comparison of both tokens on
// every request, against the unix socket's none. file reads the token from
// the per-user file for every request, as the CLI of the agent's user does.
func BenchmarkGetJobTCP(b *testing.B) {
	for _, mode := range []string{"token", "file"} {
		b.Run(mode, func(b *testing.B) {
			tokens, err := OpenTokens(TokensConfig{})
			if err != nil {
				b.Fatal(err)
			}
			be := newFakeBackend()
			be.jobs["web"] = &api.Job{ID: "web", Type: "service", Status: api.JobStatusRunning}
			srv, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Backend: be, Tokens: tokens})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx) }()
			defer func() {
				cancel()
				<-done
			}()
			opts := []api.ClientOption{api.WithToken(tokens.Management())}
			if mode == "file" {
				b.Setenv("XDG_CONFIG_HOME", b.TempDir())
				b.Setenv("SUDO_USER", "")
				path, err := api.UserTokenPath(srv.Addr())
				if err != nil {
					b.Fatal(err)
				}
				if err := tokens.Publish(path); err != nil {
					b.Fatal(err)
				}
				opts = nil
			}
			c, err := api.NewClient(srv.Addr(), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Job(ctx, "web"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
