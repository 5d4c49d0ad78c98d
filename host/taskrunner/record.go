package taskrunner

import (
	"errors"
	"time"

	"github.com/pluginhost/pluginhost/host/state"
)

// change is one step of a task's life as the store sees it: events, a new
// state, a new (or no) handle. The runner applies it in memory and writes
// it in one commit, so a launch costs one fsync instead of one per record.
type change struct {
	events []*state.TaskEvent
	// state mutates the task's state; nil leaves it alone.
	state func(s *state.TaskState)
	// setHandle replaces the handle with handle (nil: forget it).
	setHandle bool
	handle    *state.TaskHandle
	// informational defers the write: the events are only announced
	// now, and stored with the task's next write. For events that say
	// nothing a restarted agent needs (Task Setup): losing one to a
	// kill -9 loses no state, and it saves a commit on the launch path.
	informational bool
}

// apply records c: in memory, then in the store together with every
// informational event still unsaved (and the allocation's derived status if
// the task's state changed), then tells OnEvent. OnEvent comes after the
// commit so that nothing outside the agent can see an event (Started above
// all) that a kill -9 could still take back.
func (tr *TaskRunner) apply(c change) {
	// writeMu makes the stored order of this task's events the order
	// they were emitted in, whichever goroutines emit them (the runner,
	// the CSI supervisor's poststart hook).
	tr.writeMu.Lock()
	tr.mu.Lock()
	tr.events = append(tr.events, c.events...)
	if len(tr.events) > maxEventsInMemory {
		tr.events = tr.events[len(tr.events)-maxEventsInMemory:]
	}
	if c.setHandle {
		tr.handle = c.handle
	}
	var st state.TaskState
	if c.state != nil {
		c.state(&tr.st)
		st = tr.st
	}
	var pending []*state.TaskEvent
	if c.informational {
		tr.unsaved = append(tr.unsaved, c.events...)
	} else {
		pending = append(tr.unsaved, c.events...)
		tr.unsaved = nil
	}
	tr.mu.Unlock()

	if !c.informational {
		err := tr.owner.write(c.state != nil, func(tx *state.Tx) error {
			for _, ev := range pending {
				if err := tx.AppendTaskEvent(tr.allocID, tr.task.Name, ev); err != nil {
					return err
				}
			}
			if c.setHandle {
				var err error
				if c.handle == nil {
					err = tx.DeleteTaskHandle(tr.allocID, tr.task.Name)
				} else {
					err = tx.PutTaskHandle(tr.allocID, tr.task.Name, c.handle)
				}
				if err != nil {
					return err
				}
			}
			if c.state != nil {
				return tx.PutTaskState(tr.allocID, tr.task.Name, &st)
			}
			return nil
		})
		// An allocation deleted under a late write (Destroy racing a
		// hook's event) has nothing left to record into.
		if err != nil && !errors.Is(err, state.ErrAllocNotFound) {
			tr.logger.Error("store task record", "error", err)
		}
	}
	tr.writeMu.Unlock()
	tr.announce(c.events)
}

// announce logs events and hands them to OnEvent and Metrics.
func (tr *TaskRunner) announce(events []*state.TaskEvent) {
	for _, ev := range events {
		tr.logger.Info("task event", "type", ev.Type, "msg", ev.Message)
		if tr.cfg.OnEvent != nil {
			tr.cfg.OnEvent(tr.allocID, tr.task.Name, ev)
		}
		if tr.cfg.Metrics != nil {
			countEvent(tr.cfg.Metrics, tr.labels(), ev)
		}
	}
}

func (tr *TaskRunner) emit(ev *state.TaskEvent) { tr.apply(change{events: []*state.TaskEvent{ev}}) }

func (tr *TaskRunner) setState(fn func(s *state.TaskState)) { tr.apply(change{state: fn}) }

// write commits fn, and with it the allocation's client status when a
// task's state changed (statusMayChange) and the status derived from its
// tasks is not the stored one: one commit for both.
func (ar *AllocRunner) write(statusMayChange bool, fn func(tx *state.Tx) error) error {
	if !statusMayChange {
		return ar.cfg.Store.Update(fn)
	}
	// persistMu: the status derived here and the alloc copy written must
	// not be overtaken by an older copy (see persistAlloc).
	ar.persistMu.Lock()
	defer ar.persistMu.Unlock()
	if ar.destroyed {
		return nil // the record is gone for good (Destroy)
	}
	status := ar.clientStatus()
	ar.mu.Lock()
	changed := ar.alloc.ClientStatus != status
	if changed {
		ar.alloc.ClientStatus = status
		ar.alloc.ModifyTime = time.Now()
	}
	a := ar.alloc
	ar.mu.Unlock()
	return ar.cfg.Store.Update(func(tx *state.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if changed {
			return tx.PutAlloc(&a)
		}
		return nil
	})
}
