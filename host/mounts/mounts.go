package mounts

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/mountinfo"
)

// ContainTree makes dir (created 0711 if missing) a mount of its own with
// nosuid and nodev, unless its file system is mounted so already. It is
// private: nothing mounted under it on the host is meant to reach a
// task's namespace, nor the other way round.
func ContainTree(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("contain %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("contain %s: %w", dir, err)
	}
	if st.Flags&unix.ST_NOSUID != 0 && st.Flags&unix.ST_NODEV != 0 {
		return nil
	}
	mounted, err := mountinfo.IsMountPoint(dir)
	if err != nil {
		return err
	}
	if !mounted {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s onto itself: %w", dir, err)
		}
		if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if st.Flags&unix.ST_RDONLY != 0 {
		flags |= unix.MS_RDONLY
	}
	if st.Flags&unix.ST_NOEXEC != 0 {
		flags |= unix.MS_NOEXEC
	}
	if err := unix.Mount("", dir, "", flags, ""); err != nil {
		return fmt.Errorf("make %s nosuid,nodev: %w", dir, err)
	}
	return nil
}

// ReleaseTree undoes ContainTree at a clean stop if dir holds nothing a
// task could still need: no entries (every allocation collected) and
// nothing mounted below. It detaches only the agent's own bind, never a
// file system the operator mounted there (which ContainTree remounted
// but did not make): that one shows its file system whole.
func ReleaseTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) > 0 {
		return nil
	}
	under, err := mountinfo.Under("/proc/self/mountinfo", dir)
	if err != nil || len(under) != 1 || under[0] != dir {
		return err
	}
	if sub, err := mountinfo.IsSubtreeBind(dir); err != nil || !sub {
		return err
	}
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// Root is the CSI plugins' mount root (<data_dir>/csi), under which
// every volume is staged and published. It is made a shared mount, bound
// onto itself first if it is not a mount point, as kubelet does with its
// own root, the first time a CSI plugin task starts (Ensure).
//
// Why shared: each task with volumes runs in a mount namespace of its own
// (package nsexec), which starts as a copy of the host's mounts, other
// allocations' staged and published volumes included. Those copies are
// slaves of the host's mounts only where the host's are shared; on a host
// whose mounts are private (containers, some distributions) an unstage on
// the host would leave the file system mounted in every task namespace
// made while it was staged, and a block device could then not be
// detached. Under a shared root, the host's unmounts reach every task.
type Root struct {
	// Dir is the root's path.
	Dir string

	mu   sync.Mutex
	done bool
}

// Ensure makes the root shared once; a failure is tried again next time.
// Without privileges nothing can be mounted anyway: that is no error, as
// volumes fail with the plugin's own.
func (m *Root) Ensure() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil
	}
	if err := shareMountRoot(m.Dir); err != nil && !NotPrivileged(err) {
		return err
	}
	m.done = true
	return nil
}

// Release unmounts the root at a clean stop when nothing is mounted below
// it: no volume staged or published is left for anyone.
func (m *Root) Release() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done {
		return nil
	}
	under, err := mountinfo.Under("/proc/self/mountinfo", m.Dir)
	if err != nil || len(under) != 1 || under[0] != m.Dir {
		return err
	}
	if err := unix.Unmount(m.Dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount %s: %w", m.Dir, err)
	}
	m.done = false
	return nil
}

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

// NotPrivileged tells a mount failure for lack of privileges apart.
func NotPrivileged(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}
