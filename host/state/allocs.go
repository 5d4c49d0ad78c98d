package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"go.etcd.io/bbolt"
)

// Allocation layout, under the top-level "allocs" bucket:
//
//	allocs/<alloc id>/            one bucket per allocation
//	    alloc                     Alloc (JSON)
//	    tasks/<task name>/        one bucket per task
//	        state                 TaskState (JSON)
//	        handle                TaskHandle (JSON)
//	        events/<seq u64 BE>   TaskEvent (JSON), the last maxTaskEvents
//
// Deleting an allocation is deleting its bucket, so nothing of it can be left
// behind. Task records are only written under an allocation that has its
// alloc record: a late write from a task runner racing DeleteAlloc gets
// ErrAllocNotFound instead of resurrecting a headless allocation.
const (
	keyAlloc       = "alloc"
	bucketTasks    = "tasks"
	keyTaskState   = "state"
	keyTaskHandle  = "handle"
	bucketEvents   = "events"
	maxTaskEvents  = 100
	maxBucketNameN = bbolt.MaxKeySize
)

// Allocation desired and client statuses, as in Nomad.
const (
	AllocDesiredStatusRun  = "run"
	AllocDesiredStatusStop = "stop"

	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
)

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// Alloc is one allocation of a task group of a job on this agent.
type Alloc struct {
	ID        string
	JobID     string
	TaskGroup string
	// Index is the allocation's index within the group (0..Count-1).
	Index int
	// Job is the job as submitted, so a restored allocation runs what it was
	// started with even if the job file has changed since.
	Job *jobspec.Job
	// JobVersion is the version of the job record that Job is.
	JobVersion    uint64
	DesiredStatus string
	ClientStatus  string
	CreateTime    time.Time
	ModifyTime    time.Time
	// IDs are the dynamic ids the allocation holds (host/idpool), nil
	// for an allocation recorded without them (the range off, or an
	// older agent).
	IDs *AllocIDs `json:",omitempty"`
}

// AllocIDs are an allocation's dynamic ids: they stay its own until its
// directory is gone.
type AllocIDs struct {
	// Group is the gid its tasks share (package allocdir).
	Group uint32
	// Users is the uid of each exec task that names no user, by task
	// name; each is also that task's primary gid.
	Users map[string]uint32 `json:",omitempty"`
}

// UserOf is the dynamic uid of task, 0 if it has none.
func (ids *AllocIDs) UserOf(task string) uint32 {
	if ids == nil {
		return 0
	}
	return ids.Users[task]
}

// All lists every id the allocation holds.
func (ids *AllocIDs) All() []uint32 {
	if ids == nil {
		return nil
	}
	out := []uint32{ids.Group}
	for _, u := range ids.Users {
		out = append(out, u)
	}
	return out
}

// TaskState is a task's lifecycle state.
type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
}

// TaskEvent is one entry of a task's history.
type TaskEvent struct {
	Type     string
	Time     time.Time
	Message  string
	ExitCode int
	Signal   int
	Details  map[string]string
}

// TaskHandle is what the agent needs to find a task's processes again after
// it restarts.
type TaskHandle struct {
	Driver string
	Pid    int
	// StartTime is the process start time in clock ticks since boot
	// (/proc/<pid>/stat field 22); with Pid it tells the task from a
	// stranger that reused the pid.
	StartTime  uint64
	SocketPath string
	// Reattach is set for go-plugin tasks: the driver's own record, stored
	// as it is (a copy with the same fields bought nothing but a
	// hand-written conversion each way).
	Reattach        *driver.ReattachRecord
	LogmonPid       int
	LogmonStartTime uint64
	// CgroupPath names the task's control group ("" when it has none).
	CgroupPath string
}

// AllocState is everything stored about one allocation, as LoadAllocs
// returns it.
type AllocState struct {
	Alloc *Alloc
	// Tasks is keyed by task name.
	Tasks map[string]*TaskRecord
}

// TaskRecord is everything stored about one task; any part may be nil.
type TaskRecord struct {
	State  *TaskState
	Handle *TaskHandle
	// Events are oldest first.
	Events []*TaskEvent
}

