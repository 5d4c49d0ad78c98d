package driver

import (
	"fmt"
	"io/fs"
	"os"
)

// TightenSocket makes the plugin socket at path mode 0600, so that only its
// owner (and root) can connect to it, whatever umask the plugin ran with.
// Its directory is already 0700 (taskrunner's socket dir); this is the
// second lock. Anything that is not a socket is left alone, and a symlink
// is not followed.
//
// A task running as its own user owns its socket (in a directory
// taskrunner gives that user, still 0700); the agent, running as root, can
// still chmod it and connect.
func TightenSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("plugin socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("plugin socket %s is not a socket (%v)", path, fi.Mode().Type())
	}
	if fi.Mode().Perm() == 0o600 {
		return nil
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("plugin socket: %w", err)
	}
	return nil
}
