package state

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/bbolt"
)

// DefaultLockTimeout is how long Open waits for another process to release
// the state file before giving up.
const DefaultLockTimeout = time.Second

// Errors callers can test for with errors.Is. Every returned error also names
// the file, so that it can be shown to an operator as it is.
var (
	// ErrLocked: another process holds the state file.
	ErrLocked = errors.New("state file is locked")
	// ErrCorrupt: the file exists but is not a readable bbolt database.
	ErrCorrupt = errors.New("state file is corrupt")
	// ErrNotStateFile: a valid bbolt database that pluginhost did not write.
	ErrNotStateFile = errors.New("not a pluginhost state file")
	// ErrSchemaTooNew: written by a newer pluginhost.
	ErrSchemaTooNew = errors.New("state file schema is newer than this pluginhost")
	// ErrAllocNotFound: a task record was written for an unknown allocation.
	ErrAllocNotFound = errors.New("allocation not found in state")
)

// Options tune Open. The zero value is usable.
type Options struct {
	// Logger is the parent logger; the store logs under the name "state".
	Logger hclog.Logger
	// LockTimeout bounds the wait for the file lock (DefaultLockTimeout if
	// zero). It is never infinite: a second agent on the same data dir must
	// fail fast, not hang.
	LockTimeout time.Duration
	// Commits, if set, is told about every write transaction (the agent's
	// metrics).
	Commits CommitObserver

	// migrations replaces the built-in upgrade list, for tests that need a
	// schema history this binary does not have.
	migrations []migration
}

// DB is the agent's state store. Its methods are safe for concurrent use;
// each write is one bbolt transaction, durable when the method returns.
type DB struct {
	path    string
	bolt    *bbolt.DB
	log     hclog.Logger
	version int
	// batcher groups concurrent volume writes into shared commits.
	batcher batcher
	// vols saves decoding volume records that have not changed.
	vols    volumeCache
	commits CommitObserver
}

// Open opens or creates the state file at path, takes its lock, and upgrades
// its schema if it was written by an older pluginhost (after writing a backup
// copy next to it). It never starts empty over a file it cannot read.
func Open(path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("open state: empty path")
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	log = log.Named("state")
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	migrations := opts.migrations
	if migrations == nil {
		migrations = builtinMigrations()
	}
	if err := checkMigrations(migrations); err != nil {
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}

	fresh, err := precheckFile(path)
	if err != nil {
		return nil, err
	}

	db := &DB{path: path, log: log, commits: opts.Commits, batcher: newBatcher(groupWindow, minGroupGap)}
	if err := db.open(timeout, migrations, fresh); err != nil {
		return nil, err
	}
	log.Debug("state opened", "path", path, "schema_version", db.version)
	return db, nil
}

// open verifies an existing file, then opens it for writing and brings its
// schema up to date.
func (db *DB) open(timeout time.Duration, migrations []migration, fresh bool) error {
	if !fresh {
		if err := db.verify(timeout); err != nil {
			return err
		}
	}
	b, err := db.openBolt(timeout, false)
	if err != nil {
		return err
	}
	db.bolt = b
	if err := db.setup(migrations); err != nil {
		_ = b.Close()
		return err
	}
	return nil
}

// verify reads every page of an existing file through a read-only handle
// before the read-write open. The read-write open (NoFreelistSync) rebuilds
// the freelist by walking the whole tree on a goroutine of bbolt's own,
// where a damaged page is an unrecoverable crash; walking it here first,
// on this goroutine with faults turned into panics and panics into errors,
// means bbolt only ever walks a tree that has already been read once.
func (db *DB) verify(timeout time.Duration) (err error) {
	b, err := db.openBolt(timeout, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := b.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close state file %s after verifying it: %w", db.path, cerr)
		}
	}()
	defer db.recoverInto("verify", &err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return b.View(func(tx *bbolt.Tx) error {
		var touched byte
		err := tx.ForEach(func(name []byte, bk *bbolt.Bucket) error {
			touched ^= walkBucket(bk, 0)
			return nil
		})
		_ = touched
		if err != nil {
			return err
		}
		if err := checkRecords(tx); err != nil {
			return fmt.Errorf("state file %s has a damaged record, left as it was: %w", db.path, err)
		}
		return nil
	})
}

