package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// Defaults for ServerConfig's optional fields.
const (
	DefaultHeartbeat    = 10 * time.Second
	DefaultMaxBodyBytes = 4 << 20
	// shutdownGrace bounds Serve's own shutdown when its context ends.
	shutdownGrace = 5 * time.Second
)

// Defaults for Limits. Every client is on this machine, where a request
// arrives in microseconds: the values leave a legitimate client, even on
// a loaded machine, orders of magnitude of slack, and bound what a
// connection that does nothing can hold. The cap matters more than the
// timeouts (see connlimit.go): it is what keeps a flood from taking every
// descriptor, the timeouts only give idle descriptors back sooner.
const (
	// DefaultReadHeaderTimeout bounds the wait for a request's header from
	// the moment the connection is ready to read it (slowloris).
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the whole request, body included (at most
	// DefaultMaxBodyBytes). Streaming responses are not cut by it:
	// net/http lifts the read deadline once the body has been read.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection with no request
	// for this long: longer than Prometheus' default one-minute scrape
	// interval, so that a scraper keeps its connection.
	DefaultIdleTimeout = 90 * time.Second
	// DefaultWriteTimeout bounds each write of an answer, not the answer:
	// it runs from the handler's last write (or from the request's start),
	// so an event stream or a followed log lasts as long as its reader
	// keeps reading, and a reader that takes nothing for this long (after
	// the socket buffers, several MB, are full) is dropped.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultMaxConns caps the connections of one listener: far more than
	// the agent's own clients hold (a CLI command uses one or two, each
	// resolver or broker lease one), far fewer than a descriptor limit of
	// 20,000 or the usual 524,288. Lowered to a quarter of a smaller soft
	// RLIMIT_NOFILE.
	DefaultMaxConns = 1024
	// minMaxConns is the least cap a tiny descriptor limit leaves.
	minMaxConns = 16
)

// Limits bound what clients can hold of one listener. Zero fields take
// the defaults above.
type Limits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	// WriteTimeout is per write, see DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxConns caps the listener's open connections; at the cap the one
	// that has waited longest for a request is closed to make room.
	MaxConns int
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	if l.MaxConns <= 0 {
		l.MaxConns = MaxConnsFor(softNofile())
	}
	return l
}

// ServerConfig configures NewServer.
type ServerConfig struct {
	// Addr is where to listen (see ParseAddr); required.
	Addr string
	// Backend answers the requests; required.
	Backend Backend
	// Logger is named "http" below the given logger; nil logs nothing.
	Logger hclog.Logger
	// ParseJob parses a submitted job file; nil means jobspec.Parse.
	// Tests and embedders may swap it.
	ParseJob func(src []byte, filename string) (*jobspec.Job, error)
	// Heartbeat is how often an idle event stream sends "{}" so that both
	// ends notice a dead peer; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Metrics is served at /v1/metrics; nil answers 404 there.
	Metrics prometheus.Gatherer
	// EnableDebug serves Go's profiler at /debug/pprof/ (the agent's
	// enable_debug). Off by default: profiles reveal memory contents and
	// a CPU profile costs the agent while it runs. The management token
	// is needed for it.
	EnableDebug bool
	// Tokens authenticate requests on TCP, where they are required; on a
	// unix socket they are not asked for (the socket's mode is the
	// authentication) and, when set, are served at /v1/acl/tokens.
	Tokens *Tokens
	// Limits are the timeouts and the connection cap; zero values take
	// the defaults.
	Limits Limits
	// UI serves the web UI under /ui/ (package host/webui); nil answers 404
	// there. Its pages need no token: what they show comes from the API,
	// which does.
	UI http.Handler
}

// Server is the agent's HTTP API. NewServer listens; Serve answers until its
// context ends or Shutdown is called.
type Server struct {
	cfg  ServerConfig
	log  hclog.Logger
	addr api.Addr
	ln   net.Listener
	http *http.Server
	// promHandler writes the Prometheus text format of cfg.Metrics.
	promHandler http.Handler
	// public matches the routes that need no token (routeTable's public).
	public *http.ServeMux

	// baseCtx parents every request context. Shutdown cancels it first,
	// because http.Server.Shutdown waits for requests to finish and
	// streaming requests (events, followed logs) never would on their own.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	shutdownOnce sync.Once
	shutdownErr  error

	// uiMu guards ui, the loopback listener a unix-socket server opens for
	// the web UI on the first POST /v1/agent/ui (ui.go).
	uiMu     sync.Mutex
	ui       *Server
	uiDone   chan struct{} // closed when ui's Serve has returned
	uiClosed bool          // set by Shutdown: open no listener after it
}

