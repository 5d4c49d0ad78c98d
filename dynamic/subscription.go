package dynamic

import "context"

// subBuffer is the capacity of a subscription's channel: how far a reader
// may fall behind before delivery to it moves off the publisher's path and
// onto a catch-up goroutine. 128 events is 1 KiB per subscriber and covers a
// burst of a hundred allocations changing at once.
const subBuffer = 128

// subscription is one Subscribe or Watch call. Its fields other than out and
// stop are guarded by its feed's mu. At any time exactly one party may send
// on out: the publisher while the subscription is in its feed's direct set,
// or its catch-up goroutine while catchingUp is true. Whoever holds that
// right when the subscription ends closes out, exactly once.
type subscription struct {
	out  chan *Event
	stop <-chan struct{} // closed when the subscriber's ctx ends or at Shutdown

	idx int // index in feed.direct, -1 when not in direct mode
	// from is the seq of the last event this subscription already has
	// when it (re)joins direct mode; publish offers it only later ones.
	from       uint64
	catchingUp bool // a catch-up goroutine owns out
	ended      bool // stop was observed; never rejoins direct mode
	closed     bool // out is closed
}

// Subscribe returns every event about pluginType from now on, in order,
// without gaps. Delivery never blocks the registry or other subscribers: a
// subscriber that does not read only makes events queue up for it. The
// channel is closed when ctx ends or the registry shuts down; events not yet
// read at that point are discarded.
//
// To learn the current state as well, use Watch, or call Subscribe before
// List: events that race with the List then show up twice, never not at all.
func (r *Registry) Subscribe(ctx context.Context, pluginType string) <-chan *Event {
	_, ch := r.subscribe(ctx, pluginType, false)
	return ch
}

// Watch is Subscribe plus the active instances of pluginType at the moment
// the subscription starts, taken atomically: every change after the snapshot
// arrives on the channel, and none before it does.
func (r *Registry) Watch(ctx context.Context, pluginType string) ([]*PluginInfo, <-chan *Event) {
	return r.subscribe(ctx, pluginType, true)
}

func (r *Registry) subscribe(ctx context.Context, pluginType string, snapshot bool) ([]*PluginInfo, <-chan *Event) {
	out := make(chan *Event, subBuffer)
	// One stop channel for both the subscriber's ctx and the registry's
	// shutdown: a catch-up goroutine blocked on a full channel selects on
	// just that.
	sctx, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(r.base, cancel)
	s := &subscription{out: out, stop: sctx.Done(), idx: -1}

	r.mu.Lock()
	if r.shut {
		r.mu.Unlock()
		unlink()
		cancel()
		close(out)
		return nil, out
	}
	var active []*PluginInfo
	if snapshot {
		active = r.listLocked(pluginType)
	}
	f := r.feedLocked(pluginType)
	// Joining direct mode under the registry's lock, which every publish
	// holds, is what makes the snapshot and the stream meet exactly.
	f.mu.Lock()
	s.from = f.tail.seq
	f.addDirectLocked(s)
	f.mu.Unlock()
	// Add under the lock that Shutdown takes before it sets shut, so it
	// happens before Shutdown's Wait. Every subscription is eventually
	// cancelled (by Shutdown at the latest), so the end always runs.
	r.subs.Add(1)
	r.mu.Unlock()

	context.AfterFunc(sctx, func() {
		defer r.subs.Done()
		unlink()
		cancel()
		f.mu.Lock()
		f.endLocked(s)
		f.mu.Unlock()
	})
	return active, out
}

// endLocked takes s out of delivery for good and closes its channel unless
// a catch-up goroutine still owns it; that goroutine closes it when it sees
// the stop. Idempotent: both the end callback and the catch-up goroutine
// call it, in either order.
func (f *feed) endLocked(s *subscription) {
	s.ended = true
	if s.idx >= 0 {
		f.removeDirectLocked(s)
	}
	if !s.catchingUp && !s.closed {
		s.closed = true
		close(s.out)
	}
}

// catchUp delivers, with blocking sends, the events after cur to a
// subscriber whose buffer overflowed, walking the feed's list without any
// lock. Once it finds the end of the list it puts the subscription back in
// direct mode and exits, so a subscriber costs a goroutine only while it is
// behind. The end is decided under f.mu, where publish makes its offers:
// a node not linked yet at that moment is offered after the rejoin (never
// missed), and one that was linked has been walked here and is skipped by
// its offer, pending or not, through from (never doubled).
func (f *feed) catchUp(s *subscription, cur *eventNode) {
	defer f.wg.Done()
	for {
		select {
		case <-cur.ready:
			cur = cur.next
			select {
			case s.out <- cur.ev:
				continue
			case <-s.stop:
				f.mu.Lock()
				s.catchingUp = false
				f.endLocked(s)
				f.mu.Unlock()
				return
			}
		default:
		}
		f.mu.Lock()
		select {
		case <-cur.ready:
			// Published after the unlocked check: keep walking.
			f.mu.Unlock()
			continue
		default:
		}
		s.catchingUp = false
		if s.ended {
			f.endLocked(s)
		} else {
			s.from = cur.seq
			f.addDirectLocked(s)
		}
		f.mu.Unlock()
		return
	}
}
