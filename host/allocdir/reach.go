package allocdir

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// Reach checks that a user (uid, with its groups gids) may pass every
// directory above dataDir, from / down: a raw_exec or go_plugin task runs
// in place, so its user must reach its task directory by path. The data
// dir itself and the tree below it are the agent's, made passable for the
// task (the task_dir hook, BuildTask); what lies above is the operator's,
// and the agent leaves it alone. The error names the first directory the
// user may not pass, with its mode and owner. Mode bits only: an ACL that
// lets the user through is not seen, and such a data dir is refused all
// the same.
func Reach(dataDir string, uid uint32, gids []uint32) error {
	if uid == 0 {
		return nil
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	// A path lookup passes the directories of the resolved path.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	var dirs []string
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == "/" {
			break
		}
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && !mayPass(st, uid, gids) {
			return &UnreachableError{Dir: d, Mode: fi.Mode(), UID: st.Uid, GID: st.Gid}
		}
	}
	return nil
}

// mayPass is the kernel's search-permission check on mode bits: the owner
// class if the uid owns it, else the group class if one of the gids is its
// group, else the others.
func mayPass(st *syscall.Stat_t, uid uint32, gids []uint32) bool {
	switch {
	case st.Uid == uid:
		return st.Mode&0o100 != 0
	case slices.Contains(gids, st.Gid):
		return st.Mode&0o010 != 0
	default:
		return st.Mode&0o001 != 0
	}
}

// UnreachableError is a directory on the way to the data dir that a task's
// user may not pass.
type UnreachableError struct {
	Dir      string
	Mode     os.FileMode
	UID, GID uint32
}

func (e *UnreachableError) Error() string {
	owner := strconv.FormatUint(uint64(e.UID), 10)
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	group := strconv.FormatUint(uint64(e.GID), 10)
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Sprintf("%s is %s %s:%s and does not let it pass", e.Dir, e.Mode, owner, group)
}
