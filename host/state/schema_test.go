package state

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/dynamic"
	"go.etcd.io/bbolt"
)

// tagPlugins is a migration that changes stored data, as a real one would:
// it rewrites every plugin record and adds a bucket.
// base is the schema version this binary writes: test migrations go on
// from there.
var base = currentVersion(builtinMigrations())

func tagPlugins(calls *int) migration {
	return migration{from: base, name: "tag plugins", apply: func(tx *bbolt.Tx) error {
		*calls++
		if _, err := tx.CreateBucket([]byte("widgets")); err != nil {
			return err
		}
		b := tx.Bucket([]byte(bucketPlugins))
		type rec struct {
			k []byte
			v map[string]any
		}
		var recs []rec
		if err := forEachJSON(b, func(k []byte, v *map[string]any) error {
			opts, _ := (*v)["Options"].(map[string]any)
			if opts == nil {
				opts = map[string]any{}
			}
			opts["migrated"] = "v2"
			(*v)["Options"] = opts
			recs = append(recs, rec{append([]byte(nil), k...), *v})
			return nil
		}); err != nil {
			return err
		}
		for _, r := range recs {
			if err := putJSON(b, r.k, r.v); err != nil {
				return err
			}
		}
		return nil
	}}
}

func fillWidgets(calls *int) migration {
	return migration{from: base + 1, name: "fill widgets", apply: func(tx *bbolt.Tx) error {
		*calls++
		return tx.Bucket([]byte("widgets")).Put([]byte("w"), []byte("1"))
	}}
}

func TestUpgrade(t *testing.T) {
	path := statePath(t)
	populate(t, path, 20)
	var before map[string]*dynamic.PluginInfo
	withDB(t, path, Options{}, func(db *DB) { before = mustPlugins(t, db) })

	var tagCalls, fillCalls int
	upgraded := append(builtinMigrations(), tagPlugins(&tagCalls), fillWidgets(&fillCalls))
	db := openTest(t, path, Options{migrations: upgraded})
	if got := db.schemaVersion(); got != base+2 {
		t.Fatalf("SchemaVersion() = %d after upgrade, want %d", got, base+2)
	}
	after := mustPlugins(t, db)
	if len(after) != len(before) {
		t.Fatalf("%d plugins after upgrade, want %d", len(after), len(before))
	}
	for k, p := range after {
		if p.Options["migrated"] != "v2" || p.AllocID != before[k].AllocID || p.Seq != before[k].Seq {
			t.Fatalf("plugin %s after upgrade: %+v", k, p)
		}
	}
	allocs, err := db.LoadAllocs()
	if err != nil || len(allocs) != 3 || len(allocs[0].Tasks["web"].Events) != 5 {
		t.Fatalf("allocations after upgrade: %v, %+v", err, allocs)
	}
	if err := db.view("check widgets", func(tx *bbolt.Tx) error {
		if string(tx.Bucket([]byte("widgets")).Get([]byte("w"))) != "1" {
			return errors.New("second migration did not run")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The backup is the file as it was: version base, untagged, still opens.
	backup := BackupPath(path, base)
	if _, err := os.Stat(backup + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary backup left behind: %v", err)
	}
	bdb := openTest(t, backup, Options{})
	if got := bdb.schemaVersion(); got != base {
		t.Errorf("backup schema version %d, want %d", got, base)
	}
	old := mustPlugins(t, bdb)
	if len(old) != len(before) {
		t.Fatalf("backup holds %d plugins, want %d", len(old), len(before))
	}
	for k, p := range old {
		if _, tagged := p.Options["migrated"]; tagged {
			t.Fatalf("backup plugin %s was migrated", k)
		}
	}

	// Reopening an upgraded file runs nothing again and backs up nothing.
	withDB(t, path, Options{migrations: upgraded}, func(*DB) {})
	if tagCalls != 1 || fillCalls != 1 {
		t.Errorf("migrations ran %d and %d times, want once each", tagCalls, fillCalls)
	}
	if _, err := os.Stat(BackupPath(path, base+2)); !os.IsNotExist(err) {
		t.Errorf("backup of an up-to-date file written: %v", err)
	}

	// The pluginhost that wrote version base now refuses the file, clearly.
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), fmt.Sprintf("has schema version %d, this pluginhost understands up to %d", base+2, base)) {
		t.Fatalf("old binary opening upgraded file: %v", err)
	}
}

func TestFailedMigrationKeepsCommittedSteps(t *testing.T) {
	path := statePath(t)
	populate(t, path, 5)

	var tagCalls, fillCalls int
	failing := migration{from: base + 1, name: "broken", apply: func(tx *bbolt.Tx) error {
		if _, err := tx.CreateBucket([]byte("half-done")); err != nil {
			return err
		}
		return errors.New("disk says no")
	}}
	_, err := Open(path, Options{migrations: append(builtinMigrations(), tagPlugins(&tagCalls), failing)})
	if err == nil || !strings.Contains(err.Error(), "disk says no") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open with a failing migration: %v", err)
	}
	assertUnlocked(t, path)

	// The first step committed, the failed one left nothing behind.
	db := openTest(t, path, Options{migrations: append(builtinMigrations(), tagPlugins(&tagCalls))})
	if got := db.schemaVersion(); got != base+1 || tagCalls != 1 {
		t.Fatalf("after failed upgrade: version %d, tag ran %d times; want %d and 1", got, tagCalls, base+1)
	}
	if err := db.view("check", func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("half-done")) != nil {
			return errors.New("failed migration's writes were committed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, path, Options{migrations: append(builtinMigrations(), tagPlugins(&tagCalls), fillWidgets(&fillCalls))})
	if db.schemaVersion() != base+2 || fillCalls != 1 || tagCalls != 1 {
		t.Fatalf("retry: version %d, calls %d/%d", db.schemaVersion(), tagCalls, fillCalls)
	}
	for _, v := range []int{base, base + 1} {
		if _, err := os.Stat(BackupPath(path, v)); err != nil {
			t.Errorf("backup before upgrading from v%d: %v", v, err)
		}
	}
}

func TestBrokenMigrationList(t *testing.T) {
	ms := []migration{{from: 2, name: "skips one", apply: func(*bbolt.Tx) error { return nil }}}
	if _, err := Open(statePath(t), Options{migrations: ms}); err == nil || !strings.Contains(err.Error(), "skips one") {
		t.Fatalf("Open with a gap in the migration list: %v", err)
	}
}

// withDB opens path, runs fn and closes it again.
func withDB(t *testing.T, path string, opts Options, fn func(db *DB)) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	fn(db)
}
