package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/pluginhost/pluginhost/host/nsexec"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// taskCommand is the command that runs the task's binary at path: the
// binary itself, or, when the task needs a namespace, a root or
// capabilities (spec), the helper in fresh namespaces, which sets them up
// and then execs the binary in place (package nsexec). A plain change of
// user needs no helper: the kernel does it between fork and exec.
//
// With the helper, the returned report says once the task's binary runs
// whether the helper set it up: the caller starts cmd, then calls
// report.wait (nil report: no helper, nothing to wait for).
func taskCommand(path string, args []string, req *StartRequest, spec *nsexec.Spec, ns nsexec.Namespaces) (*exec.Cmd, *helperReport, error) {
	if !spec.Needed() {
		cmd := exec.Command(path, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		if c := spec.Cred; c != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
		}
		return cmd, nil, nil
	}
	if len(req.MountHelper) == 0 {
		return nil, nil, errors.New("the task needs the namespace helper (volumes, a root or a user) but none is configured")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("helper report pipe: %w", err)
	}
	spec.Report = 3 // ExtraFiles[0]
	argv, err := nsexec.Argv(req.MountHelper, spec, path, args)
	if err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	cmd.ExtraFiles = []*os.File{w}
	nsexec.SysProcAttr(cmd.SysProcAttr, ns)
	return cmd, &helperReport{r: r, w: w}, nil
}

// helperReport is the pipe on which the namespace helper says why it
// could not set a task up. Without it a refused link (a task that planted
// one in its root) was only in the task's stderr log, and its event said
// "Exit Code: 126"; now the launch fails with the helper's reason, which
// names the path.
type helperReport struct{ r, w *os.File }

// wait closes the parent's write end and reads the report: end of file
// means the helper exec'd the task (the descriptor is close-on-exec);
// anything else is its reason, and the helper exits 126. A refusal of a
// planted link matches beneath.ErrUnsafe. A nil report waits for nothing.
func (h *helperReport) wait(ctx context.Context) error {
	if h == nil {
		return nil
	}
	_ = h.w.Close()
	defer h.r.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = h.r.SetReadDeadline(dl)
	}
	b, err := io.ReadAll(io.LimitReader(h.r, 64<<10))
	msg := strings.TrimSpace(string(b))
	switch {
	case msg == "" && err == nil:
		return nil
	case msg == "":
		return fmt.Errorf("waiting for the namespace helper: %w", err)
	case strings.HasPrefix(msg, "unsafe: "):
		return fmt.Errorf("task setup: %w", beneath.Reported(strings.TrimPrefix(msg, "unsafe: ")))
	}
	return fmt.Errorf("task setup: %s", strings.TrimPrefix(msg, "error: "))
}

// abandon closes both ends when the command was never started.
func (h *helperReport) abandon() {
	if h != nil {
		_ = h.r.Close()
		_ = h.w.Close()
	}
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

// startTask starts cmd (see startChild) and, when the namespace helper
// runs first, waits until it has exec'd the task: a helper that could not
// set the task up is the launch's error, with its reason, and its exit is
// reaped before the error is returned.
func startTask(ctx context.Context, cmd *exec.Cmd, report *helperReport, cg Cgroup) (*proc, error) {
	p, err := startChild(cmd, cg)
	if err != nil {
		report.abandon()
		return nil, err
	}
	if err := report.wait(ctx); err != nil {
		select {
		case <-p.done:
		case <-ctx.Done():
			// The helper exits right after its report; should it not,
			// it is killed rather than left behind.
			_ = p.signalGroup(syscall.SIGKILL)
			<-p.done
		}
		p.closeFD()
		return nil, err
	}
	return p, nil
}
