package state

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pluginhost/pluginhost/dynamic"
	"go.etcd.io/bbolt"
)

func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: hclog.DefaultOutput})
}

// openTest opens path and closes it when the test ends.
func openTest(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func statePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "state.db")
}

func testPlugin(i int) *dynamic.PluginInfo {
	return &dynamic.PluginInfo{
		Type:           dynamic.PluginTypeCSINode,
		Name:           fmt.Sprintf("plugin-%d", i%7),
		Version:        "1.0.0",
		AllocID:        fmt.Sprintf("alloc-%06d", i),
		ConnectionInfo: &dynamic.ConnectionInfo{SocketPath: fmt.Sprintf("/var/lib/ph/csi/%d/csi.sock", i)},
		Options:        map[string]string{"MountDir": "/csi"},
		Seq:            uint64(i + 1),
		RegisteredAt:   time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC),
	}
}

// populate writes n plugins and a few allocations with tasks and events, the
// kind of file a running agent leaves behind.
func populate(t testing.TB, path string, n int) {
	t.Helper()
	db, err := Open(path, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer db.Close()
	for i := range n {
		if err := db.PutPlugins(testPlugin(i)); err != nil {
			t.Fatalf("PutPlugins: %v", err)
		}
	}
	for i := range 3 {
		id := fmt.Sprintf("a-%d", i)
		if err := db.PutAlloc(&Alloc{ID: id, JobID: "job", DesiredStatus: AllocDesiredStatusRun}); err != nil {
			t.Fatalf("PutAlloc: %v", err)
		}
		if err := db.PutTaskState(id, "web", &TaskState{State: TaskStateRunning}); err != nil {
			t.Fatalf("PutTaskState: %v", err)
		}
		for j := range 5 {
			if err := db.AppendTaskEvent(id, "web", &TaskEvent{Type: "Started", Message: fmt.Sprint(j)}); err != nil {
				t.Fatalf("AppendTaskEvent: %v", err)
			}
		}
	}
}

func mustPlugins(t testing.TB, db *DB) map[string]*dynamic.PluginInfo {
	t.Helper()
	ps, err := db.Plugins()
	if err != nil {
		t.Fatalf("Plugins: %v", err)
	}
	out := make(map[string]*dynamic.PluginInfo, len(ps))
	for _, p := range ps {
		out[p.Type+"/"+p.Name+"/"+p.AllocID] = p
	}
	return out
}

// schemaVersion returns the schema version of the open file.
func (db *DB) schemaVersion() int { return db.version }

// taskEvents returns a task's retained events, oldest first. An allocation
// that is not stored is ErrAllocNotFound; a task without events is empty.
func (db *DB) taskEvents(allocID, task string) ([]*TaskEvent, error) {
	if err := checkTaskNames(allocID, task); err != nil {
		return nil, fmt.Errorf("task events: %w", err)
	}
	var out []*TaskEvent
	err := db.view("read task events "+allocID+"/"+task, func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte(bucketAllocs)).Bucket([]byte(allocID)) == nil {
			return fmt.Errorf("%w: %s", ErrAllocNotFound, allocID)
		}
		tb := taskBucket(tx, allocID, task)
		if tb == nil {
			return nil
		}
		var err error
		out, err = readEvents(tb)
		return err
	})
	return out, err
}
