package dynamic

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Plugin types known to pluginhost. The registry itself accepts any non-empty
// type string; these are the ones the CSI manager follows.
const (
	PluginTypeCSIController = "csi-controller"
	PluginTypeCSINode       = "csi-node"
)

// PluginInfo describes one registered allocation of a plugin. The triple
// (Type, Name, AllocID) identifies it.
type PluginInfo struct {
	Type    string
	Name    string
	Version string
	AllocID string

	// ConnectionInfo says how to reach the plugin.
	ConnectionInfo *ConnectionInfo

	// Options is free-form data for the plugin type's consumer (for CSI: the
	// mount dirs the supervisor chose).
	Options map[string]string

	// Seq orders registrations: among the allocations of one (Type, Name) the
	// one with the highest Seq is active. The registry assigns it; callers of
	// Register leave it zero. It is persisted so that a restored registry
	// picks the same active instance.
	Seq uint64

	// RegisteredAt is when this allocation was first registered.
	RegisteredAt time.Time
}

// ConnectionInfo says how to reach a plugin instance: almost always a unix
// socket; a go-plugin plugin that serves TCP instead (go-plugin's Python
// example listens on 127.0.0.1:1234) has TCPPrefix and a loopback address.
type ConnectionInfo struct {
	// SocketPath is the absolute path of the plugin's unix socket, or
	// "tcp://HOST:PORT" with a loopback HOST.
	SocketPath string
}

// TCPPrefix marks a ConnectionInfo.SocketPath that is a TCP address.
const TCPPrefix = "tcp://"

// validTCP checks a "tcp://HOST:PORT" socket: a plugin on this machine is
// reached on loopback, never elsewhere.
func validTCP(s string) error {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(s, TCPPrefix))
	if err != nil {
		return fmt.Errorf("%w: ConnectionInfo.SocketPath %q: %w", ErrInvalid, s, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return fmt.Errorf("%w: ConnectionInfo.SocketPath %q is not a loopback address", ErrInvalid, s)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("%w: ConnectionInfo.SocketPath %q has no port", ErrInvalid, s)
	}
	return nil
}

// Copy returns a deep copy, so that callers can never mutate registry state.
func (p *PluginInfo) Copy() *PluginInfo {
	if p == nil {
		return nil
	}
	c := *p
	if p.ConnectionInfo != nil {
		ci := *p.ConnectionInfo
		c.ConnectionInfo = &ci
	}
	c.Options = maps.Clone(p.Options)
	return &c
}

// MaxSocketPathLen is the longest unix socket path Linux can bind or dial:
// sun_path holds 108 bytes including the terminating NUL. Nomad never checks
// it, so a long data_dir surfaces as an unexplained dial timeout; the
// registry refuses such a socket at Register time instead. This is the one
// definition of the limit for the agent's packages (csi, config, api, task
// runner); the sdk, which imports none of them, keeps its own copy.
const MaxSocketPathLen = 107

// ErrInvalid is wrapped by every validation error, so callers can tell bad
// input from a failing store.
var ErrInvalid = errors.New("invalid plugin info")

// Validate reports the first missing or malformed field by name. Seq and
// RegisteredAt are not checked: the registry owns them.
func (p *PluginInfo) Validate() error {
	switch {
	case p == nil:
		return fmt.Errorf("%w: nil", ErrInvalid)
	case p.Type == "":
		return fmt.Errorf("%w: missing Type", ErrInvalid)
	case p.Name == "":
		return fmt.Errorf("%w: missing Name", ErrInvalid)
	case p.AllocID == "":
		return fmt.Errorf("%w: missing AllocID", ErrInvalid)
	case p.ConnectionInfo == nil:
		return fmt.Errorf("%w: missing ConnectionInfo", ErrInvalid)
	case p.ConnectionInfo.SocketPath == "":
		return fmt.Errorf("%w: missing ConnectionInfo.SocketPath", ErrInvalid)
	case strings.HasPrefix(p.ConnectionInfo.SocketPath, TCPPrefix):
		return validTCP(p.ConnectionInfo.SocketPath)
	case !filepath.IsAbs(p.ConnectionInfo.SocketPath):
		return fmt.Errorf("%w: ConnectionInfo.SocketPath %q is not absolute", ErrInvalid, p.ConnectionInfo.SocketPath)
	case len(p.ConnectionInfo.SocketPath) > MaxSocketPathLen:
		return fmt.Errorf("%w: ConnectionInfo.SocketPath is %d bytes, over the %d-byte unix socket limit: %q",
			ErrInvalid, len(p.ConnectionInfo.SocketPath), MaxSocketPathLen, p.ConnectionInfo.SocketPath)
	}
	return nil
}

// sameRegistration reports whether b would change nothing if it replaced a:
// every caller-supplied field is equal. Seq and RegisteredAt are the
// registry's and do not count.
func sameRegistration(a, b *PluginInfo) bool {
	if a.Type != b.Type || a.Name != b.Name || a.AllocID != b.AllocID || a.Version != b.Version {
		return false
	}
	if (a.ConnectionInfo == nil) != (b.ConnectionInfo == nil) {
		return false
	}
	if a.ConnectionInfo != nil && *a.ConnectionInfo != *b.ConnectionInfo {
		return false
	}
	// A nil and an empty map mean the same thing to every consumer.
	return maps.Equal(a.Options, b.Options)
}

// Store is where the registry persists itself. Every method is called with the
// registry's write lock held and before Register/Deregister returns, so an
// implementation must be durable when it returns and must cost the same
// whatever the number of stored plugins (write one record, not the whole set).
type Store interface {
	// PutPlugins inserts or replaces the records keyed by (Type, Name,
	// AllocID): all of them in one durable step, or none. The records are
	// the registry's own: read them, never keep or modify them.
	PutPlugins(infos ...*PluginInfo) error
	// DeletePlugin removes one record; deleting a missing record is not an error.
	DeletePlugin(pluginType, name, allocID string) error
	// Plugins returns every stored record, in any order. The records must
	// be fresh values: the registry keeps them without copying, so that
	// restoring 100,000 plugins does not copy each one twice.
	Plugins() ([]*PluginInfo, error)
}
