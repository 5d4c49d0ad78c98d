package host

import (
	"context"
	"sync"
	"time"

	"github.com/pluginhost/pluginhost/host/api"
)

// subscriberBuffer is how many events a stream subscriber may fall behind
// before it is dropped. A CLI reading a local socket keeps up easily; one
// that does not must not make the agent buffer without bound.
const subscriberBuffer = 4096

// broker fans events out to API subscribers without ever blocking the
// publisher.
type broker struct {
	mu     sync.Mutex
	index  uint64
	subs   map[chan *api.Event]struct{}
	closed bool
}

func newBroker() *broker {
	return &broker{subs: make(map[chan *api.Event]struct{})}
}

// publish stamps ev with the next index and hands it to every subscriber.
func (b *broker) publish(ev *api.Event) {
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
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
			// Too far behind: end its stream instead of waiting for it.
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// subscribe returns a channel of every later event; it is closed when ctx
// ends, when the broker closes, or when the subscriber falls too far behind.
func (b *broker) subscribe(ctx context.Context) <-chan *api.Event {
	ch := make(chan *api.Event, subscriberBuffer)
	b.mu.Lock()
	if b.closed {
		close(ch)
		b.mu.Unlock()
		return ch
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() { b.unsubscribe(ch) })
	return ch
}

func (b *broker) unsubscribe(ch chan *api.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

// close ends every stream; later publishes are dropped.
func (b *broker) close() {
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
