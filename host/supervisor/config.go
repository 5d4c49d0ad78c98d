package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/dynamic"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// Defaults of Config.
const (
	// DefaultProbeInterval is the heartbeat once a plugin is registered,
	// as in Nomad: the heartbeat only feeds task events, so it need not be
	// tight (the CSI manager fingerprints on its own schedule).
	DefaultProbeInterval = 30 * time.Second
	// DefaultProbeTimeout bounds one Probe or GetPluginInfo call.
	DefaultProbeTimeout = 10 * time.Second
	// DefaultReadyBackoffMin and DefaultReadyBackoffMax bound the wait
	// between probes while a plugin starts. Nomad waits a flat 5s; a plugin
	// that is ready a few milliseconds after its socket appears should be
	// registered a few milliseconds later, and one that takes longer should
	// not be hammered.
	DefaultReadyBackoffMin = 5 * time.Millisecond
	DefaultReadyBackoffMax = time.Second
)

// Config configures the supervisor. One Config serves every task of an agent.
type Config struct {
	// Registry is where healthy plugins are registered. Required.
	Registry *dynamic.Registry
	// MountRoot is <data_dir>/csi: each plugin gets <MountRoot>/<type>/<id>
	// for staging and publish dirs. Required, absolute.
	MountRoot string
	// EnsureMountRoot, if set, is called before a plugin's directories
	// are made under MountRoot: the agent makes the root a shared mount
	// then, so that an agent that never serves CSI never mounts it.
	EnsureMountRoot func() error
	// Logger is the parent logger; the supervisor logs as "csi_plugin",
	// or "<type>_plugin" for a plugin of another type.
	// Nil discards.
	Logger hclog.Logger

	// ProbeInterval is the heartbeat once registered (DefaultProbeInterval).
	ProbeInterval time.Duration
	// ProbeTimeout bounds each Probe and GetPluginInfo (DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// ReadyBackoffMin and ReadyBackoffMax bound the doubling wait between
	// probes until the plugin is ready (DefaultReadyBackoffMin/Max).
	ReadyBackoffMin time.Duration
	ReadyBackoffMax time.Duration

	// Conns, if set, is lent each go_plugin task's go-plugin connection
	// for as long as the supervision runs (the agent passes its
	// plugins.Manager, whose first fingerprint then needs no dial). Optional.
	Conns ConnLender
	// RPCObserver, if set, is told about every Probe and GetPluginInfo
	// the supervision makes (the agent's metrics).
	RPCObserver csi.RPCObserver
	// Dial, if set, is how the supervisor connects to a plugin's socket
	// (csi.ClientConfig.Dial) and checks that something listens there.
	Dial func(ctx context.Context, socket string) (net.Conn, error)
	// Health, if set, is kept up to date with every generic plugin
	// allocation's latest health check (CSI plugins' health is the CSI
	// manager's fingerprint). Optional.
	Health *HealthTable
}

// ConnLender takes open connections to plugin sockets on loan; withdraw
// ends the loan. *plugins.Manager is one.
type ConnLender interface {
	Lend(socket string, conn grpc.ClientConnInterface) (withdraw func())
}

func (c Config) withDefaults() (Config, error) {
	if c.Registry == nil {
		return c, errors.New("supervisor: Config.Registry is required")
	}
	if c.MountRoot == "" || !filepath.IsAbs(c.MountRoot) {
		return c, fmt.Errorf("supervisor: Config.MountRoot must be an absolute path, got %q", c.MountRoot)
	}
	c.MountRoot = filepath.Clean(c.MountRoot)
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.ReadyBackoffMin <= 0 {
		c.ReadyBackoffMin = DefaultReadyBackoffMin
	}
	if c.ReadyBackoffMax <= 0 {
		c.ReadyBackoffMax = DefaultReadyBackoffMax
	}
	c.ReadyBackoffMax = max(c.ReadyBackoffMax, c.ReadyBackoffMin)
	return c, nil
}

// NewHook checks cfg and returns the function the agent sets as
// taskrunner.Config.ExtraHooks: it gives every task with a csi_plugin block,
// and every go_plugin task whose config declares a plugin of another type,
// its own supervisor hook, and every other task nothing.
func NewHook(cfg Config) (func(req *taskrunner.HookRequest) []taskrunner.Hook, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	csiLogger := c.Logger.Named("csi_plugin")
	return func(req *taskrunner.HookRequest) []taskrunner.Hook {
		if req == nil || req.Task == nil {
			return nil
		}
		t := req.Task
		logger := csiLogger
		if t.CSIPluginConfig == nil {
			gp := t.GenericPlugin()
			if gp == nil {
				return nil
			}
			// Named by what it supervises: a kv plugin's lines read
			// "pluginhost.kv_plugin", not "csi_plugin". The type's
			// alphabet (a-z, 0-9, '_', '-') adds no "." level.
			logger = c.Logger.Named(gp.Type + "_plugin")
		}
		return []taskrunner.Hook{newSupervisor(&c, req, logger)}
	}, nil
}
