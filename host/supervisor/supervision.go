package supervisor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/driver"
)

// health is what the supervision last told the task's event stream.
type health int

const (
	healthUnknown health = iota
	healthHealthy
	healthUnhealthy
	// healthNotYet: failing, and never healthy in this launch.
	healthNotYet
)

// errNotReady is a Probe that answered ready=false: the plugin is still
// starting. While it starts this is expected and not worth an event.
var errNotReady = errors.New("probe answered ready=false")

// supervision watches one launch of a plugin: wait for its socket, probe
// until ready or health_timeout, register, then heartbeat. Its goroutine is
// owned by the supervisor, which cancels it and waits for done.
type supervision struct {
	s    *supervisor
	task driver.Task
	// emit and restartTask are the task runner's (HookRequest.Emit and
	// Restart); the supervision needs nothing else of the request, which
	// the runner rewrites before each launch.
	emit        func(typ, msg string)
	restartTask func(reason string)
	socket      string
	restored    bool
	// conn is the go-plugin connection the client borrows (set by
	// newClient), nil if the client dials its own.
	conn grpc.ClientConnInterface
	// viaDriver: the checker talks over the driver's go-plugin connection,
	// whose handshake proved the socket live (a net/rpc plugin has no conn).
	viaDriver bool
	logger    hclog.Logger

	cancel context.CancelFunc
	done   chan struct{}
	// bg holds slow releases kept off the path to "registered"; run waits
	// for them before it reports done.
	bg sync.WaitGroup

	health health
}

func (sv *supervision) run(ctx context.Context) {
	defer close(sv.done)
	defer sv.bg.Wait()
	// A task that exits ends its supervision at once, before the runner
	// gets to the Exited hook: no probe of a dead plugin, no restart request
	// for a launch that is already over.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-sv.task.Done():
			sv.cancel()
		case <-ctx.Done():
		}
	}()
	defer func() {
		sv.cancel()
		<-watched
	}()

	client, err := sv.newChecker()
	if err != nil {
		sv.restart(ctx, fmt.Sprintf("%s: %v", sv.s.label, err))
		return
	}
	defer client.Close()
	if sv.conn != nil && sv.s.cfg.Conns != nil && !sv.s.generic {
		// Lent before registering: the registration starts the CSI
		// manager's fingerprint, which then uses this connection too.
		defer sv.s.cfg.Conns.Lend(sv.socket, sv.conn)()
	}
	if sv.restored && sv.stillRegistered() {
		// The same process (the driver checked pid and start time)
		// registered before the agent went down, and the registry was
		// restored from the store: nothing to wait for or register. The
		// driver's re-attach probe (go_plugin) or one Probe (raw_exec)
		// says how it is now, then the heartbeat goes on. After a restart
		// of a hundred sdk plugins that is no RPC at all instead of a
		// connection, socket checks and two RPCs each.
		err, known := client.launchHealth(sv.task)
		if !known {
			err = client.probe(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		sv.setHealth(err)
		sv.heartbeat(ctx, client)
		return
	}
	if sv.start(ctx, client) {
		sv.heartbeat(ctx, client)
	}
}

// newChecker returns what the supervision asks the plugin: CSI's identity
// RPCs, or for a generic plugin the gRPC health service over the driver's
// go-plugin connection.
func (sv *supervision) newChecker() (checker, error) {
	if sv.s.generic {
		pt, ok := sv.task.(driver.PluginTask)
		if !ok {
			return nil, errors.New("a generic plugin task must be a go_plugin task")
		}
		sv.viaDriver = true
		hc := &healthChecker{timeout: sv.s.cfg.ProbeTimeout, reg: reattachRegistration(sv.task)}
		switch d := pt.Dispensed().(type) {
		case grpc.ClientConnInterface:
			sv.conn, hc.conn = d, d
		case plugin.ClientProtocol:
			// A net/rpc plugin: the driver's go-plugin client itself.
			hc.rpc = d
		default:
			return nil, fmt.Errorf("go_plugin dispensed %T, want a gRPC connection or a go-plugin net/rpc client", pt.Dispensed())
		}
		return hc, nil
	}
	c, err := sv.newClient()
	if err != nil {
		return nil, err
	}
	return &csiChecker{sv: sv, client: c}, nil
}

// newClient returns the supervision's CSI client. For a go_plugin task it
// borrows the driver's go-plugin connection, which the handshake already
// proved live: one connection per plugin instead of two.
func (sv *supervision) newClient() (*csi.Client, error) {
	cfg := sv.s.cfg
	ccfg := csi.ClientConfig{
		Endpoint: sv.socket, Logger: sv.logger, CallTimeout: cfg.ProbeTimeout,
		// The supervision has its own retry schedule (backoff while
		// starting, the heartbeat after); one attempt per probe keeps a
		// heartbeat's answer about now.
		Retry:    csi.RetryPolicy{MaxAttempts: 1, AttemptTimeout: cfg.ProbeTimeout},
		Observer: cfg.RPCObserver,
		Dial:     cfg.Dial,
	}
	if sv.s.goPlugin {
		if pt, ok := sv.task.(driver.PluginTask); ok {
			if conn, ok := pt.Dispensed().(grpc.ClientConnInterface); ok {
				ccfg.Conn = conn
				sv.conn = conn
			}
		}
	}
	return csi.NewClient(ccfg)
}

// stillRegistered reports whether the registry holds every registration of
// this allocation, at this launch's socket.
func (sv *supervision) stillRegistered() bool {
	s := sv.s
	for _, typ := range s.types {
		info, ok := s.cfg.Registry.ForAlloc(typ, s.plugin.ID, s.allocID)
		if !ok || info.ConnectionInfo == nil || info.ConnectionInfo.SocketPath != sv.socket {
			return false
		}
	}
	return true
}

// start takes the launch from "running" to "registered and healthy". false
// means the supervision is over: ctx ended, or a restart was asked for.
func (sv *supervision) start(ctx context.Context, client checker) bool {
	info, err := sv.waitReady(ctx, client)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		sv.setHealth(err)
		sv.restart(ctx, fmt.Sprintf("%s did not become healthy: health_timeout %s elapsed: %v",
			sv.s.label, sv.s.healthTimeout, err))
		return false
	}
	// The health table has the check that just passed before the
	// registry announces the plugin: whoever follows the registration
	// finds its health too.
	sv.tableHealth(nil)
	if err := sv.register(info); err != nil {
		if errors.Is(err, dynamic.ErrShutdown) || ctx.Err() != nil {
			return false
		}
		sv.restart(ctx, fmt.Sprintf("%s could not be registered: %v", sv.s.label, err))
		return false
	}
	sv.setHealth(nil)
	return true
}