// checkRecords decodes every record the agent will read at start, with the
// readers it will use, so that a damaged record refuses the file here,
// before a migration, a backup or the open's own commit has written
// anything: a refused file is left as it was.
func checkRecords(tx *bbolt.Tx) error {
	if _, err := readPlugins(tx); err != nil {
		return err
	}
	if _, err := readAllocs(tx); err != nil {
		return err
	}
	if _, err := readVolumes(tx); err != nil {
		return err
	}
	return readAllJobs(tx)
}

// maxBucketDepth bounds recursion through nested buckets; ours nest four
// deep (allocs/<id>/tasks/<task>/events), so anything far deeper is damage.
const maxBucketDepth = 32

// walkBucket reads the first and last byte of every key and value under b,
// which pulls in every branch, leaf and overflow page; a page that is not in
// the file faults, and a malformed one trips bbolt's own page checks.
func walkBucket(b *bbolt.Bucket, depth int) byte {
	if depth > maxBucketDepth {
		panic(fmt.Sprintf("buckets nested more than %d deep", maxBucketDepth))
	}
	var x byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		x ^= k[0] ^ k[len(k)-1]
		if v == nil {
			if child := b.Bucket(k); child != nil {
				x ^= walkBucket(child, depth+1)
			}
			continue
		}
		if len(v) > 0 {
			x ^= v[0] ^ v[len(v)-1]
		}
	}
	return x
}

// openBolt opens the file with bbolt, turning its lock timeout and its
// format errors into ours, and any panic or memory fault inside it into
// ErrCorrupt. When bbolt panics it has not closed the file, so the
// descriptor is captured and closed here: it carries the flock, and leaving
// it open would make the next Open in this process time out.
func (db *DB) openBolt(timeout time.Duration, readOnly bool) (b *bbolt.DB, err error) {
	var file *os.File
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				_ = file.Close()
			}
			b, err = nil, fmt.Errorf("%w: state file %s could not be read: %v", ErrCorrupt, db.path, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	bopts := &bbolt.Options{
		Timeout:  timeout,
		ReadOnly: readOnly,
		// See doc.go, "Commit cost", for why these two.
		FreelistType:   bbolt.FreelistMapType,
		NoFreelistSync: true,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	}
	b, err = bbolt.Open(db.path, 0o600, bopts)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, bbolt.ErrTimeout):
		return nil, fmt.Errorf("%w: state file %s is locked by another process (another pluginhost agent with the same data_dir?); gave up after %s",
			ErrLocked, db.path, timeout)
	case errors.Is(err, bbolt.ErrInvalid), errors.Is(err, bbolt.ErrChecksum), errors.Is(err, bbolt.ErrVersionMismatch):
		return nil, fmt.Errorf("%w: state file %s: %w", ErrCorrupt, db.path, err)
	}
	return nil, fmt.Errorf("open state file %s: %w", db.path, err)
}

// Path returns the state file's path.
func (db *DB) Path() string { return db.path }

// Close releases the file and its lock. It is safe to call more than once.
func (db *DB) Close() error {
	if db == nil || db.bolt == nil {
		return nil
	}
	if err := db.bolt.Close(); err != nil {
		return fmt.Errorf("close state file %s: %w", db.path, err)
	}
	return nil
}

// update runs fn in one write transaction, committed (and fsynced) before it
// returns. A panic inside bbolt, which means a damaged page, becomes an
// error: bbolt has already rolled the transaction back by then.
func (db *DB) update(op string, fn func(tx *bbolt.Tx) error) (err error) {
	defer db.recoverInto(op, &err)
	if err := db.commit(1, fn); err != nil {
		return fmt.Errorf("%s in state file %s: %w", op, db.path, err)
	}
	return nil
}

// view runs fn in one read transaction; see update for panics.
func (db *DB) view(op string, fn func(tx *bbolt.Tx) error) (err error) {
	defer db.recoverInto(op, &err)
	if err := db.bolt.View(fn); err != nil {
		return fmt.Errorf("%s in state file %s: %w", op, db.path, err)
	}
	return nil
}

func (db *DB) recoverInto(op string, err *error) {
	if r := recover(); r != nil {
		db.log.Error("bbolt panicked; the state file is damaged", "op", op, "panic", r)
		*err = fmt.Errorf("%w: %s in state file %s: %v", ErrCorrupt, op, db.path, r)
	}
}
