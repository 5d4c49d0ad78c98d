package runnertest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/state"
)

// EventLog records task events under a key of the test's choosing (the
// task's name, or the allocation's ID where a test runs several) and wakes
// those waiting on them.
type EventLog struct {
	mu     sync.Mutex
	all    []keyedEvent
	notify chan struct{}
}

type keyedEvent struct {
	key string
	ev  *state.TaskEvent
}

// NewEventLog returns an empty log.
func NewEventLog() *EventLog { return &EventLog{notify: make(chan struct{})} }

// Add records ev under key.
func (l *EventLog) Add(key string, ev *state.TaskEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, keyedEvent{key, ev})
	close(l.notify)
	l.notify = make(chan struct{})
}

// Matching returns the events of type typ recorded under key, oldest first.
func (l *EventLog) Matching(key, typ string) []*state.TaskEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*state.TaskEvent
	for _, e := range l.all {
		if e.key == key && e.ev.Type == typ {
			out = append(out, e.ev)
		}
	}
	return out
}

// Count is the number of events of type typ recorded under key.
func (l *EventLog) Count(key, typ string) int { return len(l.Matching(key, typ)) }

// Last is the newest event of type typ recorded under key, or nil.
func (l *EventLog) Last(key, typ string) *state.TaskEvent {
	evs := l.Matching(key, typ)
	if len(evs) == 0 {
		return nil
	}
	return evs[len(evs)-1]
}

// String lists every event, one "key Type: Message" a line.
func (l *EventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.all {
		b.WriteString("\n  " + e.key + " " + e.ev.Type + ": " + e.ev.Message)
	}
	return b.String()
}

// Wait blocks until key has had n events of typ and returns the nth: it
// wakes on events, never on a timer (the deadline only bounds a failure).
func (l *EventLog) Wait(t testing.TB, key, typ string, n int) *state.TaskEvent {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		ch := l.notify
		l.mu.Unlock()
		if evs := l.Matching(key, typ); len(evs) >= n {
			return evs[n-1]
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %d×%q for %s; events:%s", n, typ, key, l)
		}
	}
}
