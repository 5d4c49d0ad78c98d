package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// GoPluginSocketOverhead is how many bytes go-plugin appends to the socket
// directory it is given: "/plugin-dir" plus up to 10 random digits (its
// per-launch directory), then "/plugin" plus up to 10 digits (the socket).
const GoPluginSocketOverhead = len("/plugin-dir") + 10 + len("/plugin") + 10

// GoPluginConfig configures the go_plugin driver.
type GoPluginConfig struct {
	Watcher *Watcher
	// Handshake is sdk.Handshake().
	Handshake plugin.HandshakeConfig
	// PluginSets is sdk.HostPlugins(): the plugin set of every protocol
	// version the host speaks.
	PluginSets map[int]plugin.PluginSet
	// Dispense names the plugin to dispense (sdk.PluginCSI).
	Dispense string
	// Identify is the identity check that must succeed before a launched
	// or re-attached plugin is trusted. What it returns is kept as the
	// task's Identity, so that hooks need not ask the plugin again. Nil
	// means CSIIdentify.
	Identify func(ctx context.Context, dispensed any) (identity any, err error)
	// StartTimeout bounds launch + handshake when ctx has no deadline.
	StartTimeout time.Duration
	Logger       hclog.Logger
}

// GoPlugin launches sdk plugins through go-plugin, gRPC only.
type GoPlugin struct {
	cfg GoPluginConfig
}

// NewGoPlugin returns the go_plugin driver.
func NewGoPlugin(cfg GoPluginConfig) (*GoPlugin, error) {
	if cfg.Watcher == nil || len(cfg.PluginSets) == 0 || cfg.Dispense == "" {
		return nil, errors.New("go_plugin driver: Watcher, PluginSets and Dispense are required")
	}
	if cfg.Identify == nil {
		cfg.Identify = CSIIdentify
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &GoPlugin{cfg: cfg}, nil
}

// CSIIdentity is what CSIIdentify learnt: the plugin's GetPluginInfo
// answer and, asked at the same time, its Probe (which may fail or say not
// ready: a plugin still starting is not an identity failure). The CSI
// supervisor uses it instead of asking both again right after the launch.
type CSIIdentity struct {
	Info     *csipb.GetPluginInfoResponse
	Probe    *csipb.ProbeResponse
	ProbeErr error
}

// notCSIHint explains an Unimplemented identity check: the binary speaks
// go-plugin with the sdk's handshake but serves no CSI, so its job lacks
// the plugin block that says what else it is. Without it, the job author
// saw only "unknown service csi.v1.Identity".
const notCSIHint = `The binary does not serve CSI. A go_plugin task without a plugin block must be an sdk CSI plugin (sdk.Config with CSI).
For a plugin of another type (sdk.Config with Types, or any go-plugin gRPC binary), say what it provides in the task's config:

    config {
      command = "..."
      plugin {
        type = "kv"        # one of the binary's sdk.Config.Types
        name = "kv-main"   # consumers reach it at pluginhost:///kv/kv-main
      }
    }

and, for a binary not built with the sdk, its go-plugin handshake { magic_cookie_key, magic_cookie_value, protocol_versions } too.`

// CSIIdentify calls CSI GetPluginInfo, and Probe alongside, on a dispensed
// *grpc.ClientConn; it returns a *CSIIdentity.
func CSIIdentify(ctx context.Context, dispensed any) (any, error) {
	conn, ok := dispensed.(grpc.ClientConnInterface)
	if !ok {
		return nil, fmt.Errorf("identity check: dispensed %T, want a gRPC connection", dispensed)
	}
	client := csipb.NewIdentityClient(conn)
	id := &CSIIdentity{}
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		id.Probe, id.ProbeErr = client.Probe(ctx, &csipb.ProbeRequest{})
	}()
	info, err := client.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{})
	<-probed
	if status.Code(err) == codes.Unimplemented {
		return nil, fmt.Errorf("identity check: GetPluginInfo: %w\n%s", err, notCSIHint)
	}
	if err != nil {
		return nil, fmt.Errorf("identity check: GetPluginInfo: %w", err)
	}
	if info.GetName() == "" {
		return nil, errors.New("identity check: GetPluginInfo returned no name")
	}
	id.Info = info
	return id, nil
}

// Name implements Driver.
func (d *GoPlugin) Name() string { return "go_plugin" }

