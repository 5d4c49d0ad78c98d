package host

import (
	"context"
	"testing"

	"github.com/pluginhost/pluginhost/host/api"
)

func TestBrokerOrderAndSlowSubscriber(t *testing.T) {
	b := newBroker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fast := b.subscribe(ctx)
	slow := b.subscribe(ctx) // never read until the end

	done := make(chan struct{})
	var got []uint64
	go func() {
		defer close(done)
		for ev := range fast {
			got = append(got, ev.Index)
			if len(got) == subscriberBuffer+10 {
				return
			}
		}
	}()
	// More events than a subscriber may hold: publish must never block on
	// the one that does not read.
	for i := 0; i < subscriberBuffer+10; i++ {
		b.publish(&api.Event{Topic: api.TopicAgent})
	}
	<-done
	for i, idx := range got {
		if idx != uint64(i+1) {
			t.Fatalf("event %d has index %d: out of order", i, idx)
		}
	}
	// The stalled subscriber was dropped: its channel holds what fitted and
	// is then closed.
	n := 0
	for range slow {
		n++
	}
	if n != subscriberBuffer {
		t.Fatalf("stalled subscriber got %d events before its stream ended, want %d", n, subscriberBuffer)
	}
}

func TestBrokerUnsubscribeAndClose(t *testing.T) {
	b := newBroker()
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.subscribe(ctx)
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("subscription still open after its context ended")
	}
	other := b.subscribe(context.Background())
	b.close()
	if _, ok := <-other; ok {
		t.Fatal("subscription still open after close")
	}
	b.publish(&api.Event{}) // after close: dropped, no panic
	late := b.subscribe(context.Background())
	if _, ok := <-late; ok {
		t.Fatal("subscribing to a closed broker gave an open channel")
	}
}
