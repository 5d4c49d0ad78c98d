//go:build unix

package sdk

import (
	"fmt"
	"os"
	"syscall"
)

// openLogFile opens the plugin's log file for appending, creating it 0640.
// The file itself is never followed: a plugin may run as root (under
// Nomad's raw_exec, say) in a directory another task could write, and a
// link planted at the file's name would have root append to any file of
// the host. A link, anything but a regular file, or a file with a second
// name (a hard link to a file elsewhere) is refused; the plugin then logs
// to stderr only and says why.
func openLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o640)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file with one link (mode %#o, %d links): refused", path, st.Mode, st.Nlink)
	}
	return f, nil
}
