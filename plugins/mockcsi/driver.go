package main

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/sdk"
	"github.com/pluginhost/pluginhost/sdk/sdkcsi"
)

// version is reported by GetPluginInfo; the release process may override it
// with -ldflags "-X main.version=...".
var version = "0.1.0"

// driver is the state shared by the three CSI services. Each service is its
// own type (identityServer, controllerServer, nodeServer) so that a method
// can never be registered on the wrong service by accident.
type driver struct {
	name     string
	nodeID   string
	capacity int64
	// maxVolumes is the attach limit per node; 0 means none.
	maxVolumes int64
	log        hclog.Logger
	store      *store
	faults     *faults
	calls      *callRecord
	mounter    *mounter
}

func newDriver(opts options, log hclog.Logger, exit func(int)) (*driver, error) {
	if err := validateDriverName(opts.DriverName); err != nil {
		return nil, err
	}
	if opts.NodeID == "" {
		return nil, fmt.Errorf("node ID is empty")
	}
	if opts.Capacity <= 0 {
		return nil, fmt.Errorf("capacity must be positive, got %d", opts.Capacity)
	}
	st, err := openStore(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("open state dir %s: %w", opts.StateDir, err)
	}
	var calls *callRecord
	if opts.RecordCalls {
		if calls, err = openCallRecord(opts.StateDir, log.Named("calls"), st.volumeName); err != nil {
			st.close()
			return nil, err
		}
	}
	m, err := newMounter(opts.MountMethod, log.Named("mount"))
	if err != nil {
		return nil, err
	}
	return &driver{
		name:       opts.DriverName,
		nodeID:     opts.NodeID,
		capacity:   opts.Capacity,
		maxVolumes: opts.MaxVolumes,
		log:        log,
		store:      st,
		faults:     newFaults(opts.Faults, exit),
		calls:      calls,
		mounter:    m,
	}, nil
}

// sdkConfig is what the driver serves: its three services, the call record
// and the fault interceptor. The binary and the in-process tests both start
// from it, so the tests serve exactly what the binary does; callers add
// Endpoint and Logger.
func (d *driver) sdkConfig() sdk.Config {
	interceptors := []grpc.UnaryServerInterceptor{d.faults.intercept}
	if d.calls != nil {
		// Outermost: it sees a call before the faults delay or fail it.
		interceptors = append([]grpc.UnaryServerInterceptor{d.calls.intercept}, interceptors...)
	}
	return sdk.Config{
		Name: "mockcsi",
		CSI: sdkcsi.Services{
			Identity:   &identityServer{d: d},
			Controller: &controllerServer{d: d},
			Node:       &nodeServer{d: d},
		},
		ServerOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(interceptors...)},
	}
}

// close releases the state dir. Only tests that run drivers in-process need
// it; the binary lets process exit release everything.
func (d *driver) close() { d.store.close() }
