package sdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/pluginhost/pluginhost/sdk"
)

// launched mirrors testhost's output line.
type launched struct {
	Pid     int    `json:"pid"`
	Socket  string `json:"socket"`
	Version int    `json:"version"`
}

// killAndWait SIGKILLs a process that is not our child and waits for it to
// die through a pidfd, which becomes readable when the process exits.
func killAndWait(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already gone
	}
	defer unix.Close(fd)
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 10_000)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Errorf("plugin %d did not die after SIGKILL: %v", pid, err)
		}
		return
	}
}

func plainConn(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// The plugin must outlive a SIGKILLed host: keep serving on its socket, keep
// logging (to the file; stderr is a broken pipe now), and not block or die
// when it writes a lot to stdout and stderr.
func TestPluginSurvivesHostSIGKILL(t *testing.T) {
	dir := shortDir(t)
	logFile := filepath.Join(t.TempDir(), "plugin.log")
	host := exec.Command(bins.TestHost, bins.TestPlugin, dir, logFile)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = host.Process.Kill()
		_ = host.Wait()
	})
	var l launched
	if err := json.NewDecoder(out).Decode(&l); err != nil {
		t.Fatalf("reading testhost's launch line: %v", err)
	}
	t.Cleanup(func() { killAndWait(t, l.Pid) })
	if l.Version != sdk.ProtocolVersion || !strings.HasPrefix(l.Socket, dir+"/") {
		t.Fatalf("launched %+v, want version %d and a socket in %s", l, sdk.ProtocolVersion, dir)
	}

	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()

	// setsid by the host is what keeps the plugin out of signals aimed at
	// the host's process group.
	if sid, err := unix.Getsid(l.Pid); err != nil || sid != l.Pid {
		t.Fatalf("plugin session = %d, %v; want its own (%d)", sid, err, l.Pid)
	}

	ctx := ctxT(t)
	conn := plainConn(t, l.Socket)
	if _, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Fatalf("Probe after host died: %v", err)
	}
	ni, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != strconv.Itoa(l.Pid) {
		t.Fatalf("NodeGetInfo = %v, %v; want the launched pid %d", ni, err, l.Pid)
	}

	chat := testpb.NewTestServiceClient(conn)
	resp, err := chat.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 1 << 20})
	if err != nil {
		t.Fatalf("1 MiB to stdout and stderr with no host: %v", err)
	}
	t.Logf("plugin's writes with no host: %s", resp.GetUsername())
	if _, err := chat.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatalf("EmptyCall: %v", err)
	}
	if _, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Fatalf("Probe after the writes: %v", err)
	}

	// The log line written after the host died is in the file, as JSON
	// with the fields the host's log parser reads.
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var entry map[string]any
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if entry["@message"] == "empty call" {
			found = entry["@level"] == "info" && entry["@module"] == "testplugin" &&
				entry["pid"] == float64(l.Pid)
		}
	}
	if !found {
		t.Fatalf("log file %s has no well-formed %q line written after the host died", logFile, "empty call")
	}
}

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
