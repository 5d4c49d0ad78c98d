package driver

import (
	"errors"
	"os/exec"
	"syscall"

	"github.com/pluginhost/pluginhost/host/nsexec"
)

// taskCommand is the command that runs the task's binary at path: the
// binary itself, or, when the task needs a namespace, a root or
// capabilities (spec), the helper in fresh namespaces, which sets them up
// and then execs the binary in place (package nsexec). A plain change of
// user needs no helper: the kernel does it between fork and exec.
func taskCommand(path string, args []string, req *StartRequest, spec *nsexec.Spec, ns nsexec.Namespaces) (*exec.Cmd, error) {
	if !spec.Needed() {
		cmd := exec.Command(path, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if c := spec.Cred; c != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
		}
		return cmd, nil
	}
	if len(req.MountHelper) == 0 {
		return nil, errors.New("the task needs the namespace helper (volumes, a root or a user) but none is configured")
	}
	argv, err := nsexec.Argv(req.MountHelper, spec, path, args)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	nsexec.SysProcAttr(cmd.SysProcAttr, ns)
	return cmd, nil
}

// hostSpec is a raw_exec or go_plugin task's spec: its volumes and its
// user, in the host's view of the filesystem.
func hostSpec(req *StartRequest) *nsexec.Spec {
	return &nsexec.Spec{Mounts: req.Mounts, Cred: plainCred(req.User), TaskDir: req.TaskDir}
}

func plainCred(u *User) *nsexec.Cred {
	if u == nil {
		return nil
	}
	return &nsexec.Cred{UID: u.UID, GID: u.GID, Groups: u.Groups}
}

func cgroupPath(cg Cgroup) string {
	if cg == nil {
		return ""
	}
	return cg.Path()
}