// NewServer validates cfg and starts listening, so that when it returns
// clients can connect (their requests wait until Serve runs). A unix socket's
// directory is created 0700 if missing; a stale socket left by a dead agent is
// removed, a live one is an error.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("api: ServerConfig.Backend is nil")
	}
	addr, err := api.ParseAddr(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ParseJob == nil {
		cfg.ParseJob = parseJob
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	cfg.Limits = cfg.Limits.withDefaults()
	if addr.Network == "tcp" && cfg.Tokens == nil {
		return nil, fmt.Errorf("api: %s: a TCP listener needs ServerConfig.Tokens (the unix socket does not)", addr)
	}
	s := &Server{cfg: cfg, log: cfg.Logger.Named("http"), addr: addr}
	if cfg.Metrics != nil {
		s.promHandler = promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{
			ErrorLog:      s.log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}),
			ErrorHandling: promhttp.ContinueOnError,
		})
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())

	ln, err := listen(addr)
	if err != nil {
		s.cancelBase()
		return nil, fmt.Errorf("api: %w", err)
	}
	if addr.Network == "tcp" {
		// Port 0 asks for any port: report the one we got.
		s.addr.Address = ln.Addr().String()
	}
	lim := newConnLimiter(ln, cfg.Limits.MaxConns, s.log)
	s.ln = lim
	s.http = &http.Server{
		Handler:           withRecover(s.log, cfg.Limits.WriteTimeout, s.routes()),
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
		ConnState:         lim.connState,
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout,
		ReadTimeout:       cfg.Limits.ReadTimeout,
		IdleTimeout:       cfg.Limits.IdleTimeout,
		// No WriteTimeout: it would cut event streams and followed logs
		// at a fixed age. withRecover sets a deadline per write instead.
		ErrorLog: s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	return s, nil
}

// Addr returns the address the server listens on, in ParseAddr's form.
func (s *Server) Addr() string { return s.addr.String() }

// Serve answers requests until ctx is done or Shutdown is called. It returns
// nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context) error {
	errCh := make(chan error, 1)
	go func() { errCh <- s.http.Serve(s.ln) }()
	s.log.Info("API listening", "addr", s.Addr(), "max_conns", s.cfg.Limits.MaxConns)
	select {
	case err := <-errCh:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		s.cancelBase()
		return fmt.Errorf("api: serve %s: %w", s.Addr(), err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		err := s.Shutdown(sctx)
		<-errCh
		return err
	}
}

// Shutdown stops accepting connections, ends streaming requests, waits for
// the others until ctx is done, and removes the unix socket. It is safe to
// call more than once and without Serve.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.cancelBase()
		s.stopUI(ctx)
		err := s.http.Shutdown(ctx)
		// http.Server.Shutdown closes only listeners Serve has seen; close
		// ours in case Serve never ran. The error is "already closed".
		_ = s.ln.Close()
		if err != nil {
			s.shutdownErr = fmt.Errorf("api: shutdown: %w", err)
		}
		s.log.Info("API stopped", "addr", s.Addr())
	})
	return s.shutdownErr
}

// listen opens addr; for a unix socket it prepares the directory, clears a
// stale socket and sets mode 0600.
func listen(addr api.Addr) (net.Listener, error) {
	if addr.Network == "tcp" {
		ln, err := net.Listen("tcp", addr.Address)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr.Address, err)
		}
		return ln, nil
	}
	path := addr.Address
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	lock, err := lockSocket(path)
	if err != nil {
		return nil, err
	}
	if err := removeStaleSocket(path); err != nil {
		_ = lock.Close()
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Listen creates the socket with the umask's mode; tighten it before
	// Serve answers anything. Until then the kernel queues connections
	// but no request is handled, so the short window leaks nothing.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		_ = lock.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	// The listener removes the socket file when closed.
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return &lockedListener{Listener: ln, lock: lock}, nil
}

// ErrAddrInUse says that another process (most likely another agent)
// serves the unix socket an agent was to listen on.
var ErrAddrInUse = errors.New("address in use")

// lockSocket takes an exclusive flock on path+".lock" for as long as the
// listener lives. Without it two agents starting together could both find
// the socket stale, and the second would unlink the first one's fresh
// socket and take its clients. The kernel drops the lock when its holder
// dies, kill -9 included, so a leftover lock file means nothing.
func lockSocket(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("socket lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: another agent is listening on this socket (it holds %s.lock): %w", path, path, ErrAddrInUse)
		}
		return nil, fmt.Errorf("socket lock %s.lock: %w", path, err)
	}
	return f, nil
}

// CheckAddrFree returns an error wrapping ErrAddrInUse when another agent
// listens on the unix socket addr, so that a caller can say so before it
// does anything else. It is advice: NewServer decides, under the lock. TCP
// addresses are left to the kernel.
func CheckAddrFree(addr string) error {
	a, err := api.ParseAddr(addr)
	if err != nil {
		return err
	}
	if a.Network != "unix" {
		return nil
	}
	lock, err := lockSocket(a.Address)
	if err != nil {
		return err
	}
	return lock.Close()
}

// lockedListener releases the socket's lock once the listener is closed
// (and the socket unlinked), never before.
type lockedListener struct {
	net.Listener
	lock *os.File
	once sync.Once
	err  error
}

func (l *lockedListener) Close() error {
	l.once.Do(func() {
		l.err = l.Listener.Close()
		_ = l.lock.Close()
	})
	return l.err
}

// removeStaleSocket removes path if it is a socket nobody answers on. It
// refuses to touch anything else: a live socket means another agent is
// running, and a regular file is not ours to delete.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("%s: another process is listening on this socket: %w", path, ErrAddrInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("probe existing socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}
