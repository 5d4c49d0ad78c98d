package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/nsexec"
)

// Exec is Nomad's exec driver: the task runs in a root of its own built
// from the agent's chroot_env, in private pid and ipc namespaces unless
// the job asks for the host's, as its user (nobody unless the job says),
// with Nomad's default capability set adjusted by cap_add and cap_drop.
// Everything is arranged by the namespace helper (package nsexec) before
// the task's binary runs; processes, kills and re-adoption are raw_exec's.
type Exec struct {
	watcher *Watcher
	opts    ExecOptions
}

// ExecOptions are the exec driver's options, from the agent's
// configuration.
type ExecOptions struct {
	// ChrootEnv maps host paths to paths in a task's root (the agent's
	// chroot_env, whose default is Nomad's).
	ChrootEnv map[string]string
	// AllowHostPID and AllowHostIPC let a task share the host's pid or
	// ipc namespace (exec { allow_pid_mode_host, allow_ipc_mode_host }).
	AllowHostPID, AllowHostIPC bool
	// Seccomp starts every task under the default filter (package
	// host/seccomp).
	Seccomp bool
}

// NewExec returns the exec driver.
func NewExec(w *Watcher, o ExecOptions) *Exec {
	o.ChrootEnv = maps.Clone(o.ChrootEnv)
	return &Exec{watcher: w, opts: o}
}

// Name implements Driver.
func (d *Exec) Name() string { return "exec" }

// ModeHost is pid_mode and ipc_mode's "host": the host's namespace.
const ModeHost = "host"

// Start implements Driver.
func (d *Exec) Start(ctx context.Context, req *StartRequest) (Task, error) {
	if req.TaskDir == "" {
		return nil, errors.New("exec: the task has no task directory")
	}
	if req.User == nil {
		return nil, errors.New("exec: the task has no user (the task runner resolves the default, nobody)")
	}
	cfg := req.Exec
	if cfg == nil {
		cfg = &ExecConfig{}
	}
	caps, err := nsexec.CapabilityNumbers(cfg.Caps)
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	// The job was checked at submission; a job recorded before the
	// agent's configuration changed is checked again here.
	if cfg.PIDMode == ModeHost && !d.opts.AllowHostPID {
		return nil, errors.New(`exec: pid_mode = "host" is not allowed by this agent (exec { allow_pid_mode_host = true } in its configuration)`)
	}
	if cfg.IPCMode == ModeHost && !d.opts.AllowHostIPC {
		return nil, errors.New(`exec: ipc_mode = "host" is not allowed by this agent (exec { allow_ipc_mode_host = true } in its configuration)`)
	}
	ns := nsexec.Namespaces{PID: cfg.PIDMode != ModeHost, IPC: cfg.IPCMode != ModeHost}
	spec := &nsexec.Spec{
		Mounts: req.Mounts,
		Root: &nsexec.Root{
			Dir: req.TaskDir, Binds: d.binds(), Alloc: req.SharedDir, WorkDir: req.WorkDir,
		},
		Cred: &nsexec.Cred{UID: req.User.UID, GID: req.User.GID, Groups: req.User.Groups, Caps: caps, KeepCaps: true},
	}
	if d.opts.Seccomp {
		spec.Seccomp = &nsexec.Seccomp{DenyPtrace: !ns.PID}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The command names a file of the task's root; the helper finds it
	// there, after the root is built.
	cmd, report, err := taskCommand(req.Command, req.Args, req, spec, ns)
	if err != nil {
		return nil, err
	}
	cmd.Dir = req.TaskDir
	cmd.Env = append([]string{}, req.Env...)
	cmd.Stdout = req.Stdout
	cmd.Stderr = req.Stderr
	p, err := startTask(cmd, report, req.Cgroup)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", req.Command, err)
	}
	return &rawTask{proc: p, handle: newHandle(d.Name(), p, req.Cgroup)}, nil
}

// binds are chroot_env as mounts, in target order so that a parent is
// mounted before what goes inside it.
func (d *Exec) binds() []nsexec.Mount {
	out := make([]nsexec.Mount, 0, len(d.opts.ChrootEnv))
	for src, dst := range d.opts.ChrootEnv {
		out = append(out, nsexec.Mount{Source: src, Target: dst, ReadOnly: true})
	}
	slices.SortFunc(out, func(a, b nsexec.Mount) int { return strings.Compare(a.Target, b.Target) })
	return out
}

// Recover implements Driver: the task's namespaces live with its
// processes, so re-adopting it is re-adopting its pid.
func (d *Exec) Recover(ctx context.Context, h *Handle, logger hclog.Logger) (Task, error) {
	p, err := adopt(h.Pid, h.StartTime, d.watcher, h.Cgroup)
	if err != nil {
		return nil, err
	}
	hc := *h
	return &rawTask{proc: p, handle: &hc}, nil
}
