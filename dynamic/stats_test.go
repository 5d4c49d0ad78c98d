package dynamic

import "testing"

func TestStatsCountsPluginsAllocationsAndEvents(t *testing.T) {
	r := newRegistry(t, nil)
	for _, p := range []*PluginInfo{node("p", "a1"), node("p", "a2"), node("q", "a3")} {
		if err := r.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	// a2 is active: deregistering it activates a1.
	if err := r.Deregister(PluginTypeCSINode, "p", "a2"); err != nil {
		t.Fatal(err)
	}
	got := r.Stats()[PluginTypeCSINode]
	if got.Plugins != 2 || got.Allocations != 2 {
		t.Fatalf("sizes: %+v, want 2 plugins, 2 allocations", got)
	}
	want := map[EventType]uint64{EventRegistered: 3, EventUpdated: 0, EventDeregistered: 1, EventActivated: 1}
	for et, n := range want {
		if got.Events[et] != n {
			t.Errorf("%s events: %d, want %d", et, got.Events[et], n)
		}
	}

	// A type whose plugins are all gone keeps its event counts.
	for _, d := range [][2]string{{"p", "a1"}, {"q", "a3"}} {
		if err := r.Deregister(PluginTypeCSINode, d[0], d[1]); err != nil {
			t.Fatal(err)
		}
	}
	got = r.Stats()[PluginTypeCSINode]
	if got.Plugins != 0 || got.Allocations != 0 || got.Events[EventDeregistered] != 3 {
		t.Fatalf("after every deregistration: %+v, want 0 plugins, 0 allocations, 3 deregistered", got)
	}
}
