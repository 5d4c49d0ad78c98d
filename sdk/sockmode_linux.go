//go:build linux && !portable

package sdk

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// chmodSocket gives the socket at path mode perm without following a
// link: a standalone plugin runs as root under kubelet or Nomad, and a
// link swapped in at the endpoint's name between the bind and the chmod
// would have root chmod any file of the host (0600 on /etc/passwd, say).
// The name is opened as a path only, checked to be a socket with one
// name, and changed through that descriptor.
func chmodSocket(path string, perm os.FileMode) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Nlink != 1 {
		return fmt.Errorf("%s is not the socket just bound (mode %#o, %d links): refused", path, st.Mode, st.Nlink)
	}
	return os.Chmod("/proc/self/fd/"+strconv.Itoa(fd), perm)
}
