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
		// The child changes its credentials before it changes directory.
		cmd.Dir = req.WorkDir
		return cmd, nil, nil
	}
	if spec.Root == nil {
		// Not cmd.Dir: the helper starts as root, and the work_dir is
		// the task's path to walk (see nsexec.Spec.WorkDir).
		spec.WorkDir = req.WorkDir
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
// "Exit Code: 126"; now the reason reaches the task's events and names the
// path.
//
// The report is read in the background (read), not on the launch's path:
// waiting for the helper to exec the task would put all of its set-up
// (mounts, the pivot, the seccomp filter) before the launch is recorded,
// about 4 ms of an exec task's 5 ms. A launch that failed in the helper
// instead ends like a task that exited at once, with ExitResult.SetupErr.
type helperReport struct {
	r, w *os.File
	done chan struct{}
	err  error // valid once done is closed
}

// read closes the parent's write end and reads the report until end of
// file, which comes when the helper execs the task (the descriptor is
// close-on-exec) or exits; anything read is its reason. A refusal of a
// planted link matches beneath.ErrUnsafe. It returns at once; done closes
// when the report is in.
func (h *helperReport) read() {
	_ = h.w.Close()
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		defer h.r.Close()
		b, err := io.ReadAll(io.LimitReader(h.r, 64<<10))
		msg := strings.TrimSpace(string(b))
		switch {
		case msg == "" && err == nil:
		case msg == "":
			h.err = fmt.Errorf("reading the namespace helper's report: %w", err)
		case strings.HasPrefix(msg, "unsafe: "):
			h.err = fmt.Errorf("task setup: %w", beneath.Reported(strings.TrimPrefix(msg, "unsafe: ")))
		default:
			h.err = fmt.Errorf("task setup: %s", strings.TrimPrefix(msg, "error: "))
		}
	}()
}

// wait waits for the report: nil once the helper exec'd the task. A nil
// report waits for nothing.
func (h *helperReport) wait(ctx context.Context) error {
	if h == nil {
		return nil
	}
	select {
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the namespace helper: %w", ctx.Err())
	}
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

// startTask starts cmd (see startChild), whose exit carries the namespace
// helper's report (ExitResult.SetupErr) when the helper runs first.
func startTask(cmd *exec.Cmd, report *helperReport, cg Cgroup) (*proc, error) {
	p, err := startChild(cmd, cg, report)
	if err != nil {
		report.abandon()
		return nil, err
	}
	return p, nil
}

// startTaskAndWait is startTask for a launch that waits for its task
// anyway (go-plugin's handshake): it also waits until the helper has
// exec'd the task, so that a helper that could not set it up is the
// launch's error, with its reason, rather than go-plugin's "plugin exited
// before we could connect". The helper's exit is reaped before the error
// is returned.
func startTaskAndWait(ctx context.Context, cmd *exec.Cmd, report *helperReport, cg Cgroup) (*proc, error) {
	p, err := startTask(cmd, report, cg)
	if err != nil {
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
