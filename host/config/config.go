package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pluginhost/pluginhost/dynamic"
)

// Defaults for keys left out of the file.
const (
	DefaultLogLevel            = "info"
	DefaultDatacenter          = "dc1"
	DefaultFingerprintInterval = 30 * time.Second
	DefaultProbeTimeout        = 5 * time.Second
	// DefaultVolumeMountTimeout: a plugin restarting within its own
	// health_timeout (30s) still makes it.
	DefaultVolumeMountTimeout = 2 * time.Minute
	// DefaultMaxKillTimeout is Nomad's client max_kill_timeout default.
	DefaultMaxKillTimeout = 30 * time.Second
)

// Unix socket path budget. Linux's sun_path holds 108 bytes including the
// terminating NUL. Nomad never checks and fails with dial timeouts once
// data_dir passes ~42 characters; pluginhost refuses such paths up front.
const (
	MaxSocketPathLen = dynamic.MaxSocketPathLen
	// MaxSocketDirLen leaves room under the socket dir for
	// "/<36-byte allocation ID>/t<task index>" and go-plugin's
	// "/plugin-dir<digits>/plugin<digits>" (taskrunner.SocketBudget).
	MaxSocketDirLen = 26
)

// Config is the agent configuration. Fields hold final values after
// ParseFile (defaults applied, paths absolute); the two values that depend on
// DataDir, the API address and the plugin socket dir, are computed by
// methods so that a Dev config gets them once its caller picks a DataDir.
type Config struct {
	// DataDir holds state, allocation dirs and (by default) sockets.
	DataDir string
	// LogLevel is one of trace, debug, info, warn, error (lowercase).
	LogLevel string
	// LogJSON switches the agent's log output to JSON lines.
	LogJSON bool
	// Addr is where the HTTP API listens as written: "" (the default
	// address, host/api.DefaultAddr), "unix:///abs/path.sock", or a
	// loopback "host:port".
	// Use APIListenAddr rather than reading it.
	Addr string
	// EnableDebug serves Go's profiler at /debug/pprof/ on the API, as
	// Nomad's enable_debug does. Off by default; on with -dev.
	EnableDebug bool
	// NodeName defaults to the hostname.
	NodeName string
	// Datacenter is this node's datacenter, matched against job
	// datacenters.
	Datacenter string
	// Jobs are job files to run at start, absolute.
	Jobs []string
	CSI  CSIConfig
	// Plugin configures plugin launching.
	Plugin PluginConfig
	// GC configures the garbage collection of terminal allocations.
	GC GCConfig
	// ACL holds the API's tokens when the config sets them.
	ACL ACLConfig
	// Containment holds chroot_env, denied_host_uids, denied_host_gids,
	// cgroup_parent and pids_limit (containment.go).
	Containment ContainmentConfig
	// MaxKillTimeout is max_kill_timeout, Nomad's client key: a task's
	// kill_timeout is capped at it, so that a job that asks for 87600h
	// can still be stopped.
	MaxKillTimeout time.Duration

	// DevMode is set by Dev: no config file, throwaway data dir.
	DevMode bool
	// SourcePath is the absolute path of the config file, "" for Dev.
	SourcePath string
}

// CSIConfig is the `csi` block.
type CSIConfig struct {
	// FingerprintInterval is how often each CSI plugin is probed and
	// fingerprinted once healthy.
	FingerprintInterval time.Duration
	// ProbeTimeout bounds each Probe and fingerprint RPC.
	ProbeTimeout time.Duration
	// VolumeMountTimeout bounds how long an allocation waits for its
	// volumes to be mounted (its plugin to become healthy, the CSI calls)
	// before it fails.
	VolumeMountTimeout time.Duration
}

// GCConfig is the garbage collection of terminal allocations, with the
// names and defaults of Nomad's client (gc_interval, gc_max_allocs,
// gc_disk_usage_threshold, gc_inode_usage_threshold).
type GCConfig struct {
	// Interval is how often terminal allocations are looked at.
	Interval time.Duration
	// MaxAllocs: past this many allocations, the oldest collectable ones go.
	MaxAllocs int
	// DiskUsageThreshold and InodeUsageThreshold are percentages of the
	// data dir's file system past which collectable allocations go.
	DiskUsageThreshold  float64
	InodeUsageThreshold float64
}

// Nomad's client GC defaults.
const (
	DefaultGCInterval            = time.Minute
	DefaultGCMaxAllocs           = 50
	DefaultGCDiskUsageThreshold  = 80
	DefaultGCInodeUsageThreshold = 70
)

// ACLConfig is the `acl` block: the API's tokens. A token left out is
// generated at the agent's first start and kept in the data dir; a token set
// here wins over it and cannot be rotated through the API.
type ACLConfig struct {
	// ManagementToken may do everything on the TCP listener.
	ManagementToken string
	// ReadToken may only GET (scrapers, dashboards).
	ReadToken string
}

// Token length bounds, as host/api.CheckToken has them.
const (
	MinTokenLen = 16
	MaxTokenLen = 512
)

