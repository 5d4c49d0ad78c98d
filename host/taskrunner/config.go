package taskrunner

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/host/cgroup"
	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/idpool"
	"github.com/pluginhost/pluginhost/host/state"
)

// Store is the part of *state.DB the runners write to. Everything but
// deleting an allocation goes through Update, so that records written
// together are committed (and fsynced) together.
type Store interface {
	Update(fn func(tx *state.Tx) error) error
	DeleteAlloc(allocID string) error
}

// Config is shared by every allocation runner of an agent.
type Config struct {
	// DataDir holds alloc/<id>/ and, when short enough, sockets/<id>/.
	DataDir string
	// SocketRoot overrides where allocation socket directories go.
	SocketRoot string
	Store      Store
	// Drivers by job `driver` name (see driver.Builtin).
	Drivers map[string]driver.Driver
	// LogmonCommand starts a log shipper; default [this binary, "logmon"].
	LogmonCommand []string
	// NsexecCommand starts a task that has volumes, in a mount namespace
	// of its own (package nsexec); default [this binary, "nsexec"].
	NsexecCommand []string
	// ExtraHooks returns more hooks for a task (the CSI supervisor); it
	// may return nil. They run after the built-in hooks.
	ExtraHooks func(req *HookRequest) []Hook
	// AllocHooks returns an allocation's hooks (the volume hook); it may
	// return nil.
	AllocHooks func(req *AllocHookRequest) []AllocHook
	// OnEvent is called (synchronously, keep it short) for every task event
	// once it is stored; for the informational Task Setup, once the
	// runner has it (it is stored with the task's next write).
	OnEvent func(allocID, task string, ev *state.TaskEvent)
	// Metrics, if set, counts task starts, restarts and exits.
	Metrics TaskMetrics

	NodeName string
	// NodeID is ${node.unique.id}: stable for the life of the data dir.
	NodeID     string
	Datacenter string

	// Cgroups makes each launch's control group; nil or disabled runs
	// tasks in the agent's own.
	Cgroups *cgroup.Manager
	// PidsLimit caps the processes and threads of each launch's group
	// (the agent's pids_limit); 0 means no limit.
	PidsLimit int
	// UserAllowed, if set, refuses a task user the agent's config denies
	// (denied_host_uids / denied_host_gids).
	UserAllowed func(u *driver.User) error
	// IDs is the dynamic id range (users { dynamic_user_min/max }): an
	// allocation takes a group and a uid for each exec task without a
	// user when it is prepared, and gives them back when it is
	// destroyed. nil: none, exec tasks run as nobody.
	IDs *idpool.Pool

	// StartTimeout bounds one launch (default 1m).
	StartTimeout time.Duration
	// MaxKillTimeout caps every task's kill_timeout (the agent's
	// max_kill_timeout; 0: no cap).
	MaxKillTimeout time.Duration
	// LogFileSizeOverride replaces the logs block's MB granularity, for
	// tests of rotation; 0 in production.
	LogFileSizeOverride int64
	// Rand draws the restart jitter in [0,n); nil means math/rand/v2.
	Rand func(n int64) int64

	// LogLevel is the agent's log level (trace..error), passed to sdk
	// plugins as PLUGINHOST_LOG_LEVEL; default info.
	LogLevel string
	Logger   hclog.Logger
}

// withDefaults returns a copy with defaults applied: one Config is shared by
// every runner, possibly created concurrently, so it is never written to.
func (c *Config) withDefaults() (*Config, error) {
	if c == nil {
		return nil, errors.New("taskrunner: nil Config")
	}
	cp := *c
	return &cp, cp.validate()
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("taskrunner: DataDir is required")
	}
	if c.Store == nil {
		return errors.New("taskrunner: Store is required")
	}
	if len(c.Drivers) == 0 {
		return errors.New("taskrunner: no drivers")
	}
	if len(c.LogmonCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("taskrunner: locate own binary for logmon: %w", err)
		}
		c.LogmonCommand = []string{exe, "logmon"}
	}
	if len(c.NsexecCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("taskrunner: locate own binary for nsexec: %w", err)
		}
		c.NsexecCommand = []string{exe, "nsexec"}
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = time.Minute
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}
