package mountns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// Check refuses mounts the helper could only fail on later, inside the
// task's launch, where the error is harder to read.
func Check(ms []Mount) error {
	for _, m := range ms {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
			return fmt.Errorf("mount %q at %q: both paths must be absolute", m.Source, m.Target)
		}
		if filepath.Clean(m.Target) == "/" {
			return fmt.Errorf("mount %q: cannot mount over /", m.Source)
		}
	}
	return nil
}

// Argv is the helper's command line: helper (the helper binary and its
// leading arguments), the mounts, then the task's binary and its argv[1:].
func Argv(helper []string, ms []Mount, path string, args []string) ([]string, error) {
	if len(helper) == 0 {
		return nil, errors.New("mountns: no helper command")
	}
	if err := Check(ms); err != nil {
		return nil, err
	}
	spec, err := json.Marshal(ms)
	if err != nil {
		return nil, fmt.Errorf("mountns: encoding mounts: %w", err)
	}
	argv := append([]string{}, helper...)
	argv = append(argv, string(spec), path)
	return append(argv, args...), nil
}

// SysProcAttr adds what the helper's process needs: a new mount namespace.
func SysProcAttr(a *syscall.SysProcAttr) {
	a.Cloneflags |= unix.CLONE_NEWNS
}

// exitSetup is the helper's exit status when it could not set up the
// mounts: the task never ran. 126 is the shell's "found but could not run".
const exitSetup = 126

// Main is the helper: args are the mounts (JSON), the task's binary and its
// arguments. It returns only on failure, with the exit status.
func Main(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "pluginhost-nsexec: usage: nsexec MOUNTS-JSON BINARY [ARGS...] (started by the agent, not by hand)")
		return 2
	}
	var ms []Mount
	if err := json.Unmarshal([]byte(args[0]), &ms); err != nil {
		fmt.Fprintf(os.Stderr, "pluginhost-nsexec: decoding mounts: %v\n", err)
		return 2
	}
	if err := setup(ms); err != nil {
		fmt.Fprintf(os.Stderr, "pluginhost-nsexec: %v\n", err)
		return exitSetup
	}
	path := args[1]
	err := syscall.Exec(path, append([]string{path}, args[2:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "pluginhost-nsexec: exec %s: %v\n", path, err)
	return exitSetup
}

func setup(ms []Mount) error {
	if err := Check(ms); err != nil {
		return err
	}
	// Slave, not private: see the package doc, "Propagation".
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making / a slave mount: %w", err)
	}
	for _, m := range ms {
		if err := bind(m); err != nil {
			return err
		}
	}
	return nil
}

func bind(m Mount) error {
	if err := ensureTarget(m); err != nil {
		return err
	}
	if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		// A bind mount takes the read-only flag only on a remount.
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		if err := unix.Mount("", m.Target, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

func ensureTarget(m Mount) error {
	if _, err := os.Stat(m.Target); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !m.File {
		if err := os.MkdirAll(m.Target, 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", m.Target, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	f, err := os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	return f.Close()
}
