package driver

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/nsexec"
)

// Errors a caller can tell apart with errors.Is.
var (
	// ErrTaskGone means the recorded process no longer exists.
	ErrTaskGone = errors.New("task process is gone")
	// ErrPidReused means the recorded pid now belongs to another process
	// (its start time differs); that process must never be signalled.
	ErrPidReused = errors.New("pid belongs to another process")
	// ErrChecksumMismatch means the binary is not the one the job names.
	ErrChecksumMismatch = errors.New("checksum mismatch")
)

// Driver starts tasks and re-adopts the ones a previous agent started.
type Driver interface {
	// Name is the job file's `driver` value.
	Name() string
	// Start launches a task. It returns once the task is running (for
	// go_plugin: once the handshake and the identity RPC succeeded).
	Start(ctx context.Context, req *StartRequest) (Task, error)
	// Recover re-adopts a task from its saved handle. It fails with
	// ErrTaskGone or ErrPidReused (wrapped) when there is nothing to adopt.
	Recover(ctx context.Context, h *Handle, logger hclog.Logger) (Task, error)
}

// StartRequest is everything a driver needs to launch one task.
type StartRequest struct {
	AllocID  string
	TaskName string

	// Command is the program; a bare name is resolved against the PATH in
	// Env, then against the agent's PATH.
	Command string
	Args    []string
	WorkDir string
	// Env is the task's complete environment ("K=V"); nothing of the
	// agent's own environment is added.
	Env []string
	// Checksum is an optional "sha256:<hex>" the binary must match.
	Checksum string

	// SocketDir is the allocation's socket directory (0700); go_plugin
	// creates the plugin's socket directory inside it.
	SocketDir string

	// Mounts are the task's volumes, bound into a mount namespace of its
	// own before its binary runs, by the MountHelper command (package
	// nsexec), which also builds an exec task's root.
	Mounts      []nsexec.Mount
	MountHelper []string

	// Cgroup is the task's control group, made for this launch; nil leaves
	// the task in the agent's (cgroups not usable on this machine).
	Cgroup Cgroup
	// User is who the task runs as; nil means the agent's user.
	User *User
	// TaskDir and SharedDir are the task's directory and the allocation's
	// shared one: the exec driver's / and /alloc.
	TaskDir, SharedDir string
	// Exec is the exec driver's part of the task's config.
	Exec *ExecConfig

	// Plugin describes a go_plugin task that is not an sdk CSI plugin;
	// nil means the driver's configured (CSI) handshake and identity check.
	Plugin *PluginSpec

	// Stdout and Stderr receive the task's output (the log shipper's pipes).
	// The driver passes them to the child; the caller closes its copies.
	Stdout, Stderr *os.File

	Logger hclog.Logger
}

// Handle is the serialisable record of a running task: enough for another
// agent process to find it again and to prove that it is the same process.
type Handle struct {
	Driver string
	Pid    int
	// StartTime is the process start time in clock ticks since boot, field
	// 22 of /proc/<pid>/stat: with the pid it names one process for the
	// life of the machine.
	StartTime uint64
	// SocketPath is the go_plugin server's socket ("" for raw_exec).
	SocketPath string
	Reattach   *ReattachRecord
	// CgroupPath names the task's control group ("" for none), so that a
	// restarted agent finds it again.
	CgroupPath string

	// Cgroup is the group CgroupPath names, opened by the task runner
	// before Recover (like Plugin, not saved).
	Cgroup Cgroup

	// Plugin is StartRequest.Plugin. It comes from the job, not from the
	// saved record: the task runner sets it before Recover, which needs it
	// to re-attach with the right plugin set and identity check.
	Plugin *PluginSpec
	// SocketDir is StartRequest.SocketDir, set like Plugin (not saved):
	// a go_plugin task is reattached only to a socket of its own there.
	SocketDir string `json:"-"`
}

