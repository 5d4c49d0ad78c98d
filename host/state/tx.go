package state

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
)

// Tx is one read-write transaction over the allocation records. Update
// hands one to its function; everything written through it commits
// together, with one pair of fdatasyncs, or not at all. That is the point
// of it: a task launch writes the task's handle, state and events and the
// allocation's status, and five commits would be five times the fsync cost
// on the path to a running task.
//
// A Tx is only valid inside the function it was passed to, and like any
// bbolt write transaction it holds the store's single writer slot until
// that function returns: do no I/O other than the store's in it.
type Tx struct {
	tx *bbolt.Tx
	// vols is the store's volume decode cache (nil: decode every read).
	vols *volumeCache
}

// Update runs fn in one read-write transaction, committed and fsynced
// before Update returns. If fn returns an error nothing it wrote is kept.
// Errors name the state file and wrap what fn returned (ErrAllocNotFound
// among others); a damaged page becomes ErrCorrupt, never a panic.
func (db *DB) Update(fn func(tx *Tx) error) (err error) {
	if fn == nil {
		return fmt.Errorf("state file %s: update without a function", db.path)
	}
	defer db.recoverInto("update", &err)
	if err := db.commit(1, func(btx *bbolt.Tx) error { return fn(&Tx{tx: btx, vols: &db.vols}) }); err != nil {
		return fmt.Errorf("state file %s: %w", db.path, err)
	}
	return nil
}

// PutAlloc inserts or replaces an allocation's record, keeping its tasks.
func (t *Tx) PutAlloc(a *Alloc) error {
	if err := a.validate(); err != nil {
		return fmt.Errorf("put alloc: %w", err)
	}
	if err := t.putAlloc(a); err != nil {
		return fmt.Errorf("put alloc %s: %w", a.ID, err)
	}
	return nil
}

func (t *Tx) putAlloc(a *Alloc) error {
	b, err := t.tx.Bucket([]byte(bucketAllocs)).CreateBucketIfNotExists([]byte(a.ID))
	if err != nil {
		return err
	}
	return putJSON(b, []byte(keyAlloc), a)
}

// DeleteAlloc removes an allocation and all of its tasks' records; a
// missing allocation is not an error.
func (t *Tx) DeleteAlloc(allocID string) error {
	if err := checkName("alloc ID", allocID); err != nil {
		return fmt.Errorf("delete alloc: %w", err)
	}
	err := t.tx.Bucket([]byte(bucketAllocs)).DeleteBucket([]byte(allocID))
	if err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
		return fmt.Errorf("delete alloc %s: %w", allocID, err)
	}
	return nil
}

// PutTaskState records a task's state.
func (t *Tx) PutTaskState(allocID, task string, s *TaskState) error {
	if s == nil {
		return fmt.Errorf("put task state %s/%s: nil state", allocID, task)
	}
	return t.updateTask("put task state", allocID, task, func(tb *bbolt.Bucket) error {
		return putJSON(tb, []byte(keyTaskState), s)
	})
}

// PutTaskHandle records how to find a task's processes again.
func (t *Tx) PutTaskHandle(allocID, task string, h *TaskHandle) error {
	if h == nil {
		return fmt.Errorf("put task handle %s/%s: nil handle", allocID, task)
	}
	return t.updateTask("put task handle", allocID, task, func(tb *bbolt.Bucket) error {
		return putJSON(tb, []byte(keyTaskHandle), h)
	})
}

// DeleteTaskHandle forgets a task's handle (its processes are gone). A
// missing handle, task or allocation is not an error.
func (t *Tx) DeleteTaskHandle(allocID, task string) error {
	if err := checkTaskNames(allocID, task); err != nil {
		return fmt.Errorf("delete task handle: %w", err)
	}
	tb := taskBucket(t.tx, allocID, task)
	if tb == nil {
		return nil
	}
	if err := deleteKey(tb, []byte(keyTaskHandle)); err != nil {
		return fmt.Errorf("delete task handle %s/%s: %w", allocID, task, err)
	}
	return nil
}

// AppendTaskEvent adds an event to a task's history and drops the oldest
// beyond the last maxTaskEvents. The cost does not depend on how many events
// the task ever had: keys are the bucket's own sequence numbers, so the
// oldest is the first key, and at most one is dropped per append once full.
func (t *Tx) AppendTaskEvent(allocID, task string, ev *TaskEvent) error {
	if ev == nil {
		return fmt.Errorf("append task event %s/%s: nil event", allocID, task)
	}
	return t.updateTask("append task event", allocID, task, func(tb *bbolt.Bucket) error {
		eb, err := tb.CreateBucketIfNotExists([]byte(bucketEvents))
		if err != nil {
			return err
		}
		seq, err := eb.NextSequence()
		if err != nil {
			return err
		}
		if err := putJSON(eb, seqKey(seq), ev); err != nil {
			return err
		}
		if seq <= maxTaskEvents {
			return nil
		}
		oldest := seq - maxTaskEvents
		c := eb.Cursor()
		for k, _ := c.First(); k != nil && len(k) == 8 && binary.BigEndian.Uint64(k) <= oldest; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// updateTask runs fn on a task's bucket, creating it. Task records are only
// written under an allocation that has its alloc record (see allocs.go).
func (t *Tx) updateTask(op, allocID, task string, fn func(tb *bbolt.Bucket) error) error {
	if err := checkTaskNames(allocID, task); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	ab := t.tx.Bucket([]byte(bucketAllocs)).Bucket([]byte(allocID))
	if ab == nil || ab.Get([]byte(keyAlloc)) == nil {
		return fmt.Errorf("%s %s/%s: %w: %s", op, allocID, task, ErrAllocNotFound, allocID)
	}
	tasks, err := ab.CreateBucketIfNotExists([]byte(bucketTasks))
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", op, allocID, task, err)
	}
	tb, err := tasks.CreateBucketIfNotExists([]byte(task))
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", op, allocID, task, err)
	}
	if err := fn(tb); err != nil {
		return fmt.Errorf("%s %s/%s: %w", op, allocID, task, err)
	}
	return nil
}
