package beneath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DialUnix connects to the unix socket rel beneath d. The socket file is
// opened as a path first (refusing links, hard links and anything that is
// not a socket), and the connection is made through that descriptor, so
// it reaches the socket that was checked: a task that swaps the file for a
// link to another process's socket in between gains nothing. This also
// keeps the address short: a path of any length beneath d fits.
func (d *Dir) DialUnix(ctx context.Context, rel string) (*net.UnixConn, error) {
	pfd, err := openat(d.fd(), d.name, rel, unix.O_PATH, 0, d.walk)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	where := join(d.name, rel)
	if err := checkKind(pfd, where, unix.S_IFSOCK); err != nil {
		return nil, err
	}
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "unix", fdPath(pfd))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", where, err)
	}
	return c.(*net.UnixConn), nil
}

// PeerCred returns the credentials of the process at the other end of c,
// as the kernel recorded them when that process called listen (or
// connect): its pid, uid and gid. They cannot be forged by the peer.
func PeerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("peer credentials: %w", serr)
	}
	return cred, nil
}

// OpenSocket opens the unix socket file rel beneath d as a path only
// (O_PATH): a link, a hard link or anything but a socket is refused. The
// descriptor names that socket for as long as it is open: connecting
// through ProcPath(f) reaches it and nothing else.
func (d *Dir) OpenSocket(rel string) (*os.File, error) {
	pfd, err := openat(d.fd(), d.name, rel, unix.O_PATH, 0, d.walk)
	if err != nil {
		return nil, err
	}
	where := join(d.name, rel)
	if err := checkKind(pfd, where, unix.S_IFSOCK); err != nil {
		_ = unix.Close(pfd)
		return nil, err
	}
	return os.NewFile(uintptr(pfd), where), nil
}

// ProcPathOf is the /proc name of f's descriptor (see Dir.ProcPath).
func ProcPathOf(f *os.File) string { return fdPath(int(f.Fd())) }

// ChmodSocket sets the mode of the unix socket rel beneath d through its
// descriptor.
func (d *Dir) ChmodSocket(rel string, perm os.FileMode) error {
	mode, err := unixMode(perm)
	if err != nil {
		return err
	}
	f, err := d.OpenSocket(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.Fchmodat(int(f.Fd()), "", mode, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		// No fchmodat2 (Linux < 6.6): the descriptor's /proc name
		// reaches the same inode.
		err = unix.Chmod(fdPath(int(f.Fd())), mode)
	}
	if err != nil {
		return pathError("chmod", f.Name(), err)
	}
	return nil
}

// DialPath dials the unix socket at path on behalf of a process that must
// not be redirected, and returns the connection with the credentials of
// the process listening on it. Beneath the first of roots that holds path
// (the agent's socket root, its data dir) no link is followed; elsewhere
// (a socket path a job chose) the last element is never followed. The
// socket must have one link, and the process listening on it must run as
// the user that owns the socket file: a task that can write the directory
// may replace its own socket, but cannot make the dial reach a socket of
// another user's.
func DialPath(ctx context.Context, path string, roots []string) (*net.UnixConn, *unix.Ucred, error) {
	top, rel := filepath.Dir(path), filepath.Base(path)
	for _, r := range roots {
		if r == "" {
			continue
		}
		if p, err := filepath.Rel(r, path); err == nil && p != "." && !strings.HasPrefix(p, "../") && p != ".." {
			top, rel = r, p
			break
		}
	}
	d, err := Open(top)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	f, err := d.OpenSocket(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, nil, pathError("stat", path, err)
	}
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "unix", fdPath(int(f.Fd())))
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", path, err)
	}
	uc := c.(*net.UnixConn)
	cred, err := PeerCred(uc)
	if err != nil {
		_ = uc.Close()
		return nil, nil, err
	}
	if cred.Uid != st.Uid {
		_ = uc.Close()
		return nil, nil, &UnsafeError{Path: path, What: fmt.Sprintf("is owned by uid %d but served by a process of uid %d (pid %d)", st.Uid, cred.Uid, cred.Pid)}
	}
	return uc, cred, nil
}
