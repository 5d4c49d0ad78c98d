package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"
)

// Top-level buckets. Adding one is a line here and in topBuckets: setup
// creates every missing bucket at each open, so a new, empty bucket needs no
// migration. Migrations are for changing the shape of data already stored.
const (
	bucketMeta    = "meta"
	bucketPlugins = "plugins"
	bucketAllocs  = "allocs"

	// keySchemaVersion holds the schema version as a big-endian uint64.
	keySchemaVersion = "schema_version"
)

func topBuckets() []string {
	return []string{bucketMeta, bucketPlugins, bucketAllocs, bucketJobs, bucketVolumes}
}

// migration upgrades a file from schema version from to from+1 inside one
// write transaction, which also records the new version, so a crash leaves
// the file at either version, never between.
type migration struct {
	from  int
	name  string
	apply func(tx *bbolt.Tx) error
}

// builtinMigrations is the upgrade history of this binary. The schema version
// it writes is len(builtinMigrations())+1.
func builtinMigrations() []migration {
	return []migration{
		{from: 1, name: "job records", apply: migrateJobRecords},
	}
}

func currentVersion(ms []migration) int { return len(ms) + 1 }

func checkMigrations(ms []migration) error {
	for i, m := range ms {
		if m.from != i+1 || m.apply == nil {
			return fmt.Errorf("migration list is broken at entry %d (%q): want from=%d and a function", i, m.name, i+1)
		}
	}
	return nil
}

// setup turns an open bbolt file into a state store of the current schema:
// a file with no buckets at all (new, or created by a crash before the first
// commit) is initialised; a file without our meta bucket but with other data
// is refused; an older schema is backed up and migrated.
func (db *DB) setup(ms []migration) error {
	want := currentVersion(ms)
	var (
		version int
		others  []string
	)
	err := db.view("read schema", func(tx *bbolt.Tx) error {
		if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			if string(name) != bucketMeta && len(others) < 5 {
				others = append(others, string(name))
			}
			return nil
		}); err != nil {
			return err
		}
		meta := tx.Bucket([]byte(bucketMeta))
		if meta == nil {
			return nil
		}
		raw := meta.Get([]byte(keySchemaVersion))
		if len(raw) != 8 {
			return fmt.Errorf("%w: schema version record is %d bytes, want 8", ErrCorrupt, len(raw))
		}
		v := binary.BigEndian.Uint64(raw)
		if v == 0 || v > 1<<31 {
			return fmt.Errorf("%w: schema version %d is impossible", ErrCorrupt, v)
		}
		version = int(v)
		return nil
	})
	if err != nil {
		return err
	}

	switch {
	case version == 0 && len(others) > 0:
		return fmt.Errorf("%w: %s is a bbolt database without pluginhost's %q bucket (it holds %q); refusing to use it",
			ErrNotStateFile, db.path, bucketMeta, others)
	case version == 0:
		db.log.Info("initialising new state file", "path", db.path, "schema_version", want)
	case version > want:
		return fmt.Errorf("%w: state file %s has schema version %d, this pluginhost understands up to %d: upgrade pluginhost",
			ErrSchemaTooNew, db.path, version, want)
	case version < want:
		if err := db.backup(version); err != nil {
			return err
		}
		for _, m := range ms[version-1:] {
			db.log.Info("upgrading state file", "path", db.path, "from", m.from, "to", m.from+1, "migration", m.name)
			if err := db.update("migrate "+m.name, func(tx *bbolt.Tx) error {
				if err := m.apply(tx); err != nil {
					return err
				}
				return putVersion(tx, m.from+1)
			}); err != nil {
				return fmt.Errorf("upgrade state file from schema version %d: %w", m.from, err)
			}
		}
	}

	// Every open ends with one commit that creates missing buckets and
	// records the version; it costs a single fsync and keeps new buckets free.
	if err := db.update("create buckets", func(tx *bbolt.Tx) error {
		for _, name := range topBuckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("bucket %q: %w", name, err)
			}
		}
		return putVersion(tx, want)
	}); err != nil {
		return err
	}
	db.version = want
	return nil
}

func putVersion(tx *bbolt.Tx, v int) error {
	meta, err := tx.CreateBucketIfNotExists([]byte(bucketMeta))
	if err != nil {
		return err
	}
	var raw [8]byte
	binary.BigEndian.PutUint64(raw[:], uint64(v))
	return meta.Put([]byte(keySchemaVersion), raw[:])
}

// BackupPath is where Open copies a state file of schema version v before
// upgrading it.
func BackupPath(path string, v int) string {
	return fmt.Sprintf("%s.backup-v%d", path, v)
}

// backup writes a consistent copy of the file, as of now, to BackupPath. It
// goes through a temporary name and a rename so that a crash never leaves a
// half-written backup under the real name, and replaces an older backup of
// the same version: the newest data at that version is the useful one.
func (db *DB) backup(version int) error {
	dst := BackupPath(db.path, version)
	tmp := dst + ".tmp"
	err := db.view("back up", func(tx *bbolt.Tx) error {
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := tx.WriteTo(f); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	})
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err == nil {
		err = syncDir(filepath.Dir(dst))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("back up state file %s to %s before upgrading it: %w", db.path, dst, err)
	}
	db.log.Info("backed up state file before upgrade", "backup", dst, "schema_version", version)
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}