func (d *GoPlugin) timeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return d.cfg.StartTimeout
}

// Start implements Driver.
func (d *GoPlugin) Start(ctx context.Context, req *StartRequest) (Task, error) {
	path, err := ResolveCommand(req.Command, req.Env, req.WorkDir)
	if err != nil {
		return nil, err
	}
	if err := VerifyChecksum(path, req.Checksum); err != nil {
		return nil, err
	}
	if req.SocketDir == "" {
		return nil, errors.New("go_plugin: no socket directory")
	}
	lc, err := d.launchConfig(req.Plugin)
	if err != nil {
		return nil, err
	}
	logger := req.Logger
	if logger == nil {
		logger = d.cfg.Logger
	}
	var pr *pluginRunner
	cc := &plugin.ClientConfig{
		HandshakeConfig:  lc.handshake,
		VersionedPlugins: lc.sets,
		AllowedProtocols: lc.protocols(),
		// The task's environment is exactly what the job asked for.
		SkipHostEnv: true,
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, pluginDir string) (runner.Runner, error) {
			if err := givePluginDir(req, pluginDir); err != nil {
				return nil, err
			}
			r, err := newPluginRunner(path, req, spec.Env)
			if err != nil {
				return nil, err
			}
			pr = r
			return pr, nil
		},
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: req.SocketDir},
		// Output the plugin writes through go-plugin's stdio stream; never
		// parsed, only logged line by line.
		SyncStdout:   logWriter(logger.Named("stdout")),
		SyncStderr:   logWriter(logger.Named("stderr")),
		Stderr:       io.Discard,
		StartTimeout: d.timeout(ctx),
		Logger:       logger.Named("go-plugin"),
		GRPCDialOptions: []grpc.DialOption{noBrokerStream(),
			// After go-plugin's own dialer: the last one given wins.
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return pr.dial(ctx) })},
	}
	client := plugin.NewClient(cc)
	defer func() { pr.launched() }()
	t, err := d.finish(ctx, client, lc, func() string { return pr.handshake() }, func() *proc {
		if pr == nil {
			return nil
		}
		return pr.p
	})
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("launch plugin %s: %w", path, err)
	}
	t.stdout = pr.stdoutR
	// The address the plugin announced and the agent checked, not
	// go-plugin's copy (a /proc/self/fd name for a unix socket).
	a := pr.addr
	if a == nil {
		client.Kill()
		return nil, fmt.Errorf("launch plugin %s: connected without a checked address", path)
	}
	if a.network == "unix" {
		// go-plugin binds with the plugin's umask (0755 by default).
		if err := TightenSocket(a.sockDir, a.rel); err != nil {
			client.Kill()
			return nil, fmt.Errorf("launch plugin %s: %w", path, err)
		}
	}
	rc := client.ReattachConfig()
	t.handle = &Handle{
		Driver:     d.Name(),
		Pid:        t.p.pid,
		StartTime:  t.p.startTime,
		SocketPath: socketPathOf(a.network, a.addr),
		Plugin:     req.Plugin,
		CgroupPath: cgroupPath(req.Cgroup),
		SocketDir:  req.SocketDir,
		Reattach: &ReattachRecord{
			Protocol:        string(rc.Protocol),
			ProtocolVersion: client.NegotiatedVersion(),
			Network:         a.network,
			Addr:            a.addr,
			Pid:             t.p.pid,
		},
	}
	return t, nil
}

// givePluginDir makes go-plugin's per-launch socket directory (which the
// host side creates, 0700, inside the task's socket directory) the task
// user's, so that a plugin running as its `user` can bind its socket
// there. The task owns the directory it is in and could have swapped the
// new one for a link: it is opened beneath its parent, through no link,
// and chowned through its descriptor.
func givePluginDir(req *StartRequest, pluginDir string) error {
	if req.User == nil {
		return nil
	}
	if filepath.Dir(pluginDir) != filepath.Clean(req.SocketDir) {
		return fmt.Errorf("go-plugin's socket directory %s is not in the task's %s", pluginDir, req.SocketDir)
	}
	parent, err := beneath.Open(req.SocketDir)
	if err != nil {
		return fmt.Errorf("plugin socket directory: %w", err)
	}
	defer parent.Close()
	d, err := parent.OpenDir(filepath.Base(pluginDir))
	if err != nil {
		return fmt.Errorf("plugin socket directory: %w", err)
	}
	defer d.Close()
	if err := d.Chown(int(req.User.UID), int(req.User.GID)); err != nil {
		return fmt.Errorf("plugin socket directory: %w", err)
	}
	return nil
}

