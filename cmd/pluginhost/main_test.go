package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/cli"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/apiserver"
)

// startAgent serves a fakeAgent on a real unix socket through the real API
// server, and returns the address the CLI should use.
func startAgent(t *testing.T) (*fakeAgent, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "phcli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fa := newFakeAgent()
	srv := serveAPI(t, apiserver.ServerConfig{Addr: "unix://" + filepath.Join(dir, "api.sock"), Backend: fa})
	return fa, srv.Addr()
}

// serveAPI runs the real API server with cfg until the test ends.
func serveAPI(t *testing.T, cfg apiserver.ServerConfig) *apiserver.Server {
	t.Helper()
	srv, err := apiserver.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI in-process with PLUGINHOST_ADDR=addr.
func runCLI(t *testing.T, ctx context.Context, addr string, args ...string) result {
	t.Helper()
	ui := cli.NewMockUi()
	env := func(k string) string {
		if k == api.EnvAddr {
			return addr
		}
		return ""
	}
	code := runWith(ctx, args, ui, env)
	return result{code: code, stdout: ui.OutputWriter.String(), stderr: ui.ErrorWriter.String()}
}

// runWith is run with the mock Ui's writers and a fixed clock, so relative
// times in views are stable.
func runWith(ctx context.Context, args []string, ui *cli.MockUi, env func(string) string) int {
	return runClock(ctx, args, ui, ui.OutputWriter, ui.ErrorWriter, env, func() time.Time { return t0.Add(time.Hour) })
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
