package idpool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Leases are the machine's record of which agent holds which dynamic id:
// one file per id in a directory every agent of the machine shares
// (/run/pluginhost/ids for root), holding the holder's data dir. Every
// agent defaults to the same range, 80000-89999; without the record two
// agents on one machine handed out the same uids, and a task of one could
// read the files of the other's task. A lease outlives its agent's
// restarts (the allocations it restores keep their ids) and ends with the
// machine (/run is memory), or when its holder's data dir no longer has a
// state file: an agent whose data dir was deleted holds nothing.
type Leases struct {
	dir   string
	owner []byte // this agent's data dir
}

// OpenLeases makes (or opens) the lease directory dir, root's and 0700,
// for the agent whose data dir is dataDir.
func OpenLeases(dir, dataDir string) (*Leases, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("id leases: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("id leases: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("id leases: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("id leases: %s is %v: want a directory only its owner writes", dir, fi.Mode())
	}
	l := &Leases{dir: dir, owner: []byte(abs)}
	l.sweep()
	return l, nil
}

// sweep removes the leases of agents whose data dir is gone (killed and
// deleted, as tests and dev agents are): they would be taken over one by
// one anyway, but would pile up until then.
func (l *Leases) sweep() {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(l.dir, e.Name())
		if holder, err := os.ReadFile(p); err == nil && !holderLive(holder) {
			_ = os.Remove(p)
		}
	}
}

// take leases id for this agent: true if it now holds it (a lease of its
// own from before counts), false if another live agent does.
func (l *Leases) take(id uint32) (bool, error) {
	p := l.path(id)
	for range 2 {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, werr := f.Write(l.owner)
			cerr := f.Close()
			if werr != nil || cerr != nil {
				_ = os.Remove(p)
				return false, fmt.Errorf("id lease %d: %w", id, errors.Join(werr, cerr))
			}
			return true, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return false, fmt.Errorf("id lease %d: %w", id, err)
		}
		holder, err := os.ReadFile(p)
		if err != nil {
			return false, fmt.Errorf("id lease %d: %w", id, err)
		}
		switch {
		case bytes.Equal(holder, l.owner):
			return true, nil
		case holderLive(holder):
			return false, nil
		}
		// A lease of an agent whose data dir is gone: it holds nothing.
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("id lease %d: %w", id, err)
		}
	}
	return false, nil
}

// drop ends this agent's lease of id; another's is left alone.
func (l *Leases) drop(id uint32) {
	p := l.path(id)
	if holder, err := os.ReadFile(p); err == nil && bytes.Equal(holder, l.owner) {
		_ = os.Remove(p)
	}
}

// holder is the data dir that leases id, "" if none does.
func (l *Leases) holder(id uint32) string {
	b, _ := os.ReadFile(l.path(id))
	return string(b)
}

func (l *Leases) path(id uint32) string {
	return filepath.Join(l.dir, strconv.FormatUint(uint64(id), 10))
}

// holderLive reports whether the data dir a lease names still has a state
// file: its agent may be down for a moment, but its tasks run on.
func holderLive(dataDir []byte) bool {
	_, err := os.Stat(filepath.Join(string(dataDir), "state.db"))
	return err == nil
}