func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s", what)
	}
	if len(s) > maxBucketNameN {
		return fmt.Errorf("%s is %d bytes, the limit is %d", what, len(s), maxBucketNameN)
	}
	return nil
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func (a *Alloc) validate() error {
	if a == nil {
		return errors.New("nil alloc")
	}
	if err := checkName("alloc ID", a.ID); err != nil {
		return err
	}
	if a.DesiredStatus != "" && !oneOf(a.DesiredStatus, AllocDesiredStatusRun, AllocDesiredStatusStop) {
		return fmt.Errorf("alloc %s: unknown desired status %q", a.ID, a.DesiredStatus)
	}
	if a.ClientStatus != "" && !oneOf(a.ClientStatus, AllocClientStatusPending, AllocClientStatusRunning,
		AllocClientStatusComplete, AllocClientStatusFailed) {
		return fmt.Errorf("alloc %s: unknown client status %q", a.ID, a.ClientStatus)
	}
	return nil
}

// PutAlloc inserts or replaces an allocation's record, keeping its tasks.
func (db *DB) PutAlloc(a *Alloc) error {
	if err := a.validate(); err != nil {
		return fmt.Errorf("put alloc: %w", err)
	}
	return db.update("put alloc "+a.ID, func(btx *bbolt.Tx) error {
		return (&Tx{tx: btx}).putAlloc(a)
	})
}

// DeleteAlloc removes an allocation and all of its tasks' records; a missing
// allocation is not an error.
func (db *DB) DeleteAlloc(allocID string) error {
	return db.Update(func(tx *Tx) error { return tx.DeleteAlloc(allocID) })
}

// Allocs returns every allocation record, ordered by ID.
func (db *DB) Allocs() ([]*Alloc, error) {
	var out []*Alloc
	err := db.view("list allocs", func(tx *bbolt.Tx) error {
		return eachAlloc(tx, func(id []byte, b *bbolt.Bucket) error {
			a, err := readAlloc(id, b)
			if err == nil {
				out = append(out, a)
			}
			return err
		})
	})
	return out, err
}

// PutTaskState records a task's state.
func (db *DB) PutTaskState(allocID, task string, s *TaskState) error {
	return db.Update(func(tx *Tx) error { return tx.PutTaskState(allocID, task, s) })
}

// PutTaskHandle records how to find a task's processes again.
func (db *DB) PutTaskHandle(allocID, task string, h *TaskHandle) error {
	return db.Update(func(tx *Tx) error { return tx.PutTaskHandle(allocID, task, h) })
}

// DeleteTaskHandle forgets a task's handle (its processes are gone). A
// missing handle, task or allocation is not an error.
func (db *DB) DeleteTaskHandle(allocID, task string) error {
	return db.Update(func(tx *Tx) error { return tx.DeleteTaskHandle(allocID, task) })
}

// AppendTaskEvent adds an event to a task's history and drops the oldest
// beyond the last maxTaskEvents (see Tx.AppendTaskEvent).
func (db *DB) AppendTaskEvent(allocID, task string, ev *TaskEvent) error {
	return db.Update(func(tx *Tx) error { return tx.AppendTaskEvent(allocID, task, ev) })
}

// LoadAllocs returns everything stored about every allocation, for the
// agent to restore at start, ordered by allocation ID. Any unreadable record
// fails the whole load: the agent must not run with part of its state
// silently missing.
func (db *DB) LoadAllocs() ([]*AllocState, error) {
	var out []*AllocState
	err := db.view("load allocs", func(tx *bbolt.Tx) error {
		var err error
		out, err = readAllocs(tx)
		return err
	})
	return out, err
}

