package nsexec

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
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
	path, err := setup(&s, args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "pluginhost-nsexec: %v\n", err)
		return exitSetup
	}
	err = syscall.Exec(path, append([]string{args[1]}, args[2:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "pluginhost-nsexec: exec %s: %v\n", path, err)
	return exitSetup
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
	if r := s.Root; r != nil {
		if err := buildRoot(r, s.Mounts, s.Cred); err != nil {
			return "", err
		}
		if err := pivot(r.Dir); err != nil {
			return "", err
		}
		wd := r.WorkDir
		if wd == "" {
			wd = "/"
		}
		if err := unix.Chdir(wd); err != nil {
			return "", fmt.Errorf("work_dir %s: %w", wd, err)
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
	} else {
		for _, m := range s.Mounts {
			// A target the job placed in the task directory is found
			// through it; one elsewhere is the job author's path.
			within := ""
			if s.TaskDir != "" && inside(s.TaskDir, m.Target) {
				within = s.TaskDir
			}
			if err := bind(m, within, m.Target, false); err != nil {
				return "", err
			}
		}
	}
	if s.Cred != nil {
		if err := become(s.Cred); err != nil {
			return "", err
		}
	}
	return path, nil
}
