package sdk_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
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