// connect is client.Client, with a panic in go-plugin's handshake turned
// into an error: go-plugin v1.8 writes a certificate the plugin sends in
// its handshake line (a server started with AutoMTLS) into a TLS config
// this client never set, a nil pointer, and re-panics after killing the
// plugin. A
// plugin must not be able to bring the agent down with its handshake line.
func connect(client *plugin.Client) (rpc plugin.ClientProtocol, err error) {
	defer func() {
		if r := recover(); r != nil {
			rpc, err = nil, fmt.Errorf("go-plugin failed on the plugin's handshake: %v", r)
		}
	}()
	return client.Client()
}

// finish connects, dispenses and identifies.
//
// handshake is the plugin's handshake line, for explaining a refusal.
func (d *GoPlugin) finish(ctx context.Context, client *plugin.Client, lc launchConfig, handshake func() string, p func() *proc) (*pluginTask, error) {
	rpc, err := connect(client)
	if err != nil {
		return nil, explainLaunch(handshake(), lc.protocols(), err)
	}
	ictx, cancel := context.WithTimeout(ctx, d.timeout(ctx))
	defer cancel()
	var raw, identity any
	if _, netrpc := rpc.(*plugin.RPCClient); netrpc {
		// Over net/rpc, Dispense is a call to the plugin that needs its
		// own plugin name; the agent only needs Control.Ping, which the
		// connection itself answers.
		raw = rpc
		identity, err = PingIdentify(ictx, rpc)
	} else {
		raw, err = rpc.Dispense(lc.dispense)
		if err != nil {
			return nil, fmt.Errorf("dispense %q: %w", lc.dispense, err)
		}
		identity, err = lc.identify(ictx, raw)
	}
	if err != nil {
		return nil, err
	}
	pp := p()
	if pp == nil {
		return nil, errors.New("plugin process unknown")
	}
	t := &pluginTask{p: pp, client: client, dispensed: raw, identity: identity, detached: make(chan struct{})}
	if lc.foreign {
		t.shutdown = controllerShutdown(rpc, raw)
	}
	return t, nil
}

// controllerShutdown returns go-plugin's own way to ask a plugin to stop:
// GRPCController.Shutdown over gRPC, Control.Quit over net/rpc (what
// go-plugin's Client.Kill does, minus its fixed 2 s wait).
func controllerShutdown(rpc plugin.ClientProtocol, dispensed any) func(ctx context.Context) error {
	if rc, ok := rpc.(*plugin.RPCClient); ok {
		// RPCClient.Close sends Control.Quit, then closes the streams.
		return func(ctx context.Context) error {
			done := make(chan error, 1)
			go func() { done <- rc.Close() }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
				// The goroutine ends when the plugin's exit (or the kill
				// that follows) breaks the connection.
				return ctx.Err()
			}
		}
	}
	conn, ok := dispensed.(grpc.ClientConnInterface)
	if !ok {
		return nil
	}
	return func(ctx context.Context) error {
		// go-plugin's controller service is internal to its module; its
		// Empty is an empty message, the same bytes as emptypb.Empty.
		return conn.Invoke(ctx, grpcControllerShutdown, &emptypb.Empty{}, &emptypb.Empty{})
	}
}

// grpcControllerShutdown is go-plugin's GRPCController.Shutdown method.
const grpcControllerShutdown = "/plugin.GRPCController/Shutdown"

// shutdownAskTimeout bounds how long Kill waits for the plugin to answer
// the controller's shutdown request before it goes on with kill_signal: a
// wedged plugin must not add much to kill_timeout.
const shutdownAskTimeout = time.Second

