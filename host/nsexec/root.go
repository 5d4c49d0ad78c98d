package nsexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// devices are the host's device nodes an exec task gets in its /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildRoot fills r.Dir with the task's view (see the package doc) and
// makes the task's volumes inside it; pivot then makes it "/". The task
// can write its root (it keeps CAP_DAC_OVERRIDE), and a previous launch
// may have left links anywhere in it: everything is made beneath it
// without following one (package beneath), and a link where a mount point
// or a directory of the layout belongs is refused, naming it.
func buildRoot(r *Root, volumes []Mount, cred *Cred) error {
	tree, err := beneath.Open(r.Dir)
	if err != nil {
		return fmt.Errorf("task root: %w", err)
	}
	defer tree.Close()
	for _, b := range r.Binds {
		if err := bindEnv(tree, b); err != nil {
			return err
		}
	}
	if r.Alloc != "" {
		if err := bindAlloc(tree, r.Alloc); err != nil {
			return err
		}
	}
	if err := mountSecrets(tree, cred); err != nil {
		return err
	}
	tmp, err := tree.MkdirAll("tmp", 0o777|os.ModeSticky)
	if err == nil {
		// Made earlier with another mode, or chmodded by the task.
		err = tmp.Chmod(0o777 | os.ModeSticky)
		_ = tmp.Close()
	}
	if err != nil {
		return fmt.Errorf("task /tmp: %w", err)
	}
	if err := mountDev(tree); err != nil {
		return err
	}
	proc, err := tree.MkdirAll("proc", 0o555)
	if err != nil {
		return fmt.Errorf("task /proc: %w", err)
	}
	_ = proc.Close()
	for _, m := range volumes {
		// A block volume is a device node the task must open.
		if err := bind(m.Source, in(tree, m.Target, m.File), false, volumeAttrs(m)); err != nil {
			return err
		}
	}
	return nil
}

// bindAlloc gives the task the allocation's shared directory at /alloc,
// read-write, and its log directory at /alloc/logs read-only, as Nomad
// does since 2.0.1 (CVE-2026-6959): the log shipper writes there as root,
// and the task has no business in it. Both are nodev. The log directory
// is bound from its descriptor, opened beneath the shared directory
// (which the allocation's tasks write) through no link.
func bindAlloc(tree *beneath.Dir, alloc string) error {
	if err := bind(alloc, in(tree, AllocDir, false), false, attrNoSUID|attrNoDev); err != nil {
		return err
	}
	shared, err := beneath.Open(alloc)
	if err != nil {
		return fmt.Errorf("task /alloc: %w", err)
	}
	defer shared.Close()
	logs, err := shared.OpenDir(LogDirName)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("task /alloc/logs: %w", err)
	}
	defer logs.Close()
	return bind(logs.ProcPath(), in(tree, AllocDir+"/"+LogDirName, false), false, attrRO|attrNoSUID|attrNoDev)
}

// LogDirName is the log directory in the allocation's shared directory.
const LogDirName = "logs"

// Device nodes: an exec task keeps CAP_MKNOD and CAP_DAC_OVERRIDE
// (Nomad's default set) and has no devices cgroup to stop it: wherever it
// can write on a mount that honours device nodes it can make one for the
// host's disk (mknod /tmp/d b 8 0) and open it. Every place an exec task
// can write is nodev: its root (/local, /tmp), /alloc, /dev, /secrets and
// its directory volumes (attrVolume, for every driver: another task may
// mount the same volume).

// bindEnv gives the root one chroot_env entry. A missing source is left
// out, as Nomad's copy leaves it out; a symlink (/bin -> usr/bin on a
// merged-/usr system) is made again as the same symlink, which is what a
// copy would give. The source is the operator's (a host path, followed
// like any path of the configuration); the target is in the task's root.
func bindEnv(tree *beneath.Dir, b Mount) error {
	rel := relIn(b.Target)
	fi, err := os.Lstat(b.Source)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("chroot_env %s: %w", b.Source, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		dest, err := os.Readlink(b.Source)
		if err != nil {
			return fmt.Errorf("chroot_env %s: %w", b.Source, err)
		}
		if cur, err := tree.Readlink(rel); err == nil && cur == dest {
			return nil
		}
		if dir := filepath.Dir(rel); dir != "." {
			d, err := tree.MkdirAll(dir, 0o755)
			if err != nil {
				return fmt.Errorf("chroot_env %s: %w", b.Source, err)
			}
			_ = d.Close()
		}
		// An empty mount point left by an older layout, or a link the
		// task changed: removed by name, never followed.
		if err := tree.Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
			return fmt.Errorf("chroot_env %s: %w", b.Source, err)
		}
		if err := tree.Symlink(dest, rel); err != nil {
			return fmt.Errorf("chroot_env %s: %w", b.Source, err)
		}
		return nil
	}
	// Not nosuid: the host's own setuid programs (su, ping) are the
	// operator's to offer in chroot_env, read-only, and nothing a task
	// writes lands there.
	return bind(b.Source, in(tree, b.Target, !fi.IsDir()), true, attrRO)
}