// checkToken: 16 to 512 printable ASCII characters without spaces.
func checkToken(s string) error {
	if len(s) < MinTokenLen || len(s) > MaxTokenLen {
		return fmt.Errorf("must be %d to %d characters long, got %d", MinTokenLen, MaxTokenLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return fmt.Errorf("may hold only printable ASCII without spaces (character %d is not)", i+1)
		}
	}
	return nil
}

// PluginConfig is the `plugin` block.
type PluginConfig struct {
	// SocketDir is the root for plugin sockets as written ("" = default);
	// use Config.PluginSocketDir.
	SocketDir string
}

// Dev returns the configuration of `agent -dev`. DataDir is empty: the
// caller creates a temporary directory, sets DataDir and removes it on exit.
func Dev() *Config {
	return &Config{
		LogLevel:   DefaultLogLevel,
		NodeName:   defaultNodeName(),
		Datacenter: DefaultDatacenter,
		CSI: CSIConfig{
			FingerprintInterval: DefaultFingerprintInterval,
			ProbeTimeout:        DefaultProbeTimeout,
			VolumeMountTimeout:  DefaultVolumeMountTimeout,
		},
		GC: GCConfig{
			Interval: DefaultGCInterval, MaxAllocs: DefaultGCMaxAllocs,
			DiskUsageThreshold: DefaultGCDiskUsageThreshold, InodeUsageThreshold: DefaultGCInodeUsageThreshold,
		},
		Containment:    defaultContainment(),
		MaxKillTimeout: DefaultMaxKillTimeout,
		// Nomad's -dev turns enable_debug on too.
		EnableDebug: true,
		DevMode:     true,
	}
}

func defaultNodeName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// APIListenAddr returns the network ("unix" or "tcp") and address the HTTP
// API listens on, or "", "" without addr: then the agent listens on the
// well-known default address (host/api.DefaultAddr), the same for every
// agent of a user, so that the CLI finds it with no configuration. It is
// not derived from data_dir on purpose: the CLI has no config file to read
// a data dir from.
func (c *Config) APIListenAddr() (network, address string, err error) {
	if c.Addr == "" {
		return "", "", nil
	}
	network, address, err = parseAddr(c.Addr)
	if err != nil {
		return "", "", fmt.Errorf("api address: %w", err)
	}
	return network, address, nil
}

// Validate checks a Config assembled in code (Dev plus a DataDir, or a test's
// literal). ParseFile already reports the same problems with file locations.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir is required"))
	} else if !filepath.IsAbs(c.DataDir) {
		errs = append(errs, fmt.Errorf("data_dir %q must be absolute", c.DataDir))
	}
	if err := checkLogLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("log_level: %w", err))
	}
	if _, _, err := c.APIListenAddr(); err != nil {
		errs = append(errs, err)
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("node_name must not be empty"))
	}
	if c.Datacenter == "" {
		errs = append(errs, errors.New("datacenter must not be empty"))
	}
	if c.CSI.FingerprintInterval < time.Second {
		errs = append(errs, fmt.Errorf("csi.fingerprint_interval %s is below 1s", c.CSI.FingerprintInterval))
	}
	if c.CSI.ProbeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("csi.probe_timeout %s must be positive", c.CSI.ProbeTimeout))
	}
	if err := checkSocketDir(c.Plugin.SocketDir); c.Plugin.SocketDir != "" && err != nil {
		errs = append(errs, fmt.Errorf("plugin.socket_dir: %w", err))
	}
	for _, t := range []struct{ name, v string }{{"acl.management_token", c.ACL.ManagementToken}, {"acl.read_token", c.ACL.ReadToken}} {
		if err := checkToken(t.v); t.v != "" && err != nil {
			errs = append(errs, fmt.Errorf("%s %w", t.name, err))
		}
	}
	if c.ACL.ManagementToken != "" && c.ACL.ManagementToken == c.ACL.ReadToken {
		errs = append(errs, errors.New("acl.management_token and acl.read_token must differ"))
	}
	errs = append(errs, c.Containment.validate()...)
	for _, j := range c.Jobs {
		if !filepath.IsAbs(j) {
			errs = append(errs, fmt.Errorf("job file %q must be absolute", j))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid agent config: %w", err)
	}
	return nil
}

// LogLevels lists the accepted log_level values, most verbose first.
func LogLevels() []string { return []string{"trace", "debug", "info", "warn", "error"} }

func checkLogLevel(s string) error {
	levels := LogLevels()
	for _, l := range levels {
		if s == l {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(levels, ", "))
}

func checkSocketPath(p string) error {
	if len(p) > MaxSocketPathLen {
		return fmt.Errorf("socket path %q is %d bytes, over the %d-byte unix socket limit", p, len(p), MaxSocketPathLen)
	}
	return nil
}

func checkSocketDir(p string) error {
	switch {
	case !filepath.IsAbs(p):
		return fmt.Errorf("%q must be absolute", p)
	case len(p) > MaxSocketDirLen:
		return fmt.Errorf("%q is %d bytes; at most %d leave room for socket names under the 107-byte unix socket limit", p, len(p), MaxSocketDirLen)
	}
	return nil
}
