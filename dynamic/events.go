package dynamic

import (
	"fmt"
	"sync"
)

// EventType says what happened to the allocation an Event is about.
type EventType int

const (
	// EventRegistered: a new allocation was registered. It is always the
	// active instance of its plugin afterwards.
	EventRegistered EventType = iota + 1
	// EventUpdated: an already registered allocation re-registered with
	// changed info (new socket, new version). It keeps its place, so Active
	// says whether it is the active instance.
	EventUpdated
	// EventDeregistered: the allocation is gone. Active is always false.
	EventDeregistered
	// EventActivated: the active allocation was deregistered and this one,
	// the next most recent, took over. It follows the Deregistered event
	// immediately, with nothing in between.
	EventActivated
)

func (t EventType) String() string {
	switch t {
	case EventRegistered:
		return "registered"
	case EventUpdated:
		return "updated"
	case EventDeregistered:
		return "deregistered"
	case EventActivated:
		return "activated"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change to the registry. All subscribers of a type receive
// the same *Event, so treat it as read-only (Info.Copy() gives a private
// copy). It never aliases registry state: modifying it cannot corrupt the
// registry, only confuse other subscribers.
type Event struct {
	Type EventType
	// Info is the allocation the event is about, never another one.
	Info *PluginInfo
	// Active says whether Info is the active instance of its plugin after
	// this change.
	Active bool
}

// eventNode is one link of a feed. A node is immutable once published except
// for next, which is written exactly once, before ready is closed; readers
// only look at next after <-ready, so the channel close is the memory
// barrier and no lock is needed to walk the list.
type eventNode struct {
	ev *Event // nil only in a feed's initial sentinel
	// seq numbers the nodes of a feed from 0 (the sentinel), so a
	// subscription can tell which events it already has.
	seq   uint64
	next  *eventNode
	ready chan struct{}
}

// feed is the event stream of one plugin type: an append-only list, which
// is the history that lagging subscribers and WaitForPlugin walk, plus the
// set of subscribers that are caught up and get each event pushed straight
// into their channel.
type feed struct {
	// tail is guarded by the registry's lock. Nodes behind it live exactly
	// as long as some catch-up goroutine or waiter still has to walk them,
	// so a stalled subscriber pins memory but never blocks anyone.
	tail *eventNode
	// wg is the registry's count of subscription goroutines; catch-up
	// goroutines join it so Shutdown waits for them.
	wg *sync.WaitGroup

	// mu guards the delivery state of every subscription of this feed
	// (direct and the fields of subscription). It is taken inside the
	// registry's lock by publish and subscribe, and alone by catch-up
	// goroutines and by a subscription's end, so subscribers never contend
	// for the registry's lock.
	mu sync.Mutex
	// direct holds the subscriptions in direct mode: everything published
	// so far is in their channel or already read. Order within the slice
	// is irrelevant; removal swaps the last one in.
	direct []*subscription

	// published counts the events of each EventType (the index), guarded
	// by the registry's lock like tail; Registry.Stats reads it.
	published [EventActivated + 1]uint64
}

func newFeed(wg *sync.WaitGroup) *feed {
	return &feed{tail: &eventNode{ready: make(chan struct{})}, wg: wg}
}

// publish appends an event and offers it to every subscriber in direct mode
// with a non-blocking send. The caller holds the registry's write lock,
// which is what orders events per type. The event gets its own copy of
// info, made once and shared by every subscriber: copying per subscriber
// tripled the cost of a fan-out.
//
// A subscriber whose buffer is full drops out of direct mode and gets a
// catch-up goroutine that resumes from the node before this one. The node
// is linked (ready closed) under the registry's lock but offered later,
// under f.mu, so a catch-up goroutine may walk a node and rejoin direct mode
// before that node's offer: the subscription's from skips it here.
func (f *feed) publish(typ EventType, info *PluginInfo, active bool) {
	ev := &Event{Type: typ, Info: info.Copy(), Active: active}
	f.published[typ]++
	prev := f.tail
	n := &eventNode{ev: ev, seq: prev.seq + 1, ready: make(chan struct{})}
	prev.next = n
	close(prev.ready)
	f.tail = n

	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < len(f.direct); {
		s := f.direct[i]
		if n.seq <= s.from {
			i++
			continue
		}
		select {
		case s.out <- ev:
			i++
		default:
			// Removal moves the last subscriber into slot i, which is
			// offered the event next.
			f.removeDirectLocked(s)
			s.catchingUp = true
			f.wg.Add(1)
			go f.catchUp(s, prev)
		}
	}
}

func (f *feed) addDirectLocked(s *subscription) {
	s.idx = len(f.direct)
	f.direct = append(f.direct, s)
}

func (f *feed) removeDirectLocked(s *subscription) {
	last := len(f.direct) - 1
	moved := f.direct[last]
	f.direct[s.idx] = moved
	moved.idx = s.idx
	f.direct[last] = nil
	f.direct = f.direct[:last]
	s.idx = -1
}

// feedLocked returns pluginType's feed, creating it on first use. The
// caller holds the write lock.
func (r *Registry) feedLocked(pluginType string) *feed {
	f, ok := r.feeds[pluginType]
	if !ok {
		f = newFeed(&r.subs)
		r.feeds[pluginType] = f
	}
	return f
}
