package nsexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Spec is everything the helper arranges before it execs the task.
type Spec struct {
	// Mounts are the task's volumes.
	Mounts []Mount `json:"mounts,omitempty"`
	// Root, when set, is the task's own root (the exec driver).
	Root *Root `json:"root,omitempty"`
	// Cred, when set, is the user the task runs as.
	Cred *Cred `json:"cred,omitempty"`
	// TaskDir is the task's directory, which its user may write into:
	// volume targets inside it are made without following a symlink out
	// of it (see bind). An exec task's root is its task directory.
	TaskDir string `json:"taskdir,omitempty"`
	// WorkDir is a raw_exec or go_plugin task's working directory (host
	// path; an exec task's is Root.WorkDir). The helper enters it after
	// it has become the task's user, as the task: a work_dir the task's
	// user reaches through its own link must not be entered as root.
	WorkDir string `json:"workdir,omitempty"`
	// Report, when not 0, is a descriptor the helper writes its reason
	// to when it cannot set the task up ("unsafe: ..." for a refused
	// link, else "error: ..."); it is close-on-exec, so the agent reads
	// end of file once the task's binary runs.
	Report int `json:"report,omitempty"`
	// Seccomp, when set, is the filter the task starts under (package
	// host/seccomp): the exec driver's default, unless the agent's exec
	// block turns it off.
	Seccomp *Seccomp `json:"seccomp,omitempty"`
}

// Seccomp is the task's seccomp policy.
type Seccomp struct {
	// DenyPtrace refuses ptrace and process_vm_*: the task shares the
	// host's pid namespace, where it sees processes that are not its own.
	DenyPtrace bool `json:"denyptrace,omitempty"`
}

// Mount is one bind mount into a task's namespace.
type Mount struct {
	// Source is the host path the volume was published at.
	Source string `json:"src"`
	// Target is the absolute path the task sees it at.
	Target   string `json:"dst"`
	ReadOnly bool   `json:"ro,omitempty"`
	// File marks a block-device attachment: the target is a file.
	File bool `json:"file,omitempty"`
}

// Root is an exec task's root directory and what goes into it.
type Root struct {
	// Dir is the host path that becomes "/" (the task directory).
	Dir string `json:"dir"`
	// Binds are made read-only inside Dir (the agent's chroot_env):
	// Source on the host, Target inside the root.
	Binds []Mount `json:"binds,omitempty"`
	// Alloc is the allocation's shared directory, bound read-write at
	// /alloc.
	Alloc string `json:"alloc,omitempty"`
	// WorkDir is the working directory inside the root ("" means "/").
	WorkDir string `json:"workdir,omitempty"`
}

// Cred is the user a task runs as.
type Cred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
	// Caps, when not nil, is the task's whole capability set (numbers,
	// see CapabilityNumber), kept across the change of user; nil means a
	// plain change of user that keeps none.
	Caps []int `json:"caps,omitempty"`
	// KeepCaps says Caps is meaningful even when empty (cap_drop = ["all"]).
	KeepCaps bool `json:"keepcaps,omitempty"`
}

// Paths the exec driver gives every task, as Nomad's chrooted drivers do.
const (
	AllocDir   = "/alloc"
	LocalDir   = "/local"
	SecretsDir = "/secrets"
)

// Check refuses a spec the helper could only fail on later, inside the
// task's launch, where the error is harder to read.
func (s *Spec) Check() error {
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
			return fmt.Errorf("mount %q at %q: both paths must be absolute", m.Source, m.Target)
		}
		if filepath.Clean(m.Target) == "/" {
			return fmt.Errorf("mount %q: cannot mount over /", m.Source)
		}
	}
	if r := s.Root; r != nil {
		if !filepath.IsAbs(r.Dir) || filepath.Clean(r.Dir) == "/" {
			return fmt.Errorf("task root %q: must be an absolute directory other than /", r.Dir)
		}
		for _, b := range r.Binds {
			if !filepath.IsAbs(b.Source) || !filepath.IsAbs(b.Target) || filepath.Clean(b.Target) == "/" {
				return fmt.Errorf("chroot_env %q => %q: both paths must be absolute, and the target not /", b.Source, b.Target)
			}
		}
	}
	return nil
}

// Needed reports whether a task with this spec must start through the
// helper; a spec with only a plain user change does not (the driver sets
// the credential itself).
func (s *Spec) Needed() bool {
	return len(s.Mounts) > 0 || s.Root != nil || s.Seccomp != nil || (s.Cred != nil && (s.Cred.Caps != nil || s.Cred.KeepCaps))
}

// Argv is the helper's command line: helper (the helper binary and its
// leading arguments), the spec, then the task's binary and its argv[1:].
func Argv(helper []string, s *Spec, path string, args []string) ([]string, error) {
	if len(helper) == 0 {
		return nil, errors.New("nsexec: no helper command")
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("nsexec: encoding spec: %w", err)
	}
	argv := append([]string{}, helper...)
	argv = append(argv, string(b), path)
	return append(argv, args...), nil
}

// Namespaces are the clone flags a task gets besides its mount namespace.
type Namespaces struct {
	PID, IPC bool
}

// SysProcAttr adds what the helper's process needs: a new mount namespace,
// and the pid and ipc namespaces asked for.
func SysProcAttr(a *syscall.SysProcAttr, ns Namespaces) {
	a.Cloneflags |= unix.CLONE_NEWNS
	if ns.PID {
		a.Cloneflags |= unix.CLONE_NEWPID
	}
	if ns.IPC {
		a.Cloneflags |= unix.CLONE_NEWIPC
	}
}

// inRoot is p inside root, p being absolute in the task's view.
func inRoot(root, p string) string {
	return filepath.Join(root, strings.TrimPrefix(filepath.Clean(p), "/"))
}

// inside reports whether p is dir or below it.
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
