package beneath

import (
	"context"
	"fmt"
	"net"

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
