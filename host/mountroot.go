package host

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// shareMountRoot makes dir (the CSI plugins' mount root, under which every
// volume is staged and published) a shared mount, binding it onto itself
// first if it is not a mount point, as kubelet does with its own root.
//
// Why: each task with volumes runs in a mount namespace of its own
// (package nsexec), which starts as a copy of the host's mounts, other
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
	mounted, err := mountinfo.IsMountPoint(dir)
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

// errNotPrivileged tells a mount failure for lack of privileges apart.
func errNotPrivileged(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}
