package cgroup

import (
	"errors"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// RemoveParent removes the parent cgroup (cgroup_parent) from every
// hierarchy where it holds no task group any more: what an agent leaves at
// a clean stop is only what its running tasks still need. rmdir refuses a
// cgroup with children or processes, so a parent whose tasks run on past
// the agent stays, and nothing running is ever touched. The directories
// above cgroup_parent are left alone (they may be the operator's, a
// systemd slice) unless up is set, for a parent the agent chose itself
// (/pluginhost/<hash>): then the one above goes too when it is empty. It
// returns the directories it removed.
func (m *Manager) RemoveParent(up bool) ([]string, error) {
	if !m.Enabled() {
		return nil, nil
	}
	roots := m.hiers
	if m.version == 2 {
		roots = []string{m.root}
	}
	var removed []string
	var errs []error
	dirs := []string{m.parent}
	if up && path.Dir(m.parent) != "/" {
		dirs = append(dirs, path.Dir(m.parent))
	}
	for _, root := range roots {
		for _, d := range dirs {
			dir := filepath.Join(root, d)
			switch err := unix.Rmdir(dir); {
			case err == nil:
				removed = append(removed, dir)
			case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENOTEMPTY):
			default:
				errs = append(errs, err)
			}
		}
	}
	return removed, errors.Join(errs...)
}
