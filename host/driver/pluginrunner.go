package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// pluginRunner is our go-plugin runner.Runner. It exists for one reason
// beyond setsid: go-plugin parses whatever Runner.Stderr yields as JSON log
// lines, and v1.8 panics on a line like {"@message": 42}. Our runner gives
// the plugin's stderr straight to the log shipper and hands go-plugin an
// empty reader, so plugin output can never reach that parser.
type pluginRunner struct {
	cmd     *exec.Cmd
	report  *helperReport
	stdoutR *os.File
	p       *proc
	// line keeps the start of what go-plugin reads from stdout: the
	// handshake line, which names the protocol and any TLS certificate
	// (go-plugin's client does not say which protocol it refused).
	line *lineRecorder
	cg   Cgroup

	// sockDir is the task's socket directory; addr is the address the
	// plugin announced once PluginToHost accepted it, and sock the
	// checked socket's descriptor, held until the launch is done (the
	// net/rpc client dials through it).
	sockDir string
	addr    *pluginAddr
	sock    *os.File
}

func newPluginRunner(path string, req *StartRequest, pluginEnv []string) (*pluginRunner, error) {
	// The task's user too: a go_plugin task with `user` runs as that
	// user, as a raw_exec one does.
	cmd, report, err := taskCommand(path, req.Args, req, hostSpec(req), nsexec.Namespaces{})
	if err != nil {
		return nil, err
	}
	env := append([]string{}, req.Env...)
	cmd.Env = append(env, pluginEnv...)
	cmd.Stderr = req.Stderr
	return &pluginRunner{cmd: cmd, report: report, line: &lineRecorder{}, cg: req.Cgroup, sockDir: req.SocketDir}, nil
}

func (r *pluginRunner) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// go-plugin reads the handshake line from stdout, so stdout is ours.
	rd, wr, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("stdout pipe: %w", err)
	}
	r.cmd.Stdout = wr
	p, err := startTaskAndWait(ctx, r.cmd, r.report, r.cg)
	_ = wr.Close()
	if err != nil {
		_ = rd.Close()
		return fmt.Errorf("start %s: %w", r.cmd.Path, err)
	}
	r.stdoutR = rd
	r.p = p
	return nil
}

func (r *pluginRunner) Diagnose(context.Context) string {
	return "plugin stderr is in the task's log files (alloc/logs/<task>.stderr.N)"
}

func (r *pluginRunner) Stdout() io.ReadCloser {
	return closedIsEOF{File: r.stdoutR, rec: r.line}
}

// handshake returns the handshake line go-plugin read, "" if none yet.
func (r *pluginRunner) handshake() string {
	if r == nil {
		return ""
	}
	return r.line.first()
}

// lineRecorder keeps the first line of a stream, up to a bound.
type lineRecorder struct {
	mu   sync.Mutex
	buf  []byte
	done bool
}

const maxHandshakeLine = 16 << 10

func (l *lineRecorder) record(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		p, l.done = p[:i], true
	}
	l.buf = append(l.buf, p[:min(len(p), maxHandshakeLine-len(l.buf))]...)
	if len(l.buf) >= maxHandshakeLine {
		l.done = true
	}
}

func (l *lineRecorder) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}
func (r *pluginRunner) Stderr() io.ReadCloser { return io.NopCloser(strings.NewReader("")) }
func (r *pluginRunner) Name() string          { return r.cmd.Path }
func (r *pluginRunner) ID() string            { return fmt.Sprint(r.p.pid) }

func (r *pluginRunner) Wait(ctx context.Context) error {
	select {
	case <-r.p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *pluginRunner) Kill(ctx context.Context) error {
	return r.p.kill(ctx, syscall.SIGKILL, 0)
}

// PluginToHost accepts the address the plugin announced only if it is the
// task's own (see handshake.go); a unix socket is handed to go-plugin by
// its descriptor's name.
func (r *pluginRunner) PluginToHost(network, addr string) (string, string, error) {
	if r.p == nil {
		return "", "", errors.New("plugin handshake before the plugin started")
	}
	a, err := checkAnnounced(r.sockDir, network, addr, taskIdentity{pid: r.p.pid, cg: r.cg})
	if err != nil {
		return "", "", err
	}
	r.addr = a
	if network != "unix" {
		return network, addr, nil
	}
	f, err := a.openSocket()
	if err != nil {
		return "", "", err
	}
	r.sock = f
	return network, beneath.ProcPathOf(f), nil
}

// launched drops what only the launch needed: the socket's descriptor.
func (r *pluginRunner) launched() {
	if r != nil && r.sock != nil {
		_ = r.sock.Close()
		r.sock = nil
	}
}

// dial is the gRPC dialer of the launch's client: every connection, the
// first and any reconnect, goes through the check of the announced
// address.
func (r *pluginRunner) dial(ctx context.Context) (net.Conn, error) {
	if r == nil || r.addr == nil || r.p == nil {
		return nil, errors.New("plugin address not announced yet")
	}
	return r.addr.dial(ctx, taskIdentity{pid: r.p.pid, cg: r.cg})
}

func (r *pluginRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// closedIsEOF ends go-plugin's stdout scanner quietly when Detach closes our
// end of the pipe: a detached plugin is not an error, and go-plugin logs any
// read error other than EOF at ERROR level.
type closedIsEOF struct {
	*os.File
	rec *lineRecorder
}

func (f closedIsEOF) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if f.rec != nil && n > 0 {
		f.rec.record(p[:n])
	}
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}