// waitReady waits for the socket (unless the connection is go-plugin's,
// whose handshake proved it live), then probes with a doubling backoff
// until Probe says ready and GetPluginInfo answers, all within
// health_timeout. Its error is the last thing that was wrong.
func (sv *supervision) waitReady(ctx context.Context, client checker) (*registration, error) {
	cfg := sv.s.cfg
	hctx, cancel := context.WithTimeout(ctx, sv.s.healthTimeout)
	defer cancel()
	if sv.conn == nil && !sv.viaDriver {
		release, err := waitForSocket(hctx, sv.socket)
		sv.bg.Go(release)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: %s", errSocketTimeout, sv.socket)
		}
		if err := waitListening(hctx, sv.socket, cfg.ReadyBackoffMax, sv.s.cfg.Dial); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("plugin never accepted connections: %w", err)
		}
		// A raw_exec driver binds with its own umask; the endpoint the
		// agent chose (in the allocation's 0700 socket dir) is made
		// 0600. One a job pointed elsewhere is not the agent's to touch.
		if sv.socket == sv.s.defaultSocket {
			if err := driver.TightenSocket(filepath.Dir(sv.socket), filepath.Base(sv.socket)); err != nil {
				return nil, err
			}
		}
	}
	// The go_plugin driver asked as its identity check, just before the
	// launch was recorded: if that said ready, there is nothing to ask
	// again.
	if reg, ok := client.launchReady(sv.task); ok {
		return reg, nil
	}
	wait := cfg.ReadyBackoffMin
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		reg, err := client.ready(hctx)
		if err == nil {
			return reg, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if last == nil || hctx.Err() == nil {
			// A probe cut short by health_timeout says less than the
			// answer before it.
			last = err
		}
		if !errors.Is(err, errNotReady) && hctx.Err() == nil {
			sv.setHealth(err)
		}
		sv.logger.Debug("plugin not ready", "error", err, "retry_in", wait)
		t.Reset(wait)
		select {
		case <-hctx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, last
		case <-t.C:
		}
		wait = min(2*wait, cfg.ReadyBackoffMax)
	}
}

// check is one readiness check: Probe and GetPluginInfo, which also says
// what to register. Both go out at once (one round trip on the path from
// launch to registration); Probe's answer is judged first.
func (sv *supervision) check(ctx context.Context, client *csi.Client) (*csipb.GetPluginInfoResponse, error) {
	var (
		wg       sync.WaitGroup
		probe    *csipb.ProbeResponse
		probeErr error
		info     *csipb.GetPluginInfoResponse
		infoErr  error
	)
	wg.Go(func() { probe, probeErr = client.Probe(ctx, &csipb.ProbeRequest{}) })
	wg.Go(func() { info, infoErr = client.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{}) })
	wg.Wait()
	return checkResult(probe, probeErr, info, infoErr, sv.socket)
}

