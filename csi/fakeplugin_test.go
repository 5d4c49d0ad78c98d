package csi

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

// fakePlugin is an in-test CSI driver served over a real unix socket with a
// real gRPC server: the one stand-in these tests allow, with knobs for the
// behaviours real drivers show. Every knob is read under mu at call time,
// so a test may turn them while the plugin is being fingerprinted.
type fakePlugin struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedControllerServer
	csipb.UnimplementedNodeServer

	mu         sync.Mutex
	name       string
	version    string
	pluginCaps []*csipb.PluginCapability
	ctrlCaps   []*csipb.ControllerServiceCapability
	nodeCaps   []*csipb.NodeServiceCapability
	nodeID     string
	ready      *wrapperspb.BoolValue // Probe's ready; nil leaves it unset
	// script[method] is a queue of codes to fail with, one per call,
	// before the method answers normally; always[method] fails every call.
	script map[string][]codes.Code
	always map[string]codes.Code
	// hang[method], when set, makes calls block until the channel is
	// closed or the call's context ends.
	hang  map[string]chan struct{}
	calls map[string]int
	// latency is added to every call (a benchmark's slow plugin).
	latency time.Duration

	// probed receives a value for every Probe call, once the call has read
	// the knobs, if a test wants to wait for them (buffered; sends never
	// block the server).
	probed chan struct{}
	// entered, when set, receives the method name of every call as it
	// arrives (buffered by the test), before any hang.
	entered chan string
}

func newFakePlugin() *fakePlugin {
	return &fakePlugin{
		name:    "fake.csi.example.com",
		version: "1.2.3",
		pluginCaps: []*csipb.PluginCapability{
			svcCap(csipb.PluginCapability_Service_CONTROLLER_SERVICE),
			svcCap(csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		},
		ctrlCaps: []*csipb.ControllerServiceCapability{ctrlCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)},
		nodeCaps: []*csipb.NodeServiceCapability{nodeCap(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)},
		nodeID:   "node-1",
		script:   map[string][]codes.Code{},
		always:   map[string]codes.Code{},
		hang:     map[string]chan struct{}{},
		calls:    map[string]int{},
		probed:   make(chan struct{}, 1024),
	}
}

func svcCap(t csipb.PluginCapability_Service_Type) *csipb.PluginCapability {
	return &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: t}}}
}

func ctrlCap(t csipb.ControllerServiceCapability_RPC_Type) *csipb.ControllerServiceCapability {
	return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}}
}

func nodeCap(t csipb.NodeServiceCapability_RPC_Type) *csipb.NodeServiceCapability {
	return &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}}
}

// set runs f under the plugin's lock.
func (p *fakePlugin) set(f func(p *fakePlugin)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakePlugin) callCount(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

// enter counts the call and applies the failure knobs.
func (p *fakePlugin) enter(ctx context.Context, method string) error {
	p.mu.Lock()
	p.calls[method]++
	hang := p.hang[method]
	latency := p.latency
	if p.entered != nil {
		p.entered <- method
	}
	if method == "Probe" {
		// Signalled once this call's knobs are read: a test that turns a
		// knob on receipt changes the next call, never this one.
		select {
		case p.probed <- struct{}{}:
		default:
		}
	}
	var code codes.Code
	if c, ok := p.always[method]; ok {
		code = c
	} else if q := p.script[method]; len(q) > 0 {
		code, p.script[method] = q[0], q[1:]
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

func (p *fakePlugin) GetPluginInfo(ctx context.Context, _ *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	if err := p.enter(ctx, "GetPluginInfo"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.GetPluginInfoResponse{Name: p.name, VendorVersion: p.version, Manifest: map[string]string{"k": "v"}}, nil
}

func (p *fakePlugin) GetPluginCapabilities(ctx context.Context, _ *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	if err := p.enter(ctx, "GetPluginCapabilities"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: p.pluginCaps}, nil
}

func (p *fakePlugin) Probe(ctx context.Context, _ *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	if err := p.enter(ctx, "Probe"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.ProbeResponse{Ready: p.ready}, nil
}

func (p *fakePlugin) ControllerGetCapabilities(ctx context.Context, _ *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	if err := p.enter(ctx, "ControllerGetCapabilities"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: p.ctrlCaps}, nil
}

func (p *fakePlugin) CreateVolume(ctx context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	if err := p.enter(ctx, "CreateVolume"); err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name required")
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: "vol-" + req.GetName(), CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (p *fakePlugin) DeleteVolume(ctx context.Context, _ *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	if err := p.enter(ctx, "DeleteVolume"); err != nil {
		return nil, err
	}
	return &csipb.DeleteVolumeResponse{}, nil
}

func (p *fakePlugin) NodeGetCapabilities(ctx context.Context, _ *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := p.enter(ctx, "NodeGetCapabilities"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: p.nodeCaps}, nil
}

func (p *fakePlugin) NodeGetInfo(ctx context.Context, _ *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if err := p.enter(ctx, "NodeGetInfo"); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &csipb.NodeGetInfoResponse{
		NodeId:             p.nodeID,
		MaxVolumesPerNode:  16,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{"zone": "z1"}},
	}, nil
}

// fakeServer is a running fakePlugin.
type fakeServer struct {
	socket string
	srv    *grpc.Server
	// closed gets a value each time a client connection to this server
	// ends: how tests see that an instance manager let go of a plugin.
	closed chan struct{}
	served chan struct{}
}

// shortDir returns a fresh directory with a short path: t.TempDir embeds the
// test name and can push a socket past the 107-byte sun_path limit.
func shortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "csit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// serve serves p on socket (a fresh one in a short dir when empty) until
// the test ends or stop is called.
func serve(t testing.TB, p *fakePlugin, socket string) *fakeServer {
	t.Helper()
	if socket == "" {
		socket = filepath.Join(shortDir(t), "csi.sock")
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatalf("listen %s: %v", socket, err)
	}
	s := &fakeServer{socket: socket, srv: grpc.NewServer(), closed: make(chan struct{}, 1024), served: make(chan struct{})}
	csipb.RegisterIdentityServer(s.srv, p)
	csipb.RegisterControllerServer(s.srv, p)
	csipb.RegisterNodeServer(s.srv, p)
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(&trackingListener{Listener: l, closed: s.closed}); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve %s: %v", socket, err)
		}
	}()
	t.Cleanup(s.stop)
	return s
}

// stop stops the server and waits for its goroutine; idempotent.
func (s *fakeServer) stop() {
	s.srv.Stop()
	<-s.served
}

// waitConnClosed waits until some client connection to s has ended.
func (s *fakeServer) waitConnClosed(t testing.TB) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no client connection to %s was closed", s.socket)
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

// testInfo is a registration of socket as plugin name's allocation alloc.
func testInfo(typ, name, alloc, socket string) *dynamic.PluginInfo {
	return &dynamic.PluginInfo{Type: typ, Name: name, AllocID: alloc, ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: socket}}
}
