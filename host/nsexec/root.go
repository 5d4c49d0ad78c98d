package nsexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// devices are the host's device nodes an exec task gets in its /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// buildRoot fills r.Dir with the task's view (see the package doc) and
// makes the task's volumes inside it; pivot then makes it "/".
func buildRoot(r *Root, volumes []Mount, cred *Cred) error {
	for _, b := range r.Binds {
		if err := bindEnv(r.Dir, b); err != nil {
			return err
		}
	}
	if r.Alloc != "" {
		if err := bind(Mount{Source: r.Alloc, Target: AllocDir, noDev: true}, r.Dir, inRoot(r.Dir, AllocDir), false); err != nil {
			return err
		}
	}
	if err := mountSecrets(inRoot(r.Dir, SecretsDir), cred); err != nil {
		return err
	}
	tmp := inRoot(r.Dir, "/tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("task /tmp: %w", err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		return fmt.Errorf("task /tmp: %w", err)
	}
	if err := mountDev(inRoot(r.Dir, "/dev")); err != nil {
		return err
	}
	if err := os.MkdirAll(inRoot(r.Dir, "/proc"), 0o555); err != nil {
		return fmt.Errorf("task /proc: %w", err)
	}
	for _, m := range volumes {
		// A block volume is a device node the task must open.
		m.noDev = !m.File
		if err := bind(m, r.Dir, inRoot(r.Dir, m.Target), false); err != nil {
			return err
		}
	}
	return nil
}

// noDev makes the mount at target refuse device nodes, keeping its other
// flags. An exec task keeps CAP_MKNOD and CAP_DAC_OVERRIDE (Nomad's
// default set) and has no devices cgroup to stop it: wherever it can write
// on a mount that honours device nodes it can make one for the host's disk
// (mknod /tmp/d b 8 0) and open it. Every place an exec task can write is
// nodev: its root (/local, /tmp), /alloc, /dev, /secrets and its directory
// volumes.
func noDev(target string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return fmt.Errorf("nodev %s: %w", target, err)
	}
	// A bind remount sets these flags to what it is given; the atime
	// flags are kept when none is given.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NODEV)
	for _, f := range [...]struct {
		st int64
		ms uintptr
	}{{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NOEXEC, unix.MS_NOEXEC}} {
		if st.Flags&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("nodev %s: %w", target, err)
	}
	return nil
}

// bindEnv gives the root one chroot_env entry. A missing source is left
// out, as Nomad's copy leaves it out; a symlink (/bin -> usr/bin on a
// merged-/usr system) is made again as the same symlink, which is what a
// copy would give.
func bindEnv(root string, b Mount) error {
	target := inRoot(root, b.Target)
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
		if cur, err := os.Readlink(target); err == nil && cur == dest {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("chroot_env %s: %w", b.Source, err)
		}
		_ = os.Remove(target) // an empty mount point left by an older layout
		if err := os.Symlink(dest, target); err != nil {
			return fmt.Errorf("chroot_env %s: %w", b.Source, err)
		}
		return nil
	}
	b.ReadOnly = true
	b.File = !fi.IsDir()
	return bind(b, "", target, true)
}

// mountSecrets makes /secrets a small tmpfs only the task's user can read.
func mountSecrets(dir string, cred *Cred) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("task /secrets: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=1m"); err != nil {
		return fmt.Errorf("task /secrets tmpfs: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.UID), int(cred.GID)); err != nil {
			return fmt.Errorf("task /secrets: %w", err)
		}
	}
	return nil
}

// mountDev makes a minimal /dev: a tmpfs holding the host's harmless
// device nodes (bound, since mknod inside may be refused), the usual
// symlinks and a /dev/shm of its own.
func mountDev(dev string) error {
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return fmt.Errorf("task /dev: %w", err)
	}
	// nodev (see noDev): the device nodes bound below are mounts of
	// their own, which this flag does not reach.
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("task /dev tmpfs: %w", err)
	}
	for _, d := range devices {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := bind(Mount{Source: src, Target: src, File: true}, "", filepath.Join(dev, d), false); err != nil {
			return err
		}
	}
	for name, dest := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx",
	} {
		if err := os.Symlink(dest, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("task /dev/%s: %w", name, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return fmt.Errorf("task /dev/%s: %w", d, err)
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("task /dev/pts: %w", err)
	}
	if err := unix.Mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("task /dev/shm: %w", err)
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
	if err := noDev(dir); err != nil {
		return err
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