func readAllocs(tx *bbolt.Tx) ([]*AllocState, error) {
	var out []*AllocState
	if tx.Bucket([]byte(bucketAllocs)) == nil {
		return nil, nil
	}
	err := eachAlloc(tx, func(id []byte, ab *bbolt.Bucket) error {
		a, err := readAlloc(id, ab)
		if err != nil {
			return err
		}
		as := &AllocState{Alloc: a, Tasks: map[string]*TaskRecord{}}
		tasks := ab.Bucket([]byte(bucketTasks))
		if tasks != nil {
			err = tasks.ForEachBucket(func(name []byte) error {
				tr, err := readTask(tasks.Bucket(name))
				if err != nil {
					return fmt.Errorf("alloc %s task %s: %w", id, name, err)
				}
				as.Tasks[string(name)] = tr
				return nil
			})
			if err != nil {
				return err
			}
		}
		out = append(out, as)
		return nil
	})
	return out, err
}

func checkTaskNames(allocID, task string) error {
	if err := checkName("alloc ID", allocID); err != nil {
		return err
	}
	return checkName("task name", task)
}

func taskBucket(tx *bbolt.Tx, allocID, task string) *bbolt.Bucket {
	ab := tx.Bucket([]byte(bucketAllocs)).Bucket([]byte(allocID))
	if ab == nil {
		return nil
	}
	tasks := ab.Bucket([]byte(bucketTasks))
	if tasks == nil {
		return nil
	}
	return tasks.Bucket([]byte(task))
}

func eachAlloc(tx *bbolt.Tx, fn func(id []byte, b *bbolt.Bucket) error) error {
	allocs := tx.Bucket([]byte(bucketAllocs))
	return allocs.ForEachBucket(func(id []byte) error {
		return fn(id, allocs.Bucket(id))
	})
}

func readAlloc(id []byte, b *bbolt.Bucket) (*Alloc, error) {
	a := new(Alloc)
	found, err := getJSON(b, []byte(keyAlloc), a)
	switch {
	case err != nil:
		return nil, fmt.Errorf("alloc %s: %w", id, err)
	case !found:
		return nil, fmt.Errorf("%w: alloc %s has task records but no alloc record", ErrCorrupt, id)
	case a.ID != string(id):
		return nil, fmt.Errorf("%w: alloc bucket %s holds the record of alloc %q", ErrCorrupt, id, a.ID)
	}
	return a, nil
}

func readTask(tb *bbolt.Bucket) (*TaskRecord, error) {
	tr := new(TaskRecord)
	var s TaskState
	if found, err := getJSON(tb, []byte(keyTaskState), &s); err != nil {
		return nil, err
	} else if found {
		tr.State = &s
	}
	var h TaskHandle
	if found, err := getJSON(tb, []byte(keyTaskHandle), &h); err != nil {
		return nil, err
	} else if found {
		tr.Handle = &h
	}
	events, err := readEvents(tb)
	if err != nil {
		return nil, err
	}
	tr.Events = events
	return tr, nil
}

func readEvents(tb *bbolt.Bucket) ([]*TaskEvent, error) {
	eb := tb.Bucket([]byte(bucketEvents))
	if eb == nil {
		return nil, nil
	}
	var out []*TaskEvent
	err := forEachJSON(eb, func(_ []byte, ev *TaskEvent) error {
		out = append(out, ev)
		return nil
	})
	return out, err
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// AllocEnded reports whether an allocation is over: its record is gone, or
// every one of its tasks is dead. The volume reconciler asks it of every
// claim, so it reads the task states and nothing else.
func (db *DB) AllocEnded(allocID string) (bool, error) {
	ended := true
	err := db.view("alloc ended "+allocID, func(tx *bbolt.Tx) error {
		allocs := tx.Bucket([]byte(bucketAllocs))
		ab := allocs.Bucket([]byte(allocID))
		if ab == nil {
			return nil
		}
		tasks := ab.Bucket([]byte(bucketTasks))
		if tasks == nil {
			ended = false // recorded, no task written yet: just created
			return nil
		}
		return tasks.ForEachBucket(func(name []byte) error {
			var s TaskState
			found, err := getJSON(tasks.Bucket(name), []byte(keyTaskState), &s)
			if err != nil {
				return fmt.Errorf("alloc %s task %s: %w", allocID, name, err)
			}
			if !found || s.State != TaskStateDead {
				ended = false
			}
			return nil
		})
	})
	return ended, err
}