// mountSecrets makes /secrets a small tmpfs only the task's user can read.
// Its owner is given to the tmpfs as it is made, so nothing is chowned by
// name.
func mountSecrets(tree *beneath.Dir, cred *Cred) error {
	opts := "mode=0700,size=1m"
	if cred != nil {
		opts += fmt.Sprintf(",uid=%d,gid=%d", cred.UID, cred.GID)
	}
	mp, done, err := tree.MountPoint(relIn(SecretsDir), false)
	if err != nil {
		return fmt.Errorf("task /secrets: %w", err)
	}
	defer done()
	if err := unix.Mount("tmpfs", mp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("task /secrets tmpfs: %w", err)
	}
	return nil
}

// mountDev makes a minimal /dev: a tmpfs holding the host's harmless
// device nodes (bound, since mknod inside may be refused), the usual
// symlinks and a /dev/shm of its own.
func mountDev(tree *beneath.Dir) error {
	mp, done, err := tree.MountPoint("dev", false)
	if err != nil {
		return fmt.Errorf("task /dev: %w", err)
	}
	// nodev (see noDev): the device nodes bound below are mounts of
	// their own, which this flag does not reach.
	err = unix.Mount("tmpfs", mp, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k")
	done()
	if err != nil {
		return fmt.Errorf("task /dev tmpfs: %w", err)
	}
	// The fresh tmpfs, opened through no link.
	dev, err := tree.OpenDir("dev")
	if err != nil {
		return fmt.Errorf("task /dev: %w", err)
	}
	defer dev.Close()
	for _, d := range devices {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := bind(src, target{tree: dev, rel: d, file: true}, false, attrNoSUID); err != nil {
			return err
		}
	}
	for name, dest := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx",
	} {
		if err := dev.Symlink(dest, name); err != nil {
			return fmt.Errorf("task /dev/%s: %w", name, err)
		}
	}
	for _, m := range []struct {
		name, fstype, opts string
		flags              uintptr
	}{
		{"pts", "devpts", "newinstance,ptmxmode=0666,mode=0620", unix.MS_NOSUID | unix.MS_NOEXEC},
		{"shm", "tmpfs", "mode=1777,size=64m", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	} {
		mp, done, err := dev.MountPoint(m.name, false)
		if err != nil {
			return fmt.Errorf("task /dev/%s: %w", m.name, err)
		}
		err = unix.Mount(m.fstype, mp, m.fstype, m.flags, m.opts)
		done()
		if err != nil {
			return fmt.Errorf("task /dev/%s: %w", m.name, err)
		}
	}
	return nil
}

// pivot makes dir the root of the mount namespace and detaches the old
// one, so that no path leads back to the host's files (a chroot can be
// left; a detached root cannot be reached). It then mounts the task's
// /proc, which shows the task's pid namespace (the host's with pid_mode
// "host"), and fences it (fenceProc).
func pivot(dir string) error {
	// pivot_root wants the new root to be a mount point.
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind task root: %w", err)
	}
	// The path is the agent's (the task cannot replace its own task
	// directory: its parent is root's), and now ends on the new mount.
	if err := setAttrs(dir, false, attrNoSUID|attrNoDev); err != nil {
		return fmt.Errorf("make task root nosuid,nodev: %w", err)
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("enter task root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on top of the new one, and
	// the detach below takes it off: no directory for the old root is
	// needed inside the task's.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root %s: %w", dir, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", procFlags, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return fenceProc()
}

const procFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// procReadOnly are the /proc entries that set up the whole machine rather
// than the task's namespaces. Their only check is often the file mode, and
// an exec task keeps CAP_DAC_OVERRIDE by default (as root it passes
// /proc/sys's own check too): without this, a task running as nobody
// could write /proc/sysrq-trigger and reboot the host. runc, and with it
// Nomad's exec driver, makes the same list read-only.
var procReadOnly = []string{"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// procMasked show kernel state no task needs (kernel memory, keys, timer
// and scheduler internals, hardware); they are covered with an empty,
// read-only file or directory, as runc covers them.
var procMasked = []string{
	"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
	"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
}

// fenceProc makes procReadOnly read-only and covers procMasked in the
// task's /proc, after the pivot (a file is covered with the task's
// /dev/null). An entry this kernel does not have is skipped.
func fenceProc() error {
	for _, p := range procReadOnly {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("bind %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|procFlags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	for _, p := range procMasked {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|procFlags, "")
		} else {
			err = unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
	}
	return nil
}
