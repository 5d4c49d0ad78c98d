//go:build !portable

package sdk_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/pluginhost/pluginhost/sdk"
)

// The non-blocking stdio of Linux (stdio_linux.go); the portable build
// keeps stdio blocking, and a host that never reads stalls it there.
// A host that holds the plugin's stdio pipes but never reads them (wedged, or
// a hand-rolled one like this test) must not be able to stall the plugin:
// writes fail instead of blocking, and SIGTERM still stops it gracefully.
func TestStdioFloodWithUnreadPipesNeverBlocks(t *testing.T) {
	dir := shortDir(t)
	cmd := exec.Command(bins.TestPlugin)
	cmd.Env = append(os.Environ(),
		sdk.MagicCookieKey+"="+sdk.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_UNIX_SOCKET_DIR="+dir,
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A pipe nobody reads, like stdout after the handshake line.
	if _, err := cmd.StderrPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-waitCh
	})

	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("handshake line: %v", err)
	}
	parts := strings.Split(strings.TrimSpace(line), "|")
	if len(parts) != 6 || parts[0] != "1" || parts[1] != "1" || parts[2] != "unix" || parts[4] != "grpc" || parts[5] != "" {
		t.Fatalf("handshake line %q, want 1|1|unix|<path>|grpc|", line)
	}
	sock := parts[3]
	if filepath.Dir(sock) != dir {
		t.Fatalf("socket %s not in PLUGIN_UNIX_SOCKET_DIR %s", sock, dir)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn := plainConn(t, sock)
	chat := testpb.NewTestServiceClient(conn)
	for i := range 3 {
		resp, err := chat.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 1 << 20})
		if err != nil {
			t.Fatalf("flood %d: %v", i, err)
		}
		if !strings.Contains(resp.GetUsername(), "resource temporarily unavailable") {
			t.Fatalf("flood %d: %s; want writes to fail with EAGAIN once the pipe is full", i, resp.GetUsername())
		}
	}
	// Logging to the full stderr pipe must not block either.
	if _, err := chat.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatalf("log with a full stderr: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waitCh:
		waitCh <- err
		if err != nil {
			t.Fatalf("plugin exit after SIGTERM: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("plugin did not stop on SIGTERM")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket %s left after a graceful stop: %v", sock, err)
	}
}