// Recover implements Driver: start time first, then go-plugin's reattach
// with the plugin set of the saved protocol version, then the identity RPC.
func (d *GoPlugin) Recover(ctx context.Context, h *Handle, logger hclog.Logger) (Task, error) {
	if h.Reattach == nil {
		return nil, errors.New("go_plugin handle has no reattach record")
	}
	rec := h.Reattach
	lc, err := d.launchConfig(h.Plugin)
	if err != nil {
		return nil, err
	}
	set, ok := lc.sets[rec.ProtocolVersion]
	if !ok {
		return nil, fmt.Errorf("reattach: host has no plugin set for protocol version %d", rec.ProtocolVersion)
	}
	if logger == nil {
		logger = d.cfg.Logger
	}
	p, err := adopt(h.Pid, h.StartTime, d.cfg.Watcher, h.Cgroup)
	if err != nil {
		return nil, err
	}
	// The recorded address is checked again, as at the launch (see
	// handshake.go): the task had the time the agent was down to change
	// its socket directory.
	id := taskIdentity{pid: p.pid, cg: h.Cgroup}
	pa, sock, err := recheckAddr(h, id)
	if err != nil {
		// Our task (its start time says so), but not on a socket of its
		// own: killed like one that does not answer, below.
		return nil, killUnreachable(p, fmt.Errorf("reattach pid %d: %w", h.Pid, err))
	}
	if sock != nil {
		defer sock.Close()
	}
	addrStr := rec.Addr
	if sock != nil {
		addrStr = beneath.ProcPathOf(sock)
	}
	addr, err := ReattachAddr(rec.Network, addrStr)
	if err != nil {
		p.release()
		return nil, err
	}
	detached := make(chan struct{})
	cc := &plugin.ClientConfig{
		HandshakeConfig:  lc.handshake,
		Plugins:          set,
		AllowedProtocols: lc.protocols(),
		Reattach: &plugin.ReattachConfig{
			Protocol:        plugin.Protocol(rec.Protocol),
			ProtocolVersion: rec.ProtocolVersion,
			Addr:            addr,
			Pid:             rec.Pid,
			ReattachFunc: func() (runner.AttachedRunner, error) {
				return &attachedRunner{p: p, detached: detached}, nil
			},
		},
		SyncStdout: logWriter(logger.Named("stdout")),
		SyncStderr: logWriter(logger.Named("stderr")),
		Stderr:     io.Discard,
		Logger:     logger.Named("go-plugin"),
		GRPCDialOptions: []grpc.DialOption{noBrokerStream(),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return pa.dial(ctx, id) })},
	}
	client := plugin.NewClient(cc)
	t, err := d.finish(ctx, client, lc, func() string { return "" }, func() *proc { return p })
	if err != nil {
		close(detached)
		return nil, killUnreachable(p, fmt.Errorf("reattach pid %d at %s: %w", h.Pid, rec.Addr, err))
	}
	t.detached = detached
	hc := *h
	t.handle = &hc
	return t, nil
}

type pluginTask struct {
	p         *proc
	client    *plugin.Client
	dispensed any
	identity  any
	handle    *Handle
	stdout    io.Closer

	// shutdown asks the plugin to stop through go-plugin's controller;
	// nil for sdk plugins, which stop gracefully on kill_signal (go-plugin's
	// Shutdown is a hard grpc.Server.Stop that cuts in-flight calls, which
	// the sdk's signal handling gives StopTimeout to finish).
	shutdown func(ctx context.Context) error

	detached chan struct{}
	once     sync.Once
}

func (t *pluginTask) Handle() *Handle                 { h := *t.handle; return &h }
func (t *pluginTask) Done() <-chan struct{}           { return t.p.done }
func (t *pluginTask) Result() *ExitResult             { return t.p.Result() }
func (t *pluginTask) Signal(sig syscall.Signal) error { return t.p.signalGroup(sig) }
func (t *pluginTask) Dispensed() any                  { return t.dispensed }
func (t *pluginTask) Identity() any                   { return t.identity }

// Kill stops the plugin the go-plugin way first (for plugins not built
// with the sdk: go-plugin's controller, answered at once, where go-plugin's
// Serve ignores SIGINT), then signals the group itself (kill_signal, then
// SIGKILL after timeout) rather than relying on go-plugin's Kill, whose
// graceful path waits a fixed 2 s; then it lets go-plugin clean up, bounded
// by ctx. The signals go out even after a successful shutdown request: a
// plugin that answered but lingers still gets Nomad's sequence, and one
// that exited is past signalling (signalGroup checks), so only the rest of
// its group is killed.
func (t *pluginTask) Kill(ctx context.Context, sig syscall.Signal, timeout time.Duration) error {
	if t.shutdown != nil {
		t.askShutdown(ctx, timeout)
	}
	if err := t.p.kill(ctx, sig, timeout); err != nil {
		return err
	}
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		t.client.Kill()
	}()
	select {
	case <-cleaned:
	case <-ctx.Done():
		return fmt.Errorf("plugin cleanup after kill: %w", ctx.Err())
	}
	t.p.release()
	return nil
}