// PluginSpec is how go_plugin launches a plugin that is not an sdk CSI
// plugin: any gRPC go-plugin plugin, identified by the job's handshake and
// checked with the standard gRPC health service instead of CSI's identity
// RPCs.
type PluginSpec struct {
	// MagicCookieKey and MagicCookieValue are go-plugin's handshake
	// cookie; an empty key means the driver's own (the sdk's handshake).
	MagicCookieKey   string
	MagicCookieValue string
	// ProtocolVersions are offered to the plugin; it picks one it speaks.
	ProtocolVersions []int
	// Dispense is the name the plugin is dispensed under on the host side
	// (over gRPC it never reaches the plugin); the job's plugin type.
	Dispense string
}

// ReattachRecord is go-plugin's ReattachConfig in a form that survives JSON
// (go-plugin's own holds a net.Addr interface).
type ReattachRecord struct {
	Protocol        string
	ProtocolVersion int
	Network         string
	Addr            string
	Pid             int
}

// ExitResult is how a task ended.
type ExitResult struct {
	ExitCode int
	// Signal is the signal that killed the task, 0 if it exited.
	Signal int
	// Unknown is set when the task was not our child (re-adopted after an
	// agent restart): the kernel gives its exit status to its new parent.
	Unknown bool
	// OOMKilled is set when the kernel's OOM killer killed a process of
	// the task's cgroup during this launch (known for re-adopted tasks
	// too: the cgroup counts it).
	OOMKilled bool
	// SetupErr is why the namespace helper could not set the task up
	// (a link the task planted in its root, a command not found): the
	// task's binary never ran. It matches beneath.ErrUnsafe for a
	// refused link, which no restart can fix.
	SetupErr error
}

// User is a task's resolved user.
type User struct {
	Name     string
	UID, GID uint32
	Groups   []uint32
	Home     string
}

// ExecConfig is the exec driver's part of a task's config.
type ExecConfig struct {
	// PIDMode and IPCMode are "private" (a namespace of the task's own)
	// or "host".
	PIDMode, IPCMode string
	// Caps is the task's whole capability set ("CAP_CHOWN", ...), cap_add
	// and cap_drop applied (jobspec.ExecCapabilities).
	Caps []string
}

// Cgroup is a task's control group as the drivers use it (package
// cgroup's Group implements it). A process joins it before it runs any
// code of its own: through clone3 into the group's directory on cgroup
// v2; on v1 it is forked by a thread that has entered the group (a
// cgroup.Group's EnterThread) or, if the thread cannot, written into the
// group while it is stopped at its first exec (startInCgroup).
type Cgroup interface {
	// Path names the group; it is saved in the task's handle.
	Path() string
	// CloneFD returns a cgroup v2 directory to clone the task into; ok is
	// false on v1, where the forking thread enters the group or AddPid is
	// used instead. The caller closes fd.
	CloneFD() (fd int, ok bool, err error)
	// AddPid moves pid into the group (cgroup v1).
	AddPid(pid int) error
	// Kill SIGKILLs every process in the group and returns once it is
	// empty or ctx ends.
	Kill(ctx context.Context) error
	// OOMKills is how many processes the OOM killer killed in the group.
	OOMKills() (uint64, error)
	// Pids lists the processes in the group.
	Pids() ([]int, error)
}

// Successful reports a clean exit.
func (r *ExitResult) Successful() bool {
	return r != nil && !r.Unknown && r.ExitCode == 0 && r.Signal == 0 && r.SetupErr == nil
}

// Task is a running task.
type Task interface {
	Handle() *Handle
	// Done is closed when the process has exited.
	Done() <-chan struct{}
	// Result is valid once Done is closed.
	Result() *ExitResult
	// Signal sends sig to the task's process group.
	Signal(sig syscall.Signal) error
	// Kill sends sig to the process group, then SIGKILL after timeout, and
	// returns once the process has exited or ctx ends.
	Kill(ctx context.Context, sig syscall.Signal, timeout time.Duration) error
	// Detach releases the agent's resources without stopping the task, as
	// the agent does when it shuts down or restarts.
	Detach()
}

// PluginTask is a Task launched through go-plugin.
type PluginTask interface {
	Task
	// Dispensed is what dispensing the plugin returned (for the sdk's "csi"
	// plugin: a *grpc.ClientConn).
	Dispensed() any
	// Identity is what the driver's identity check returned when the
	// plugin was launched or re-attached (for CSI: a *CSIIdentity).
	Identity() any
}
