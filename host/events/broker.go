package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// subscriberBuffer is how many events a stream subscriber may fall behind
// before it is dropped. A CLI reading a local socket keeps up easily; one
// that does not must not make the agent buffer without bound.
const subscriberBuffer = 4096

// historySize is how many past events the broker keeps for subscribers
// that resume after an index (`events -index`, Nomad's ?index=).
const historySize = 4096

// Broker fans events out to API subscribers without ever blocking the
// publisher, and keeps the last historySize events for resuming.
type Broker struct {
	mu      sync.Mutex
	index   uint64
	subs    map[chan *api.Event]struct{}
	history []*api.Event // ring, oldest at histAt once full
	histAt  int
	closed  bool
}

// NewBroker returns a broker with no subscribers.
func NewBroker() *Broker {
	return &Broker{subs: make(map[chan *api.Event]struct{})}
}

// Agent event types about a subscription itself.
const (
	// EventSubscriberDropped is the last event of a stream whose reader
	// fell subscriberBuffer events behind: it is told, then disconnected.
	EventSubscriberDropped = "SubscriberDropped"
	// EventEventsLost starts a resumed stream whose index is older than
	// the history kept: the events in between are gone.
	EventEventsLost = "EventsLost"
)

// Publish stamps ev with the next index and hands it to every subscriber.
func (b *Broker) Publish(ev *api.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.index++
	ev.Index = b.index
	if ev.Time == 0 {
		ev.Time = time.Now().UnixNano()
	}
	if len(b.history) < historySize {
		b.history = append(b.history, ev)
	} else {
		b.history[b.histAt] = ev
		b.histAt = (b.histAt + 1) % historySize
	}
	for ch := range b.subs {
		// The last slot is kept for the notice: a reader that falls this
		// far behind is told so, then its stream ends, instead of
		// making the agent buffer without bound or wait for it.
		if len(ch) >= cap(ch)-1 {
			ch <- &api.Event{Topic: api.TopicAgent, Type: EventSubscriberDropped, Index: ev.Index, Time: ev.Time,
				Payload: api.EventPayload{Message: fmt.Sprintf(
					"this stream fell %d events behind and is closed; resume with index %d", cap(ch)-1, ev.Index-1)}}
			delete(b.subs, ch)
			close(ch)
			continue
		}
		ch <- ev
	}
}

// Subscribe returns a channel of every later event, and with from > 0
// first of the kept events from that index on; it is closed when ctx
// ends, when the broker closes, or when the subscriber falls too far
// behind.
func (b *Broker) Subscribe(ctx context.Context, from uint64) <-chan *api.Event {
	b.mu.Lock()
	var replay []*api.Event
	if from > 0 && from <= b.index {
		past := b.ordered()
		if len(past) > 0 && past[0].Index > from {
			replay = append(replay, &api.Event{Topic: api.TopicAgent, Type: EventEventsLost, Index: from - 1, Time: time.Now().UnixNano(),
				Payload: api.EventPayload{Message: fmt.Sprintf("events %d to %d are no longer kept", from, past[0].Index-1)}})
		}
		for _, ev := range past {
			if ev.Index >= from {
				replay = append(replay, ev)
			}
		}
	}
	// Room for the replay on top of the usual lag allowance.
	ch := make(chan *api.Event, subscriberBuffer+len(replay))
	if b.closed {
		close(ch)
		b.mu.Unlock()
		return ch
	}
	for _, ev := range replay {
		ch <- ev
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() { b.unsubscribe(ch) })
	return ch
}

// Index is the index of the latest event published (0: none yet).
func (b *Broker) Index() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.index
}

// ordered returns the kept events, oldest first; b.mu is held.
func (b *Broker) ordered() []*api.Event {
	out := make([]*api.Event, 0, len(b.history))
	out = append(out, b.history[b.histAt:]...)
	return append(out, b.history[:b.histAt]...)
}

func (b *Broker) unsubscribe(ch chan *api.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

// Close ends every stream; later publishes are dropped.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for ch := range b.subs {
		close(ch)
	}
	b.subs = nil
}
