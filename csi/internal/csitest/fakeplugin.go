// Package csitest holds what the tests of csi, csi/plugins and
// csi/volumes share: FakePlugin, an in-process CSI driver with failure
// knobs served over a real unix socket, StartMockCSI, which runs the real
// mockcsi binary, and Info, a registration. It must not import csi: the
// client's own tests use it.
package csitest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/pluginhost/pluginhost/dynamic"
)

// FakePlugin is an in-test CSI driver served over a real unix socket with a
// real gRPC server: the one stand-in these tests allow, with knobs for the
// behaviours real drivers show. Every knob is read under mu at call time,
// so a test may turn them (under Set) while the plugin is being
// fingerprinted.
type FakePlugin struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer

	mu         sync.Mutex
	Name       string
	Version    string
	PluginCaps []*csipb.PluginCapability
	CtrlCaps   []*csipb.ControllerServiceCapability
	NodeCaps   []*csipb.NodeServiceCapability
	NodeID     string
	Ready      *wrapperspb.BoolValue // Probe's ready; nil leaves it unset
	// Script[method] is a queue of codes to fail with, one per call,
	// before the method answers normally; Always[method] fails every call.
	Script map[string][]codes.Code
	Always map[string]codes.Code
	// Hang[method], when set, makes calls block until the channel is
	// closed or the call's context ends.
	Hang  map[string]chan struct{}
	calls map[string]int
	// Latency is added to every call (a benchmark's slow plugin).
	Latency time.Duration

	// Probed receives a value for every Probe call, once the call has read
	// the knobs, if a test wants to wait for them (buffered; sends never
	// block the server).
	Probed chan struct{}
	// Entered, when set, receives the method name of every call as it
	// arrives (buffered by the test), before any hang.
	Entered chan string
}

// NewFakePlugin returns a healthy plugin with a controller and a node
// service that can create and stage volumes.
func NewFakePlugin() *FakePlugin {
	return &FakePlugin{
		Name:    "fake.csi.example.com",
		Version: "1.2.3",
		PluginCaps: []*csipb.PluginCapability{
			SvcCap(csipb.PluginCapability_Service_CONTROLLER_SERVICE),
			SvcCap(csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		},
		CtrlCaps: []*csipb.ControllerServiceCapability{CtrlCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)},
		NodeCaps: []*csipb.NodeServiceCapability{NodeCap(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)},
		NodeID:   "node-1",
		Script:   map[string][]codes.Code{},
		Always:   map[string]codes.Code{},
		Hang:     map[string]chan struct{}{},
		calls:    map[string]int{},
		Probed:   make(chan struct{}, 1024),
	}
}

// SvcCap, CtrlCap and NodeCap build capability entries.
func SvcCap(t csipb.PluginCapability_Service_Type) *csipb.PluginCapability {
	return &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: t}}}
}

func CtrlCap(t csipb.ControllerServiceCapability_RPC_Type) *csipb.ControllerServiceCapability {
	return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}}
}

func NodeCap(t csipb.NodeServiceCapability_RPC_Type) *csipb.NodeServiceCapability {
	return &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}}
}

