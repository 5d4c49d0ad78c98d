package sdk_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/internal/testcsi"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

// standalone runs testplugin without the cookie and follows its stderr.
type standalone struct {
	cmd    *exec.Cmd
	lines  chan string // stderr lines; closed at EOF
	waitCh chan error
}

func startStandalone(t *testing.T, env []string, args ...string) *standalone {
	t.Helper()
	cmd := exec.Command(bins.TestPlugin, args...)
	cmd.Env = append(withoutCookie(os.Environ()), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &standalone{cmd: cmd, lines: make(chan string, 64), waitCh: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		// Wait only after stderr hit EOF, as os/exec requires.
		s.waitCh <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range s.lines {
		}
		<-s.waitCh
	})
	return s
}

func withoutCookie(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, sdk.MagicCookieKey+"=") && !strings.HasPrefix(kv, sdk.EnvCSIEndpoint+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// waitLine returns the first stderr line containing substr; it fails the test
// if the process ends first.
func (s *standalone) waitLine(t *testing.T, substr string) string {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("plugin exited before logging %q", substr)
			}
			if strings.Contains(line, substr) {
				return line
			}
		case <-timeout.C:
			t.Fatalf("plugin never logged %q", substr)
		}
	}
}

// exit collects the remaining output and the exit code.
func (s *standalone) exit(t *testing.T) (int, string) {
	t.Helper()
	var rest []string
	for line := range s.lines {
		rest = append(rest, line)
	}
	err := <-s.waitCh
	s.waitCh <- err
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, strings.Join(rest, "\n")
	case errors.As(err, &ee):
		return ee.ExitCode(), strings.Join(rest, "\n")
	default:
		t.Fatalf("wait: %v", err)
		return -1, ""
	}
}

// staleSocket leaves a socket file behind, as a SIGKILLed plugin does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l.Close()
}

func TestStandaloneEndpointsAndGracefulStop(t *testing.T) {
	cases := []struct {
		name string
		env  func(p string) []string
		args func(p string) []string
		sig  syscall.Signal
	}{
		{"env unix:///", func(p string) []string { return []string{"CSI_ENDPOINT=unix://" + p} }, nil, syscall.SIGTERM},
		{"flag unix:/", nil, func(p string) []string { return []string{"--endpoint=unix:" + p} }, syscall.SIGINT},
		{"flag bare path over env", func(p string) []string { return []string{"CSI_ENDPOINT=unix:///nonexistent/x.sock"} },
			func(p string) []string { return []string{"-endpoint", p} }, syscall.SIGTERM},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(shortDir(t), "csi.sock")
			staleSocket(t, sock)
			var env, args []string
			if tc.env != nil {
				env = tc.env(sock)
			}
			if tc.args != nil {
				args = tc.args(sock)
			}
			s := startStandalone(t, env, args...)
			s.waitLine(t, "serving standalone")

			ctx := ctxT(t)
			info, err := csi.NewIdentityClient(plainConn(t, sock)).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
			if err != nil || info.GetName() != testcsi.Name {
				t.Fatalf("GetPluginInfo = %v, %v", info, err)
			}
			if err := s.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code, out := s.exit(t); code != sdk.ExitOK {
				t.Fatalf("exit code %d after %v, want %d; output:\n%s", code, tc.sig, sdk.ExitOK, out)
			}
			if _, err := os.Stat(sock); !os.IsNotExist(err) {
				t.Fatalf("socket left behind: %v", err)
			}
		})
	}
}

func TestStandaloneRefusesBadEndpoints(t *testing.T) {
	dir := shortDir(t)
	live := filepath.Join(dir, "live.sock")
	l, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct{ name, endpoint, want string }{
		{"none", "", "empty CSI endpoint"},
		{"tcp", "tcp://127.0.0.1:9000", "only unix sockets"},
		{"live socket", "unix://" + live, "in use by another process"},
		{"regular file", regular, "not a socket"},
		{"too long", "/" + strings.Repeat("d", 120) + "/csi.sock", "the limit is 107"},
		{"missing dir", filepath.Join(dir, "no", "csi.sock"), "no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			if tc.endpoint != "" {
				env = []string{"CSI_ENDPOINT=" + tc.endpoint}
			}
			s := startStandalone(t, env)
			code, out := s.exit(t)
			if code != sdk.ExitError || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d mentioning %q", code, out, sdk.ExitError, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(regular); err != nil || string(b) != "keep me" {
		t.Fatalf("regular file at the endpoint was touched: %q, %v", b, err)
	}
	if conn, err := net.Dial("unix", live); err != nil {
		t.Fatalf("live socket was taken over: %v", err)
	} else {
		_ = conn.Close()
	}
}

func TestServeRejectsConfigWithoutIdentity(t *testing.T) {
	err := sdk.ServeStandalone(context.Background(), sdk.Config{Name: "x", Endpoint: "/tmp/unused.sock"})
	if err == nil || !strings.Contains(err.Error(), "needs CSI (a CSI plugin: sdkcsi.Services) or Types") {
		t.Fatalf("err = %v", err)
	}
	err = sdk.ServeContext(context.Background(), sdk.Config{})
	if err == nil {
		t.Fatal("ServeContext accepted a Config without Identity")
	}
}

// A plugin of another type needs no Identity but must say what it provides,
// and its Types must be told apart from CSI and from each other.
func TestConfigTypes(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  sdk.Config
		want string
	}{
		"node without identity": {sdk.Config{Types: []string{"kv"}, CSI: sdkcsi.Services{Node: &csi.UnimplementedNodeServer{}}}, "needs Identity"},
		"empty type":            {sdk.Config{Types: []string{""}}, "Types[0] is empty"},
		"csi as a type":         {sdk.Config{Types: []string{"csi"}}, "sets Config.CSI instead"},
		"duplicate":             {sdk.Config{Types: []string{"kv", "kv"}}, "listed twice"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Endpoint = "/tmp/unused.sock"
			err := sdk.ServeStandalone(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
