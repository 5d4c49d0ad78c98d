package events

import (
	"context"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

func TestBrokerOrderAndSlowSubscriber(t *testing.T) {
	b := NewBroker()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fast := b.Subscribe(ctx, 0)
	slow := b.Subscribe(ctx, 0) // never read until the end

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
		b.Publish(&api.Event{Topic: api.TopicAgent})
	}
	<-done
	for i, idx := range got {
		if idx != uint64(i+1) {
			t.Fatalf("event %d has index %d: out of order", i, idx)
		}
	}
	// The stalled subscriber was dropped: its channel holds what fitted and
	// is then closed.
	// ... and told so in its last event, not dropped silently.
	n := 0
	var last *api.Event
	for ev := range slow {
		n++
		last = ev
	}
	if n != subscriberBuffer {
		t.Fatalf("stalled subscriber got %d events before its stream ended, want %d", n, subscriberBuffer)
	}
	if last.Type != EventSubscriberDropped || last.Payload.Message == "" {
		t.Fatalf("the stalled subscriber's last event is %+v, want the drop notice", last)
	}
}

// TestBrokerResume: a subscriber resumes from an index with the kept
// events from it on, and is told when some are no longer kept.
func TestBrokerResume(t *testing.T) {
	b := NewBroker()
	for range 10 {
		b.Publish(&api.Event{Topic: api.TopicTask})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Subscribe(ctx, 8)
	b.Publish(&api.Event{Topic: api.TopicTask})
	for _, want := range []uint64{8, 9, 10, 11} {
		if ev := <-ch; ev.Index != want {
			t.Fatalf("resumed stream gave index %d, want %d", ev.Index, want)
		}
	}
	for range historySize {
		b.Publish(&api.Event{Topic: api.TopicTask})
	}
	old := b.Subscribe(ctx, 4)
	first := <-old
	if first.Type != EventEventsLost || first.Payload.Message == "" {
		t.Fatalf("resuming past the history: first event %+v, want EventsLost", first)
	}
	if next := <-old; next.Index != b.index-historySize+1 {
		t.Fatalf("after the notice, index %d, want the oldest kept %d", next.Index, b.index-historySize+1)
	}
}

// TestBrokerFromTheFirst: from 1 replays every event of a young agent,
// the first included (`pluginhost events` shows the last ten this way).
func TestBrokerFromTheFirst(t *testing.T) {
	b := NewBroker()
	for range 3 {
		b.Publish(&api.Event{Topic: api.TopicTask})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Subscribe(ctx, 1)
	for _, want := range []uint64{1, 2, 3} {
		if ev := <-ch; ev.Index != want {
			t.Fatalf("index %d, want %d", ev.Index, want)
		}
	}
	if b.Index() != 3 {
		t.Fatalf("Index() = %d", b.Index())
	}
}

func TestBrokerUnsubscribeAndClose(t *testing.T) {
	b := NewBroker()
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Subscribe(ctx, 0)
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("subscription still open after its context ended")
	}
	other := b.Subscribe(context.Background(), 0)
	b.Close()
	if _, ok := <-other; ok {
		t.Fatal("subscription still open after close")
	}
	b.Publish(&api.Event{}) // after close: dropped, no panic
	late := b.Subscribe(context.Background(), 0)
	if _, ok := <-late; ok {
		t.Fatal("subscribing to a closed broker gave an open channel")
	}
}

// TestBrokerResumeWholeHistory: resuming from before the history replays
// every kept event, the newest included.
func TestBrokerResumeWholeHistory(t *testing.T) {
	b := NewBroker()
	for range historySize + 5 {
		b.Publish(&api.Event{Topic: api.TopicTask})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := b.Subscribe(ctx, 1)
	if ev := <-ch; ev.Type != EventEventsLost {
		t.Fatalf("first event %+v, want EventsLost", ev)
	}
	var last uint64
	for range historySize {
		last = (<-ch).Index
	}
	if last != b.index {
		t.Fatalf("replay ended at %d, want the newest %d", last, b.index)
	}
}
