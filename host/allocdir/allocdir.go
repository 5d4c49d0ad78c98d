package allocdir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pluginhost/pluginhost/internal/beneath"
)

// Names of the tree's directories (Nomad's).
const (
	AllocsDir   = "alloc" // under the data dir
	SharedDir   = "alloc" // under an allocation's directory
	LogDir      = "logs"  // under SharedDir
	LocalDir    = "local"
	SecretsDir  = "secrets"
	TaskTmpDir  = "tmp"
	noGroup     = -1
	agentsOwner = -1
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

// entry is one directory of the tree with its owner and mode.
type entry struct {
	rel       string
	uid, gid  int
	mode      os.FileMode
	noGroupMd os.FileMode // mode without a group
}

// Build makes (or sets right) the allocation-level part of the tree under
// dataDir: alloc/, alloc/<id>/, its shared alloc/ and alloc/logs/.
func Build(dataDir, allocID string, o Owners) error {
	id := allocID
	return o.apply(dataDir, []entry{
		{AllocsDir, 0, 0, 0o711, 0o711},
		{filepath.Join(AllocsDir, id), 0, o.Group, 0o710, 0o711},
		// Sticky: a task may not rename or replace what it does not
		// own there, logs/ above all (see the package doc).
		{filepath.Join(AllocsDir, id, SharedDir), 0, o.Group, 0o770 | os.ModeSetgid | os.ModeSticky, 0o777 | os.ModeSticky},
		{filepath.Join(AllocsDir, id, SharedDir, LogDir), 0, o.Group, 0o750 | os.ModeSetgid, 0o700},
	})
}

// BuildTask makes (or sets right) a task's directories: <task>/, local/
// and secrets/, the last two owned by uid:gid (-1: the agent's user).
func BuildTask(dataDir, allocID, task string, o Owners, uid, gid int) error {
	t := filepath.Join(AllocsDir, allocID, task)
	if uid < 0 {
		uid, gid = agentsOwner, agentsOwner
	}
	return o.apply(dataDir, []entry{
		{t, 0, o.Group, 0o750, 0o755},
		{filepath.Join(t, LocalDir), uid, gid, 0o700, 0o700},
		{filepath.Join(t, SecretsDir), uid, gid, 0o700, 0o700},
	})
}

// LogFileMode is the mode of the log files in alloc/logs.
func LogFileMode(o Owners) os.FileMode {
	if o.Group == noGroup {
		return 0o600
	}
	return 0o640
}

// apply makes each entry beneath dataDir in order, then sets its owner and
// mode through the descriptor it was opened as.
func (o Owners) apply(dataDir string, es []entry) error {
	top, err := beneath.Open(dataDir)
	if err != nil {
		return fmt.Errorf("allocation directory: %w", err)
	}
	defer top.Close()
	for _, e := range es {
		mode := e.mode
		if o.Group == noGroup {
			mode = e.noGroupMd
		}
		d, err := top.MkdirAll(e.rel, mode)
		if err != nil {
			return fmt.Errorf("allocation directory: %w", err)
		}
		err = o.set(d, e, mode)
		_ = d.Close()
		if err != nil {
			return fmt.Errorf("allocation directory: %w", err)
		}
	}
	return nil
}

func (o Owners) set(d *beneath.Dir, e entry, mode os.FileMode) error {
	if o.Chown {
		uid, gid := e.uid, e.gid
		if gid == noGroup {
			gid = 0
		}
		if uid == agentsOwner {
			uid, gid = 0, 0
		}
		// chown clears the setgid bit of a directory on some file
		// systems: the mode comes after.
		if err := d.Chown(uid, gid); err != nil {
			return err
		}
	}
	return d.Chmod(mode)
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