// Set runs f under the plugin's lock.
func (p *FakePlugin) Set(f func(p *FakePlugin)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// CallCount is how often method was called.
func (p *FakePlugin) CallCount(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

// enter counts the call and applies the failure knobs.
func (p *FakePlugin) enter(ctx context.Context, method string) error {
	p.mu.Lock()
	p.calls[method]++
	hang := p.Hang[method]
	latency := p.Latency
	if p.Entered != nil {
		p.Entered <- method
	}
	if method == "Probe" {
		// Signalled once this call's knobs are read: a test that turns a
		// knob on receipt changes the next call, never this one.
		select {
		case p.Probed <- struct{}{}:
		default:
		}
	}
	var code codes.Code
	if c, ok := p.Always[method]; ok {
		code = c
	} else if q := p.Script[method]; len(q) > 0 {
		code, p.Script[method] = q[0], q[1:]
	}
	p.mu.Unlock()
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if hang != nil {
		select {
		case <-hang:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if code != codes.OK {
		return status.Errorf(code, "%s: scripted %s", method, code)
	}
	return nil
}

func (p *FakePlugin) GetPluginInfo(ctx context.Context, _ *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	if err := p.enter(ctx, "GetPluginInfo"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.GetPluginInfoResponse{Name: p.Name, VendorVersion: p.Version, Manifest: map[string]string{"k": "v"}}, nil
}

func (p *FakePlugin) GetPluginCapabilities(ctx context.Context, _ *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	if err := p.enter(ctx, "GetPluginCapabilities"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: p.PluginCaps}, nil
}

func (p *FakePlugin) Probe(ctx context.Context, _ *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	if err := p.enter(ctx, "Probe"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.ProbeResponse{Ready: p.Ready}, nil
}

func (p *FakePlugin) ControllerGetCapabilities(ctx context.Context, _ *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	if err := p.enter(ctx, "ControllerGetCapabilities"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: p.CtrlCaps}, nil
}

func (p *FakePlugin) CreateVolume(ctx context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	if err := p.enter(ctx, "CreateVolume"); err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name required")
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "vol-" + req.GetName(), CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (p *FakePlugin) DeleteVolume(ctx context.Context, _ *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	if err := p.enter(ctx, "DeleteVolume"); err != nil {
		return nil, err
	}
	return &csipb.DeleteVolumeResponse{}, nil
}

func (p *FakePlugin) NodeGetCapabilities(ctx context.Context, _ *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := p.enter(ctx, "NodeGetCapabilities"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: p.NodeCaps}, nil
}

func (p *FakePlugin) NodeGetInfo(ctx context.Context, _ *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if err := p.enter(ctx, "NodeGetInfo"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.NodeGetInfoResponse{
		NodeId:             p.NodeID,
		MaxVolumesPerNode:  16,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{"zone": "z1"}},
	}, nil
}

// Server is a running FakePlugin.
type Server struct {
	Socket string
	srv    *grpc.Server
	// closed gets a value each time a client connection to this server
	// ends: how tests see that an instance manager let go of a plugin.
	closed chan struct{}
	served chan struct{}
}

// ShortDir returns a fresh directory with a short path: t.TempDir embeds the
// test name and can push a socket past the 107-byte sun_path limit.
func ShortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "csit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Serve serves p on socket (a fresh one in a short dir when empty) until
// the test ends or Stop is called.
func Serve(t testing.TB, p *FakePlugin, socket string) *Server {
	t.Helper()
	if socket == "" {
		socket = filepath.Join(ShortDir(t), "csi.sock")
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatalf("listen %s: %v", socket, err)
	}
	s := &Server{Socket: socket, srv: grpc.NewServer(), closed: make(chan struct{}, 1024), served: make(chan struct{})}
	csipb.RegisterIdentityServer(s.srv, p)
	csipb.RegisterControllerServer(s.srv, p)
	csipb.RegisterNodeServer(s.srv, p)
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(&trackingListener{Listener: l, closed: s.closed}); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve %s: %v", socket, err)
		}
	}()
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server and waits for its goroutine; idempotent.
func (s *Server) Stop() {
	s.srv.Stop()
	<-s.served
}

// WaitConnClosed waits until some client connection to s has ended.
func (s *Server) WaitConnClosed(t testing.TB) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no client connection to %s was closed", s.Socket)
	}
}

type trackingListener struct {
	net.Listener
	closed chan struct{}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackingConn{Conn: c, closed: l.closed}, nil
}

type trackingConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *trackingConn) Close() error {
	c.once.Do(func() {
		select {
		case c.closed <- struct{}{}:
		default:
		}
	})
	return c.Conn.Close()
}

// Info is a registration of socket as plugin name's allocation alloc.
func Info(typ, name, alloc, socket string) *dynamic.PluginInfo {
	return &dynamic.PluginInfo{Type: typ, Name: name, AllocID: alloc, ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: socket}}
}
