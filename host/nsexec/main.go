package nsexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/host/seccomp"
	"github.com/pluginhost/pluginhost/internal/beneath"
)

// exitSetup is the helper's exit status when it could not set the task
// up: the task never ran. 126 is the shell's "found but could not run".
const exitSetup = 126

// Main is the helper: args are the spec (JSON), the task's binary and its
// arguments. It returns only on failure, with the exit status.
func Main(args []string) int {
	// Credentials and capabilities are per thread; the thread that sets
	// them must be the one that execs.
	runtime.LockOSThread()
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "pluginhost-nsexec: usage: nsexec SPEC-JSON BINARY [ARGS...] (started by the agent, not by hand)")
		return 2
	}
	var s Spec
	if err := json.Unmarshal([]byte(args[0]), &s); err != nil {
		fmt.Fprintf(os.Stderr, "pluginhost-nsexec: decoding spec: %v\n", err)
		return 2
	}
	var report *os.File
	if s.Report > 2 {
		unix.CloseOnExec(s.Report)
		report = os.NewFile(uintptr(s.Report), "report")
	}
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "pluginhost-nsexec: %v\n", err)
		if report != nil {
			kind := "error"
			if errors.Is(err, beneath.ErrUnsafe) {
				kind = "unsafe"
			}
			fmt.Fprintf(report, "%s: %v\n", kind, err)
		}
		return exitSetup
	}
	path, err := setup(&s, args[1])
	if err != nil {
		return fail(err)
	}
	err = syscall.Exec(path, append([]string{args[1]}, args[2:]...), os.Environ())
	return fail(fmt.Errorf("exec %s: %w", path, err))
}

// setup arranges everything in s and returns the binary to exec.
func setup(s *Spec, command string) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	if len(s.Mounts) > 0 || s.Root != nil {
		// Slave, not private: see the package doc, "Propagation".
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return "", fmt.Errorf("making / a slave mount: %w", err)
		}
	}
	path := command
	wd := s.WorkDir
	if r := s.Root; r != nil {
		if err := buildRoot(r, s.Mounts, s.Cred); err != nil {
			return "", err
		}
		if err := pivot(r.Dir); err != nil {
			return "", err
		}
		wd = r.WorkDir
		if wd == "" {
			wd = "/"
		}
		// The command names a file of the task's root, found in the
		// task's PATH as a shell would.
		if !strings.Contains(command, "/") {
			p, err := exec.LookPath(command)
			if err != nil {
				return "", fmt.Errorf("command %q not found in the task's PATH %q", command, os.Getenv("PATH"))
			}
			path = p
		}
	} else if err := bindHostVolumes(s); err != nil {
		return "", err
	}
	// Only 0, 1 and 2 go to the task: a descriptor the agent inherited
	// from whoever started it (a shell's 7</) would otherwise reach the
	// task, as runc closes everything above 2 for the same reason.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return "", fmt.Errorf("close inherited descriptors: %w", err)
	}
	if s.Seccomp != nil {
		// While still root with CAP_SYS_ADMIN (Nomad's exec tasks do not
		// run with no_new_privs, which a filter installed later would
		// need), and after every mount: the filter refuses mount.
		if err := seccomp.Install(seccomp.Policy{DenyPtrace: s.Seccomp.DenyPtrace}); err != nil {
			return "", err
		}
	}
	if s.Cred != nil {
		if err := become(s.Cred); err != nil {
			return "", err
		}
	}
	// As the task's user, after every privilege is gone: the kernel
	// checks the walk, and a link the task planted on the way leads only
	// where the task could go itself.
	if wd != "" {
		if err := unix.Chdir(wd); err != nil {
			return "", fmt.Errorf("work_dir %s: %w", wd, err)
		}
	}
	return path, nil
}

// bindHostVolumes mounts a raw_exec or go_plugin task's volumes in the
// host's view. A target in the task directory is found beneath it, one
// elsewhere beneath the host's "/", through no link either way: the job
// author's path may cross a directory the task's user (or another) can
// write, such as /tmp, where a link swapped in between two launches would
// otherwise have root mount the volume over /etc in the task's view, or
// make directories where that user points.
func bindHostVolumes(s *Spec) error {
	host, err := beneath.Open("/")
	if err != nil {
		return fmt.Errorf("host root: %w", err)
	}
	defer host.Close()
	var taskDir *beneath.Dir
	if s.TaskDir != "" {
		d, err := beneath.Open(s.TaskDir)
		if err != nil {
			return fmt.Errorf("task directory: %w", err)
		}
		defer d.Close()
		taskDir = d
	}
	for _, m := range s.Mounts {
		t := in(host, m.Target, m.File)
		if taskDir != nil && inside(s.TaskDir, m.Target) {
			rel, _ := filepath.Rel(s.TaskDir, m.Target)
			t = target{tree: taskDir, rel: rel, file: m.File}
		}
		if err := bind(m.Source, t, false, volumeAttrs(m)); err != nil {
			return err
		}
	}
	return nil
}
