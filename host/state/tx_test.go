package state

import (
	"errors"
	"testing"
)

// TestUpdateIsAllOrNothing: a task launch's writes go in one Update; a
// failing write anywhere in it must leave none of the others behind.
func TestUpdateIsAllOrNothing(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	a := testAlloc("a")
	err := db.Update(func(tx *Tx) error {
		if err := tx.PutAlloc(a); err != nil {
			return err
		}
		if err := tx.AppendTaskEvent("a", "web", &TaskEvent{Type: "Received"}); err != nil {
			return err
		}
		if err := tx.PutTaskState("a", "web", &TaskState{State: TaskStatePending}); err != nil {
			return err
		}
		// A task of an allocation that is not stored: the whole
		// transaction must go.
		return tx.PutTaskHandle("ghost", "web", &TaskHandle{Pid: 42})
	})
	if !errors.Is(err, ErrAllocNotFound) {
		t.Fatalf("Update: %v, want ErrAllocNotFound", err)
	}
	if as, err := db.LoadAllocs(); err != nil || len(as) != 0 {
		t.Fatalf("after a failed Update: %s (%v), want nothing stored", dumpAllocs(as), err)
	}

	a.ClientStatus = AllocClientStatusRunning
	err = db.Update(func(tx *Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.PutAlloc(a) },
			func() error { return tx.AppendTaskEvent("a", "web", &TaskEvent{Type: "Received"}) },
			func() error { return tx.AppendTaskEvent("a", "web", &TaskEvent{Type: "Started"}) },
			func() error { return tx.PutTaskHandle("a", "web", &TaskHandle{Pid: 42, StartTime: 7}) },
			func() error { return tx.PutTaskState("a", "web", &TaskState{State: TaskStateRunning}) },
			func() error { return tx.DeleteTaskHandle("a", "never-ran") },
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	as, err := db.LoadAllocs()
	if err != nil || len(as) != 1 {
		t.Fatalf("LoadAllocs: %s (%v)", dumpAllocs(as), err)
	}
	rec := as[0].Tasks["web"]
	if as[0].Alloc.ClientStatus != AllocClientStatusRunning || rec == nil || rec.Handle == nil || rec.Handle.Pid != 42 ||
		rec.State == nil || rec.State.State != TaskStateRunning || len(rec.Events) != 2 ||
		rec.Events[0].Type != "Received" || rec.Events[1].Type != "Started" {
		t.Fatalf("stored %s", dumpAllocs(as))
	}
}

func TestUpdateBadInput(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	if err := db.Update(nil); err == nil {
		t.Fatal("Update(nil) succeeded")
	}
	for name, fn := range map[string]func(tx *Tx) error{
		"nil alloc":       func(tx *Tx) error { return tx.PutAlloc(nil) },
		"nil state":       func(tx *Tx) error { return tx.PutTaskState("a", "t", nil) },
		"nil handle":      func(tx *Tx) error { return tx.PutTaskHandle("a", "t", nil) },
		"nil event":       func(tx *Tx) error { return tx.AppendTaskEvent("a", "t", nil) },
		"empty task":      func(tx *Tx) error { return tx.DeleteTaskHandle("a", "") },
		"unknown alloc":   func(tx *Tx) error { return tx.AppendTaskEvent("nope", "t", &TaskEvent{}) },
		"bad client stat": func(tx *Tx) error { return tx.PutAlloc(&Alloc{ID: "a", ClientStatus: "up"}) },
	} {
		if err := db.Update(fn); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if as, err := db.LoadAllocs(); err != nil || len(as) != 0 {
		t.Fatalf("bad input stored %s (%v)", dumpAllocs(as), err)
	}
}
