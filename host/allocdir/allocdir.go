package allocdir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Names of the tree's directories (Nomad's).
const (
	AllocsDir  = "alloc" // under the data dir
	SharedDir  = "alloc" // under an allocation's directory
	LogDir     = "logs"  // under SharedDir
	LocalDir   = "local"
	SecretsDir = "secrets"
	TaskTmpDir = "tmp"
	noGroup    = -1
)

// Owners says who owns an allocation's tree.
type Owners struct {
	// Group is the allocation's group (see the package doc), or -1 for
	// none.
	Group int
	// Chown is false where the agent cannot give files away (it is not
	// root): everything is then the agent's user's.
	Chown bool
}

// NoGroup is the Owners of an allocation without a group.
func NoGroup(chown bool) Owners { return Owners{Group: noGroup, Chown: chown} }

// spec is one directory of the tree: its owner and its mode with and
// without the allocation's group.
type spec struct {
	uid, gid         int
	mode, noGroupMod os.FileMode
}

var (
	allocsSpec = spec{0, 0, 0o711, 0o711}
	allocSpec  = spec{0, noGroup, 0o710, 0o711}
	// Sticky: a task may not rename or replace what it does not own
	// there, logs/ above all (see the package doc).
	sharedSpec = spec{0, noGroup, 0o770 | os.ModeSetgid | os.ModeSticky, 0o777 | os.ModeSticky}
	logsSpec   = spec{0, noGroup, 0o750 | os.ModeSetgid, 0o700}
	taskSpec   = spec{0, noGroup, 0o750, 0o755}
)

// Build makes (or sets right) the allocation-level part of the tree under
// dataDir: alloc/, alloc/<id>/, its shared alloc/ and alloc/logs/.
func Build(dataDir, allocID string, o Owners) error {
	return o.walk(dataDir, allocID, func(*beneath.Dir) error { return nil })
}

// BuildTask makes (or sets right) the whole tree of one task: Build's part,
// then <task>/, local/ and secrets/, the last two owned by uid:gid (-1:
// the agent's user). One pass from the data dir down, each directory
// opened beneath its parent, as the task dir hook needs before every
// launch.
func BuildTask(dataDir, allocID, task string, o Owners, uid, gid int) error {
	if uid < 0 {
		uid, gid = 0, 0
	}
	user := spec{uid, gid, 0o700, 0o700}
	return o.walk(dataDir, allocID, func(alloc *beneath.Dir) error {
		t, err := o.make(alloc, task, taskSpec)
		if err != nil {
			return err
		}
		defer t.Close()
		for _, name := range []string{LocalDir, SecretsDir} {
			d, err := o.make(t, name, user)
			if err != nil {
				return err
			}
			_ = d.Close()
		}
		return nil
	})
}

// walk makes alloc/, alloc/<id>/, alloc/<id>/alloc and its logs/, then
// calls more with alloc/<id>/.
func (o Owners) walk(dataDir, allocID string, more func(alloc *beneath.Dir) error) error {
	top, err := beneath.Open(dataDir)
	if err != nil {
		return fmt.Errorf("allocation directory: %w", err)
	}
	defer top.Close()
	allocs, err := o.make(top, AllocsDir, allocsSpec)
	if err != nil {
		return err
	}
	defer allocs.Close()
	alloc, err := o.make(allocs, allocID, allocSpec)
	if err != nil {
		return err
	}
	defer alloc.Close()
	shared, err := o.make(alloc, SharedDir, sharedSpec)
	if err != nil {
		return err
	}
	logs, err := o.make(shared, LogDir, logsSpec)
	_ = shared.Close()
	if err != nil {
		return err
	}
	_ = logs.Close()
	return more(alloc)
}

// make makes the directory name in parent if missing and gives it s's
// owner and mode, changing only what differs (most launches find the tree
// as the last one left it).
func (o Owners) make(parent *beneath.Dir, name string, s spec) (*beneath.Dir, error) {
	mode := s.mode
	gid := s.gid
	if o.Group == noGroup {
		mode = s.noGroupMod
	}
	if gid == noGroup {
		gid = max(o.Group, 0)
	}
	d, _, err := parent.Mkdir(name, mode)
	if err != nil {
		return nil, fmt.Errorf("allocation directory: %w", err)
	}
	st, err := d.Stat()
	if err == nil && o.Chown && (int(st.Uid) != s.uid || int(st.Gid) != gid) {
		// chown clears the setgid bit of a directory on some file
		// systems: the mode is checked after.
		if err = d.Chown(s.uid, gid); err == nil {
			st, err = d.Stat()
		}
	}
	if err == nil && beneath.FileMode(st.Mode) != mode {
		err = d.Chmod(mode)
	}
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("allocation directory: %w", err)
	}
	return d, nil
}

// LogFileMode is the mode of the log files in alloc/logs.
func LogFileMode(o Owners) os.FileMode {
	if o.Group == noGroup {
		return 0o600
	}
	return 0o640
}

// OpenLogs opens an allocation's log directory beneath dataDir, refusing
// a link anywhere below dataDir.
func OpenLogs(dataDir, allocID string) (*beneath.Dir, error) {
	top, err := beneath.Open(dataDir)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	return top.OpenDir(filepath.Join(AllocsDir, allocID, SharedDir, LogDir))
}