// askShutdown sends the controller's shutdown request and waits until the
// plugin exits, the request is answered, or min(timeout,
// shutdownAskTimeout) passes. go-plugin's gRPC server stops before it
// answers (the answer is usually lost with the connection), so an error
// here says nothing: the exit, or Kill's signals after, decide.
func (t *pluginTask) askShutdown(ctx context.Context, timeout time.Duration) {
	actx, cancel := context.WithTimeout(ctx, min(timeout, shutdownAskTimeout))
	defer cancel()
	asked := make(chan struct{})
	go func() {
		defer close(asked)
		_ = t.shutdown(actx)
	}()
	select {
	case <-t.p.done:
	case <-asked:
	case <-actx.Done():
	}
	// The request is bounded by actx, which ends with this function: the
	// goroutine is done when we return.
	cancel()
	<-asked
}

// Detach drops the connection and our ends of the plugin's pipes, as an
// agent that dies would; the plugin keeps running.
func (t *pluginTask) Detach() {
	t.once.Do(func() {
		close(t.detached)
		// A net/rpc client's Close sends Control.Quit, which stops the
		// plugin: it is left open, and goes with the agent's process.
		if _, netrpc := t.dispensed.(*plugin.RPCClient); !netrpc {
			if c, ok := t.dispensed.(io.Closer); ok {
				_ = c.Close()
			}
		}
		if t.stdout != nil {
			_ = t.stdout.Close()
		}
		t.p.release()
	})
}

// attachedRunner is go-plugin's view of a re-adopted plugin: exits come from
// the pidfd watcher instead of go-plugin's kill(pid, 0) poll.
type attachedRunner struct {
	p        *proc
	detached chan struct{}
}

func (r *attachedRunner) Wait(ctx context.Context) error {
	select {
	case <-r.p.done:
	case <-r.detached:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (r *attachedRunner) Kill(ctx context.Context) error {
	return r.p.kill(ctx, syscall.SIGKILL, 0)
}

func (r *attachedRunner) ID() string { return fmt.Sprint(r.p.pid) }

func (r *attachedRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *attachedRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// killUnreachable kills a re-adopted task the agent cannot talk to: the
// start time proved the process is our task, so the restart that follows
// must not run a second copy next to it. The kill is bounded.
func killUnreachable(p *proc, err error) error {
	kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	kerr := p.kill(kctx, syscall.SIGKILL, 0)
	cancel()
	p.release()
	return errors.Join(err, kerr)
}

// recheckAddr checks a reattach record's address as a launch's (a handle
// recorded before handles carried their socket directory is taken from
// the socket path's directories: <task socket dir>/plugin-dir*/plugin*).
// For a unix socket it returns the checked socket's descriptor too.
func recheckAddr(h *Handle, id taskIdentity) (*pluginAddr, *os.File, error) {
	rec := h.Reattach
	network := rec.Network
	if network == "" {
		network = "unix"
	}
	dir := h.SocketDir
	if dir == "" && network == "unix" {
		dir = filepath.Dir(filepath.Dir(rec.Addr))
	}
	a, err := checkAnnounced(dir, network, rec.Addr, id)
	if err != nil {
		return nil, nil, err
	}
	if a.network != "unix" {
		return a, nil, nil
	}
	f, err := a.openSocket()
	if err != nil {
		return nil, nil, err
	}
	return a, f, nil
}

// socketPathOf is the handle's (and the registry's) form of a plugin's
// address: a unix socket's path, or dynamic.TCPPrefix and host:port for a
// plugin that serves TCP (go-plugin's Python example).
func socketPathOf(network, addr string) string {
	if network == "tcp" {
		return dynamic.TCPPrefix + addr
	}
	return addr
}

// ReattachAddr is the net.Addr of a reattach record's network and address.
func ReattachAddr(network, addr string) (net.Addr, error) {
	switch network {
	case "tcp":
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("reattach address %q: %w", addr, err)
		}
		return a, nil
	case "unix", "":
		return &net.UnixAddr{Net: "unix", Name: addr}, nil
	}
	return nil, fmt.Errorf("reattach address: network %q is neither unix nor tcp", network)
}
