package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/plugins"
	"github.com/pluginhost/pluginhost/host/driver"
)

// registration is what a readiness check learnt that goes into the
// registry besides the supervisor's own fields.
type registration struct {
	version string
	options map[string]string
}

// checker is what a supervision asks its plugin. The supervision's life
// (wait, probe with backoff until health_timeout, register, heartbeat,
// restart) is the same for every plugin; only the questions differ: CSI's
// Probe and GetPluginInfo, or the gRPC health service of any go-plugin
// plugin.
type checker interface {
	// ready is one readiness check.
	ready(ctx context.Context) (*registration, error)
	// probe is one heartbeat: nil is healthy.
	probe(ctx context.Context) error
	// launchReady is the driver's identity check of this launch if it
	// said ready; ok false means ask.
	launchReady(task driver.Task) (reg *registration, ok bool)
	// launchHealth is the health the driver's identity check saw; known
	// false means it saw nothing.
	launchHealth(task driver.Task) (err error, known bool)
	Close() error
}

// csiChecker asks a CSI plugin's Identity service.
type csiChecker struct {
	sv     *supervision
	client *csi.Client
}

func (c *csiChecker) ready(ctx context.Context) (*registration, error) {
	info, err := c.sv.check(ctx, c.client)
	if err != nil {
		return nil, err
	}
	return c.registration(info), nil
}

func (c *csiChecker) registration(info *csipb.GetPluginInfoResponse) *registration {
	s := c.sv.s
	return &registration{version: info.GetVendorVersion(), options: map[string]string{
		"Provider":                        info.GetName(),
		"ProviderVersion":                 info.GetVendorVersion(),
		plugins.OptionMountDir:            s.mountDir,
		plugins.OptionStagePublishBaseDir: s.stageDir,
	}}
}

func (c *csiChecker) probe(ctx context.Context) error { return c.sv.probe(ctx, c.client) }

func (c *csiChecker) launchReady(task driver.Task) (*registration, bool) {
	id := csiLaunchIdentity(task)
	if id == nil {
		return nil, false
	}
	info, err := checkResult(id.Probe, id.ProbeErr, id.Info, nil, c.sv.socket)
	if err != nil {
		return nil, false
	}
	return c.registration(info), true
}

func (c *csiChecker) launchHealth(task driver.Task) (error, bool) {
	if id := csiLaunchIdentity(task); id != nil {
		return probeResult(id.Probe, id.ProbeErr), true
	}
	return nil, false
}

func (c *csiChecker) Close() error { return c.client.Close() }

// csiLaunchIdentity is what the go_plugin driver's CSI identity check
// learnt when it launched or re-attached task; nil for other drivers.
func csiLaunchIdentity(task driver.Task) *driver.CSIIdentity {
	if pt, ok := task.(driver.PluginTask); ok {
		if id, ok := pt.Identity().(*driver.CSIIdentity); ok {
			return id
		}
	}
	return nil
}

// healthChecker asks grpc.health.v1 Check("plugin"), which every go-plugin
// gRPC server answers, or for a net/rpc plugin go-plugin's Control.Ping, over
// the driver's connection (which it does not own: Close leaves it to the
// driver).
type healthChecker struct {
	conn    grpc.ClientConnInterface // gRPC plugins
	rpc     plugin.ClientProtocol    // net/rpc plugins
	timeout time.Duration
	// reg is what every registration of this launch carries: how a
	// consumer re-attaches to it with go-plugin (GET
	// /v1/plugin/TYPE/NAME/reattach).
	reg *registration
}

func (c *healthChecker) ready(ctx context.Context) (*registration, error) {
	if err := c.probe(ctx); err != nil {
		return nil, err
	}
	return c.reg, nil
}

func (c *healthChecker) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.rpc != nil {
		if err := driver.Ping(ctx, c.rpc); err != nil {
			return fmt.Errorf("health check: go-plugin Control.Ping: %w", err)
		}
		return nil
	}
	resp, err := healthpb.NewHealthClient(c.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: driver.HealthService})
	return healthResult(resp.GetStatus(), err)
}

// Registry options of a generic plugin: what go-plugin's ReattachConfig
// needs besides the socket (the registration's SocketPath).
const (
	OptionGoPluginProtocol        = "go-plugin.protocol"
	OptionGoPluginProtocolVersion = "go-plugin.protocol_version"
	OptionGoPluginPid             = "go-plugin.pid"
)

// reattachRegistration is a launch's registration with its go-plugin
// reattach record, from the task's handle.
func reattachRegistration(task driver.Task) *registration {
	h := task.Handle()
	if h == nil || h.Reattach == nil {
		return &registration{}
	}
	return &registration{options: map[string]string{
		OptionGoPluginProtocol:        h.Reattach.Protocol,
		OptionGoPluginProtocolVersion: strconv.Itoa(h.Reattach.ProtocolVersion),
		OptionGoPluginPid:             strconv.Itoa(h.Pid),
	}}
}

// healthResult judges a health answer: only SERVING is healthy.
func healthResult(st healthpb.HealthCheckResponse_ServingStatus, err error) error {
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health check: service %q is %s", driver.HealthService, st)
	}
	return nil
}

func healthLaunchIdentity(task driver.Task) *driver.HealthIdentity {
	if pt, ok := task.(driver.PluginTask); ok {
		if id, ok := pt.Identity().(*driver.HealthIdentity); ok {
			return id
		}
	}
	return nil
}

func (c *healthChecker) launchReady(task driver.Task) (*registration, bool) {
	if id := healthLaunchIdentity(task); id != nil && id.Status == healthpb.HealthCheckResponse_SERVING {
		return c.reg, true
	}
	return nil, false
}

func (c *healthChecker) launchHealth(task driver.Task) (error, bool) {
	if id := healthLaunchIdentity(task); id != nil {
		return healthResult(id.Status, nil), true
	}
	return nil, false
}

func (c *healthChecker) Close() error { return nil }
