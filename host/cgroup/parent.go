package cgroup

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// RemoveParent removes the parent cgroup (cgroup_parent) from every
// hierarchy where it holds no task group any more: what an agent leaves at
// a clean stop is only what its running tasks still need. rmdir refuses a
// cgroup with children or processes, so a parent whose tasks run on past
// the agent stays, and nothing running is ever touched. The directories
// above cgroup_parent are left alone: they may be the operator's (a
// systemd slice). It returns the directories it removed.
func (m *Manager) RemoveParent() ([]string, error) {
	if !m.Enabled() {
		return nil, nil
	}
	roots := m.hiers
	if m.version == 2 {
		roots = []string{m.root}
	}
	var removed []string
	var errs []error
	for _, root := range roots {
		dir := filepath.Join(root, m.parent)
		switch err := unix.Rmdir(dir); {
		case err == nil:
			removed = append(removed, dir)
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENOTEMPTY):
		default:
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}
