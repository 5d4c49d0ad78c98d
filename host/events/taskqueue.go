package events

import (
	"context"
	"sync"

	"github.com/pluginhost/pluginhost/host/state"
)

// TaskQueue carries task events from the task runners' goroutines to the
// one goroutine that forwards them, without blocking the runners.
type TaskQueue struct {
	mu     sync.Mutex
	items  []TaskEvent
	wake   chan struct{}
	closed bool
}

// TaskEvent is one task's event, as a runner announced it.
type TaskEvent struct {
	AllocID, Task string
	Event         *state.TaskEvent
}

// NewTaskQueue returns an empty queue.
func NewTaskQueue() *TaskQueue { return &TaskQueue{wake: make(chan struct{}, 1)} }

// Push adds an event; it never blocks (taskrunner.Config.OnEvent).
func (q *TaskQueue) Push(allocID, task string, ev *state.TaskEvent) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, TaskEvent{allocID, task, ev})
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Pop waits for events and returns all of them; ok is false once the queue
// is closed and drained, or ctx ended.
func (q *TaskQueue) Pop(ctx context.Context) ([]TaskEvent, bool) {
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		if len(items) > 0 {
			return items, true
		}
		if closed {
			return nil, false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// Close ends the queue: Pop returns what is left, then false.
func (q *TaskQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}
