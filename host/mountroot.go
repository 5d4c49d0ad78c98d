package host

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// shareMountRoot makes dir (the CSI plugins' mount root, under which every
// volume is staged and published) a shared mount, binding it onto itself
// first if it is not a mount point, as kubelet does with its own root.
//
// Why: each task with volumes runs in a mount namespace of its own
// (package mountns), which starts as a copy of the host's mounts, other
// allocations' staged and published volumes included. Those copies are
// slaves of the host's mounts only where the host's are shared; on a host
// whose mounts are private (containers, some distributions) an unstage on
// the host would leave the file system mounted in every task namespace
// made while it was staged, and a block device could then not be
// detached. Under a shared root, the host's unmounts reach every task.
func shareMountRoot(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mount root %s: %w", dir, err)
	}
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if !mounted {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount root %s onto itself: %w", dir, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make mount root %s shared: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether path is a mount point in this process's
// mount namespace (field 5 of /proc/self/mountinfo; paths with spaces are
// octal-escaped there, and a mount root never has any).
func isMountPoint(path string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[4] == path {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read mountinfo: %w", err)
	}
	return false, nil
}

// errNotPrivileged tells a mount failure for lack of privileges apart.
func errNotPrivileged(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}

// DetachMounts detaches every mount at or below dir, deepest first (lazily:
// a task still using one keeps it until it lets go). `agent -dev` calls it
// before removing its throwaway data dir, which holds the shared mount root
// and whatever volumes are still published.
func DetachMounts(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	var mps []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			mps = append(mps, fields[4])
		}
	}
	_ = f.Close()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	slices.SortFunc(mps, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, mp := range mps {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
