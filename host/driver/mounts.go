package driver

import (
	"errors"
	"os/exec"
	"syscall"

	"github.com/pluginhost/pluginhost/host/mountns"
)

// taskCommand is the command that runs the task's binary at path: the
// binary itself, or, when the task has volumes, the mount helper in a new
// mount namespace, which binds them and then execs the binary in place
// (package mountns).
func taskCommand(path string, req *StartRequest) (*exec.Cmd, error) {
	if len(req.Mounts) == 0 {
		return exec.Command(path, req.Args...), nil
	}
	if len(req.MountHelper) == 0 {
		return nil, errors.New("the task has volumes but no mount helper is configured")
	}
	argv, err := mountns.Argv(req.MountHelper, req.Mounts, path, req.Args)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	mountns.SysProcAttr(cmd.SysProcAttr)
	return cmd, nil
}
