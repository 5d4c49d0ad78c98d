//go:build unix && !linux

package sdktest_test

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processGone: no process has pid (the plugin is reaped by the go-plugin
// client that launched it before cleanup returns).
func processGone(pid int) bool {
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
