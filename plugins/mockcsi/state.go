package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stateVersion is bumped whenever stateFile changes incompatibly; load
// refuses files it does not understand rather than guessing.
const stateVersion = 1

// stateFile is everything mockcsi remembers. It is small (one entry per
// volume and snapshot), so it is rewritten whole on every change: that keeps
// each change atomic without a database.
type stateFile struct {
	Version   int                  `json:"version"`
	Volumes   map[string]*volume   `json:"volumes"`
	Snapshots map[string]*snapshot `json:"snapshots"`
}

type volume struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	CapacityBytes int64             `json:"capacity_bytes"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	// MutableParameters are the ones ControllerModifyVolume may change.
	MutableParameters map[string]string `json:"mutable_parameters,omitempty"`
	// SourceSnapshotID / SourceVolumeID record the content source, so that
	// a repeated CreateVolume with another source is told apart.
	SourceSnapshotID string    `json:"source_snapshot_id,omitempty"`
	SourceVolumeID   string    `json:"source_volume_id,omitempty"`
	CreatedAt        time.Time `json:"created_at"`

	// Published: controller side, node ID → publication.
	Published map[string]*controllerPublication `json:"published,omitempty"`
	// Staged: node side, staging path → how it was staged.
	Staged map[string]*stageRecord `json:"staged,omitempty"`
	// Targets: node side, target path → how it was published.
	Targets map[string]*targetRecord `json:"targets,omitempty"`
}

type controllerPublication struct {
	Readonly   bool  `json:"readonly"`
	AccessMode int32 `json:"access_mode"`
}

type stageRecord struct {
	Method     string `json:"method"` // mountBind or mountSymlink
	AccessMode int32  `json:"access_mode"`
}

type targetRecord struct {
	Method      string `json:"method"`
	Readonly    bool   `json:"readonly"`
	AccessMode  int32  `json:"access_mode"`
	StagingPath string `json:"staging_path,omitempty"`
}

type snapshot struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	SourceVolumeID string    `json:"source_volume_id"`
	SizeBytes      int64     `json:"size_bytes"`
	CreatedAt      time.Time `json:"created_at"`
}

// store owns the state directory:
//
//	<dir>/state.json        the stateFile
//	<dir>/volumes/<id>/     a volume's content
//	<dir>/snapshots/<id>/   a snapshot's content (a copy of the volume)
//	<dir>/lock              held shared by every mockcsi using the dir
//	<dir>/state.lock        held around each read or change of state.json
//
// Invariant: a record in state.json implies its directory exists. Content
// directories are therefore created before their record is committed and
// removed after their record is deleted; a crash in between leaves only an
// orphan directory, which open removes.
//
// Several mockcsi processes may share one state dir. That is what a plugin
// job's update does under pluginhost, which starts the new allocation
// before it stops the old one, and what keeps a plugin's volumes when its
// state dir outlives the allocation (a host path, not NOMAD_TASK_DIR). So
// state.json is not cached blindly: each view and update takes state.lock
// (shared, or exclusive to change it) and rereads the file when another
// process replaced it since (a commit renames a new file in, so a changed
// inode means a changed state). Orphans are only removed by a process that
// finds the dir unused: a directory another live process just made for a
// create it has not committed yet is not an orphan.
type store struct {
	dir string
	// owner is held shared (flock) for the store's life, so a new process
	// can tell whether another one uses the dir.
	owner *os.File
	// dataLock is flocked around each view and update.
	dataLock *os.File

	mu   sync.Mutex
	data *stateFile
	// ino is the inode of the state.json data was read from, 0 if none.
	ino uint64
	// busy holds the keys of operations in flight in this process; see
	// acquire.
	busy map[string]struct{}
}

func openStore(dir string) (_ *store, err error) {
	for _, d := range []string{dir, filepath.Join(dir, "volumes"), filepath.Join(dir, "snapshots")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	s := &store{dir: dir, busy: map[string]struct{}{}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.owner, err = os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	if s.dataLock, err = os.OpenFile(filepath.Join(dir, "state.lock"), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	alone := unix.Flock(int(s.owner.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
	if alone {
		// Nobody else can be between making a directory and committing
		// its record.
		err = s.withData(unix.LOCK_EX, func() error {
			if err := s.refresh(); err != nil {
				return err
			}
			return s.removeOrphans()
		})
		if err != nil {
			return nil, err
		}
	}
	// Shared from now on, so that a later process may join. Converting
	// the exclusive lock is not atomic, which is harmless: a process that
	// slips in between only skips its orphan scan.
	if err := unix.Flock(int(s.owner.Fd()), unix.LOCK_SH); err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	if !alone {
		if err := s.withData(unix.LOCK_SH, s.refresh); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// close releases the state dir. The process exiting releases it too,
// which is how the binary lets go.
func (s *store) close() {
	for _, f := range []*os.File{s.owner, s.dataLock} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (s *store) statePath() string            { return filepath.Join(s.dir, "state.json") }
func (s *store) volumeDir(id string) string   { return filepath.Join(s.dir, "volumes", id) }
func (s *store) snapshotDir(id string) string { return filepath.Join(s.dir, "snapshots", id) }

// withData runs fn holding state.lock in mode (unix.LOCK_SH or LOCK_EX).
// The caller holds s.mu, or is openStore.
func (s *store) withData(mode int, fn func() error) error {
	if err := unix.Flock(int(s.dataLock.Fd()), mode); err != nil {
		return fmt.Errorf("lock state: %w", err)
	}
	defer func() { _ = unix.Flock(int(s.dataLock.Fd()), unix.LOCK_UN) }()
	return fn()
}

// refresh rereads state.json if it is not the file s.data came from.
// The caller holds state.lock.
func (s *store) refresh() error {
	var st unix.Stat_t
	ino := uint64(0)
	if err := unix.Stat(s.statePath(), &st); err == nil {
		ino = st.Ino
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("stat state: %w", err)
	}
	if s.data != nil && ino == s.ino {
		return nil
	}
	data, err := readState(s.statePath())
	if err != nil {
		return err
	}
	s.data, s.ino = data, ino
	return nil
}

func readState(path string) (*stateFile, error) {
	empty := &stateFile{Version: stateVersion, Volumes: map[string]*volume{}, Snapshots: map[string]*snapshot{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, fmt.Errorf("decode state %s: %w", path, err)
	}
	if sf.Version != stateVersion {
		return nil, fmt.Errorf("state %s has version %d, this mockcsi understands %d", path, sf.Version, stateVersion)
	}
	if sf.Volumes == nil {
		sf.Volumes = map[string]*volume{}
	}
	if sf.Snapshots == nil {
		sf.Snapshots = map[string]*snapshot{}
	}
	return &sf, nil
}

// removeOrphans deletes content directories without a record: leftovers of
// a crash between creating a directory and committing its record, or
// between deleting a record and its directory. Temporary copies (*.tmp) are
// always leftovers.
func (s *store) removeOrphans() error {
	for _, kind := range []string{"volumes", "snapshots"} {
		entries, err := os.ReadDir(filepath.Join(s.dir, kind))
		if err != nil {
			return fmt.Errorf("scan %s: %w", kind, err)
		}
		for _, e := range entries {
			id := e.Name()
			known := false
			if kind == "volumes" {
				_, known = s.data.Volumes[id]
			} else {
				_, known = s.data.Snapshots[id]
			}
			if !known {
				if err := os.RemoveAll(filepath.Join(s.dir, kind, id)); err != nil {
					return fmt.Errorf("remove orphan %s/%s: %w", kind, id, err)
				}
			}
		}
	}
	return nil
}

// view runs fn with the state locked. fn must not keep references. When
// the state cannot be reread, fn sees the last state this process knew.
func (s *store) view(fn func(*stateFile)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.withData(unix.LOCK_SH, func() error {
		// An unreadable file is the next update's error to report.
		_ = s.refresh()
		return nil
	})
	fn(s.data)
}

// volumeName returns the name of the volume with ID id, if there is one.
func (s *store) volumeName(id string) (name string, ok bool) {
	s.view(func(sf *stateFile) {
		if v, found := sf.Volumes[id]; found {
			name, ok = v.Name, true
		}
	})
	return name, ok
}

// update applies fn to a copy of the state and commits the copy to disk; the
// in-memory state changes only if the write succeeded, so a failed write
// (disk full, read-only dir) never leaves memory and disk disagreeing.
// If fn returns an error nothing is written.
func (s *store) update(fn func(*stateFile) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	lerr := s.withData(unix.LOCK_EX, func() error {
		if rerr := s.refresh(); rerr != nil {
			err = status.Errorf(codes.Internal, "reread state: %v", rerr)
			return nil
		}
		err = s.commit(fn)
		return nil
	})
	if lerr != nil {
		return status.Errorf(codes.Internal, "%v", lerr)
	}
	return err
}

// commit is update's work, with s.mu and state.lock held.
func (s *store) commit(fn func(*stateFile) error) error {
	cur, err := json.Marshal(s.data)
	if err != nil {
		return status.Errorf(codes.Internal, "encode state: %v", err)
	}
	var next stateFile
	if err := json.Unmarshal(cur, &next); err != nil {
		return status.Errorf(codes.Internal, "copy state: %v", err)
	}
	if next.Volumes == nil {
		next.Volumes = map[string]*volume{}
	}
	if next.Snapshots == nil {
		next.Snapshots = map[string]*snapshot{}
	}
	if err := fn(&next); err != nil {
		return err
	}
	b, err := json.MarshalIndent(&next, "", "  ")
	if err != nil {
		return status.Errorf(codes.Internal, "encode state: %v", err)
	}
	if err := writeFileAtomic(s.statePath(), b); err != nil {
		return status.Errorf(codes.Internal, "commit state: %v", err)
	}
	s.data = &next
	var st unix.Stat_t
	if err := unix.Stat(s.statePath(), &st); err == nil {
		s.ino = st.Ino
	} else {
		// Unknown: the next view rereads the file just written.
		s.ino = 0
	}
	return nil
}

// acquire marks keys busy for the duration of one operation. CSI wants
// ABORTED, not queuing, when an operation on the same volume is already in
// flight: the CO retries with backoff and the plugin holds no waiting
// goroutines.
func (s *store) acquire(keys ...string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if _, ok := s.busy[k]; ok {
			return nil, status.Errorf(codes.Aborted, "an operation on %s is already in progress", k)
		}
	}
	for _, k := range keys {
		s.busy[k] = struct{}{}
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, k := range keys {
			delete(s.busy, k)
		}
	}, nil
}

// writeFileAtomic replaces path with data so that a reader, or a restart
// after a crash at any point, sees either the old or the new content: write
// a temp file in the same directory, fsync it, rename it over path, fsync
// the directory so that the rename itself is durable.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// copyTree copies the regular files, directories and symlinks under src to
// dst (which must not exist). It is how snapshots and clones are made. A
// large copy stops when ctx ends; the caller discards the partial copy.
func copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		default:
			// Devices, sockets and fifos have no content to copy.
			return nil
		}
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := out.ReadFrom(in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// materialize creates final by filling a temporary sibling and renaming it,
// so that a half-copied directory never carries a real ID. fill gets the
// temporary path, which does not exist yet.
func materialize(final string, fill func(tmp string) error) error {
	tmp := final + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return syncDir(filepath.Dir(final))
}

// dirUsage returns the bytes and inodes used under dir.
func dirUsage(dir string) (bytes, inodes int64, err error) {
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		inodes++
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			bytes += info.Size()
		}
		return nil
	})
	return bytes, inodes, err
}
