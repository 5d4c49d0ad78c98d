package driver

import (
	"fmt"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// TightenSocket makes the plugin socket rel in dir mode 0600, so that only
// its owner (and root) can connect to it, whatever umask the plugin ran
// with. Its directory is already 0700 (taskrunner's socket dir); this is
// the second lock. The directory is the task's, so the socket is found
// beneath it through no link and chmodded through its descriptor:
// anything that is not a socket, or a link to one, is refused.
//
// A task running as its own user owns its socket (in a directory
// taskrunner gives that user, still 0700); the agent, running as root, can
// still chmod it and connect.
func TightenSocket(dir, rel string) error {
	d, err := beneath.Open(dir)
	if err != nil {
		return fmt.Errorf("plugin socket: %w", err)
	}
	defer d.Close()
	if err := d.ChmodSocket(rel, 0o600); err != nil {
		return fmt.Errorf("plugin socket: %w", err)
	}
	return nil
}
