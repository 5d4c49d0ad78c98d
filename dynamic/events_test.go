package dynamic

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestStalledSubscriberBlocksNothing: one subscriber never reads while
// thousands of changes go through; the registry and another subscriber carry
// on, and the stalled one still gets every event, in order, once it reads.
func TestStalledSubscriberBlocksNothing(t *testing.T) {
	r := newRegistry(t, nil)
	const typ, rounds = PluginTypeCSINode, 2000
	stalled := r.Subscribe(t.Context(), typ)
	live := r.Subscribe(t.Context(), typ)

	// Per round, alloc i registers and takes over, then alloc i-1, already
	// inactive, deregisters: a rolling update, thousands of times.
	var wants []want
	for i := range rounds {
		wants = append(wants, want{EventRegistered, fmt.Sprint(i), true})
		if i > 0 {
			wants = append(wants, want{EventDeregistered, fmt.Sprint(i - 1), false})
		}
	}

	writerDone := make(chan error, 1)
	go func() {
		for i := range rounds {
			if err := r.Register(node("p", fmt.Sprint(i))); err != nil {
				writerDone <- err
				return
			}
			if i > 0 {
				if err := r.Deregister(typ, "p", fmt.Sprint(i-1)); err != nil {
					writerDone <- err
					return
				}
			}
		}
		writerDone <- nil
	}()

	// The live subscriber keeps up while the writer runs.
	expectEvents(t, live, wants...)
	select {
	case err := <-writerDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("writer blocked by a stalled subscriber")
	}
	// A reader's lookups were never blocked either.
	if got := activeAlloc(r, typ, "p"); got != fmt.Sprint(rounds-1) {
		t.Fatalf("active %q", got)
	}
	// Now the stalled one reads: all of it, in order.
	expectEvents(t, stalled, wants...)
	expectNothingBefore(t, r, stalled, typ)
}

func TestSubscribeIsPerType(t *testing.T) {
	r := newRegistry(t, nil)
	nodes := r.Subscribe(t.Context(), PluginTypeCSINode)
	ctrls := r.Subscribe(t.Context(), PluginTypeCSIController)
	mustRegister(t, r, pinfo(PluginTypeCSIController, "p", "c1"))
	mustRegister(t, r, node("p", "n1"))
	expectEvents(t, nodes, want{EventRegistered, "n1", true})
	expectEvents(t, ctrls, want{EventRegistered, "c1", true})
}

func TestEventsDoNotAliasState(t *testing.T) {
	r := newRegistry(t, nil)
	ch := r.Subscribe(t.Context(), PluginTypeCSINode)
	mustRegister(t, r, node("p", "a1"))
	ev := next(t, ch)
	ev.Info.ConnectionInfo.SocketPath = "/tampered"
	ev.Info.Options["mount_dir"] = "/tampered"
	got, _ := r.Active(PluginTypeCSINode, "p")
	if got.ConnectionInfo.SocketPath == "/tampered" || got.Options["mount_dir"] == "/tampered" {
		t.Fatal("event info aliases registry state")
	}
	// Nor does a later event about the same allocation reuse the old info.
	mustDeregister(t, r, PluginTypeCSINode, "p", "a1")
	if ev := next(t, ch); ev.Info.ConnectionInfo.SocketPath == "/tampered" {
		t.Fatal("events share info with earlier events")
	}
}

func TestSubscriptionEndsWithContext(t *testing.T) {
	done := leakCheck(t)
	r := newRegistry(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	ch := r.Subscribe(ctx, PluginTypeCSINode)
	mustRegister(t, r, node("p", "a1")) // left unread: cancel must still work
	cancel()
	waitClosed(t, ch)
	// Registry unaffected.
	other := r.Subscribe(t.Context(), PluginTypeCSINode)
	mustRegister(t, r, node("p", "a2"))
	expectEvents(t, other, want{EventRegistered, "a2", true})
	r.Shutdown()
	done()
}

// TestWatchSnapshotIsAtomic: with a writer running, each Watch must see a
// snapshot equal to the state after some prefix of the full event history,
// followed by exactly the rest of that history. A change falling between the
// snapshot and the subscription would be lost (or doubled) for good.
func TestWatchSnapshotIsAtomic(t *testing.T) {
	r := newRegistry(t, nil)
	const typ, names, rounds, endName = PluginTypeCSINode, 4, 300, "zz-end"
	full := r.Subscribe(t.Context(), typ)

	writerDone := make(chan error, 1)
	go func() {
		for i := range rounds {
			name := fmt.Sprint("p", i%names)
			if err := r.Register(node(name, fmt.Sprint("a", i))); err != nil {
				writerDone <- err
				return
			}
			if i%3 == 0 {
				if err := r.Deregister(typ, name, fmt.Sprint("a", i)); err != nil {
					writerDone <- err
					return
				}
			}
		}
		writerDone <- nil
	}()

	type watcher struct {
		snap []*PluginInfo
		ch   <-chan *Event
	}
	var ws []watcher
	for range 20 {
		snap, ch := r.Watch(t.Context(), typ)
		ws = append(ws, watcher{snap, ch})
	}
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, node(endName, "end"))

	readAll := func(ch <-chan *Event) []string {
		var out []string
		for {
			ev := next(t, ch)
			out = append(out, ev.Info.Name+" "+describe(ev))
			if ev.Info.Name == endName {
				return out
			}
		}
	}
	history := readAll(full)
	// states[k] is the active map after the first k events of history.
	states := []string{fmt.Sprint(map[string]string{})}
	active := map[string]string{}
	for _, line := range history {
		var name, typ, alloc, act string
		fmt.Sscanf(line, "%s %s %s %s", &name, &typ, &alloc, &act)
		switch {
		case act == "active=true":
			active[name] = alloc
		case active[name] == alloc:
			delete(active, name)
		}
		states = append(states, fmt.Sprint(active))
	}
	for i, w := range ws {
		got := readAll(w.ch)
		k := len(history) - len(got)
		if k < 0 || fmt.Sprint(got) != fmt.Sprint(history[k:]) {
			t.Fatalf("watcher %d: events are not a suffix of the history:\n got %v\nwant suffix of %v", i, got, history)
		}
		snap := map[string]string{}
		for _, p := range w.snap {
			snap[p.Name] = p.AllocID
		}
		if fmt.Sprint(snap) != states[k] {
			t.Fatalf("watcher %d: snapshot %v, but the state after %d events was %v", i, snap, k, states[k])
		}
	}
}

// TestAbandonedSubscriptionLeavesNothing: a subscriber that stops reading
// with events pending and then cancels leaves no goroutine behind, even
// though the registry itself keeps running.
func TestAbandonedSubscriptionLeavesNothing(t *testing.T) {
	done := leakCheck(t)
	r := newRegistry(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	_ = r.Subscribe(ctx, PluginTypeCSINode) // never read
	for i := range 3 {
		mustRegister(t, r, node("p", fmt.Sprint("a", i)))
	}
	cancel()
	done()
	// And the registry still works for others.
	ch := r.Subscribe(t.Context(), PluginTypeCSINode)
	mustRegister(t, r, node("p", "after"))
	expectEvents(t, ch, want{EventRegistered, "after", true})
}