// checkResult judges a readiness check's answers, Probe's first.
func checkResult(probe *csipb.ProbeResponse, probeErr error, info *csipb.GetPluginInfoResponse, infoErr error, socket string) (*csipb.GetPluginInfoResponse, error) {
	if err := probeResult(probe, probeErr); err != nil {
		return nil, err
	}
	if infoErr != nil {
		return nil, infoErr
	}
	if info.GetVendorVersion() == "" {
		return nil, fmt.Errorf("GetPluginInfo of %s: empty vendor_version (required by the CSI spec)", socket)
	}
	return info, nil
}

// probe is CSI Probe: an error is unhealthy, ready=false is starting, an
// unset ready means ready (spec).
func (sv *supervision) probe(ctx context.Context, client *csi.Client) error {
	resp, err := client.Probe(ctx, &csipb.ProbeRequest{})
	return probeResult(resp, err)
}

// probeResult judges a Probe answer.
func probeResult(resp *csipb.ProbeResponse, err error) error {
	if err != nil {
		return err
	}
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		return errNotReady
	}
	return nil
}

// register records the plugin under its allocation: csi-node and/or
// csi-controller, named by the job's plugin id. A monolith's two
// registrations are one RegisterAll: both or neither, in one commit.
// Registering again what the restored registry already holds is a no-op
// there.
func (sv *supervision) register(reg *registration) error {
	s := sv.s
	base := &dynamic.PluginInfo{
		Name:           s.plugin.ID,
		Version:        reg.version,
		AllocID:        s.allocID,
		ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: sv.socket},
		Options:        reg.options,
	}
	infos := make([]*dynamic.PluginInfo, 0, len(s.types))
	for _, typ := range s.types {
		p := base.Copy()
		p.Type = typ
		infos = append(infos, p)
	}
	// The registry's error names the types, plugin and allocation.
	if err := s.cfg.Registry.RegisterAll(infos...); err != nil {
		return err
	}
	sv.logger.Info("plugin registered", "types", strings.Join(s.types, ","), "version", base.Version, "restored", sv.restored)
	return nil
}

// tableHealth records a generic plugin's check in the health table, which
// `plugin status` reads; err nil is healthy.
func (sv *supervision) tableHealth(err error) {
	if !sv.s.generic {
		return
	}
	h := Health{Type: sv.s.types[0], Name: sv.s.plugin.ID, AllocID: sv.s.allocID, Healthy: err == nil,
		Description: "healthy", CheckedAt: time.Now()}
	if err != nil {
		h.Description = err.Error()
	}
	sv.s.cfg.Health.set(h)
}

// heartbeat probes every ProbeInterval until the supervision ends. As in
// Nomad, a CSI plugin's failing heartbeat is reported, not acted on: the
// CSI manager fingerprints health on its own and a restart is the job's
// business. A generic plugin has nobody else watching it, so one that stays
// unhealthy for longer than its health_timeout is restarted.
func (sv *supervision) heartbeat(ctx context.Context, client checker) {
	t := time.NewTicker(sv.s.cfg.ProbeInterval)
	defer t.Stop()
	var unhealthySince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := client.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		sv.setHealth(err)
		if !sv.s.generic {
			continue
		}
		switch {
		case err == nil:
			unhealthySince = time.Time{}
		case unhealthySince.IsZero():
			unhealthySince = time.Now()
		case time.Since(unhealthySince) >= sv.s.healthTimeout:
			sv.restart(ctx, fmt.Sprintf("%s unhealthy for longer than health_timeout %s: %v", sv.s.label, sv.s.healthTimeout, err))
			return
		}
	}
}

// setHealth turns a change of health into a task event; err nil is healthy.
func (sv *supervision) setHealth(err error) {
	sv.tableHealth(err)
	if err == nil {
		if sv.health != healthHealthy {
			sv.health = healthHealthy
			sv.emit(EventPluginHealthy, fmt.Sprintf("plugin: %s (%s)", sv.s.plugin.ID, strings.Join(sv.s.types, ", ")))
		}
		return
	}
	switch sv.health {
	case healthHealthy:
		sv.health = healthUnhealthy
		sv.emit(EventPluginUnhealthy, err.Error())
	case healthUnknown:
		// Never healthy: it did not "become" unhealthy, it is not
		// healthy yet, and says why once.
		sv.health = healthNotYet
		sv.emit(EventPluginNotHealthy, err.Error())
	}
}

// restart asks the runner to restart the task unless this launch is over
// already: a request that arrives after the task exited would be kept by
// the runner and kill the next launch.
func (sv *supervision) restart(ctx context.Context, reason string) {
	if ctx.Err() != nil {
		return
	}
	select {
	case <-sv.task.Done():
		return
	default:
	}
	sv.logger.Warn("restarting plugin task", "reason", reason)
	sv.restartTask(reason)
}
