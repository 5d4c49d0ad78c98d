package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/internal/testbin"
	"github.com/pluginhost/pluginhost/internal/testproc"
	"github.com/pluginhost/pluginhost/sdk"
)

// shortTempDir is t.TempDir, checked against the unix socket path limit
// with room for the socket names used below.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir)+len("/csi.sock") > sdk.MaxSocketPath {
		t.Fatalf("temp dir %s too long for a unix socket path", dir)
	}
	return dir
}

// unmountUnder registers a cleanup that unmounts everything below dir, so
// that a failing test never leaves mounts behind (and TempDir's removal can
// then succeed). Call it after creating dir so that it runs before dir's
// removal.
func unmountUnder(t *testing.T, dir string) {
	t.Helper()
	t.Cleanup(func() {
		points, err := mountPoints()
		if err != nil {
			t.Errorf("list mounts: %v", err)
			return
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			real = dir
		}
		for p := range points {
			if strings.HasPrefix(p, real+"/") {
				if err := unmountAll(p); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}
		}
	})
}

type proc struct {
	cmd  *exec.Cmd
	out  *testproc.Buffer
	done chan struct{}
	err  error // valid after done
}

// startBinary runs the real mockcsi binary standalone on dir/csi.sock with
// extra env and args. It is stopped (SIGTERM, then SIGKILL) in cleanup.
func startBinary(t *testing.T, dir string, env []string, args ...string) (*proc, string) {
	t.Helper()
	bin := testbin.MustPath(t, "mockcsi")
	sock := filepath.Join(dir, "csi.sock")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CSI_ENDPOINT=unix://"+sock)
	cmd.Env = append(cmd.Env, env...)
	p := &proc{cmd: cmd, out: &testproc.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mockcsi: %v", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("mockcsi output:\n%s", p.out.String())
		}
	})
	return p, sock
}

// exitCode waits for the process to exit and returns its code.
func (p *proc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("mockcsi still running after %s; output:\n%s", within, p.out.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("wait: %v", p.err)
	}
	return 0
}

// dial connects to a plugin socket; the connection is closed in cleanup.
func dial(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", sock, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitServing polls GetPluginInfo until the plugin answers: a standalone
// plugin announces nothing when its socket is up, so there is no event to
// wait on.
func waitServing(t *testing.T, p *proc, conn *grpc.ClientConn) {
	t.Helper()
	id := csi.NewIdentityClient(conn)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
		cancel()
		if err == nil {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("mockcsi exited (%v) before serving; output:\n%s", p.err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("mockcsi not serving after 20s: %v; output:\n%s", err, p.out.String())
		}
	}
}

// startGoPlugin launches the real binary the way pluginhost does, through
// a go-plugin client, and returns the go-plugin socket's path.
func startGoPlugin(t *testing.T, args ...string) string {
	t.Helper()
	bin := testbin.MustPath(t, "mockcsi")
	out := &testproc.Buffer{}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: sdk.HostPlugins(),
		Cmd:              exec.Command(bin, args...),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "host", Output: out, Level: hclog.Debug}),
		StartTimeout:     30 * time.Second,
	})
	t.Cleanup(func() {
		client.Kill()
		if t.Failed() {
			t.Logf("go-plugin host log:\n%s", out.String())
		}
	})
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("go-plugin launch: %v\n%s", err, out.String())
	}
	raw, err := rpc.Dispense(sdk.PluginCSI)
	if err != nil {
		t.Fatalf("dispense %s: %v", sdk.PluginCSI, err)
	}
	if _, ok := raw.(*grpc.ClientConn); !ok {
		t.Fatalf("dispensed %T, want *grpc.ClientConn", raw)
	}
	addr := client.ReattachConfig().Addr
	if addr.Network() != "unix" {
		t.Fatalf("go-plugin socket is %s %s, want unix", addr.Network(), addr)
	}
	return addr.String()
}
