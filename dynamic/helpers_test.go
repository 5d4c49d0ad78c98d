package dynamic

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// waitLimit bounds every wait on an event, so a broken registry fails the
// test instead of hanging it. It is never slept on.
const waitLimit = 10 * time.Second

func newRegistry(t testing.TB, store Store) *Registry {
	t.Helper()
	return newRegistryConfig(t, Config{Store: store})
}

func newRegistryConfig(t testing.TB, cfg Config) *Registry {
	t.Helper()
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Off})
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(r.Shutdown)
	return r
}

func pinfo(typ, name, alloc string) *PluginInfo {
	return &PluginInfo{
		Type:           typ,
		Name:           name,
		Version:        "1.0.0",
		AllocID:        alloc,
		ConnectionInfo: &ConnectionInfo{SocketPath: "/run/ph/" + alloc + "/csi.sock"},
		Options:        map[string]string{"mount_dir": "/csi"},
	}
}

func node(name, alloc string) *PluginInfo { return pinfo(PluginTypeCSINode, name, alloc) }

func mustRegister(t testing.TB, r *Registry, info *PluginInfo) {
	t.Helper()
	if err := r.Register(info); err != nil {
		t.Fatalf("Register %s/%s/%s: %v", info.Type, info.Name, info.AllocID, err)
	}
}

func mustDeregister(t testing.TB, r *Registry, typ, name, alloc string) {
	t.Helper()
	if err := r.Deregister(typ, name, alloc); err != nil {
		t.Fatalf("Deregister %s/%s/%s: %v", typ, name, alloc, err)
	}
}

// next receives one event or fails the test when the channel closes or
// nothing arrives within waitLimit.
func next(t testing.TB, ch <-chan *Event) *Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed while an event was expected")
		}
		return ev
	case <-time.After(waitLimit):
		t.Fatal("no event within", waitLimit)
	}
	return nil
}

// waitClosed fails unless ch is closed within waitLimit; it discards events
// still queued before the close.
func waitClosed(t testing.TB, ch <-chan *Event) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("subscription not closed within", waitLimit)
		}
	}
}

// want is the expected shape of one event.
type want struct {
	typ    EventType
	alloc  string
	active bool
}

func (w want) String() string { return fmt.Sprintf("%s %s active=%v", w.typ, w.alloc, w.active) }

func describe(ev *Event) string {
	return want{ev.Type, ev.Info.AllocID, ev.Active}.String()
}

func expectEvents(t testing.TB, ch <-chan *Event, wants ...want) []*Event {
	t.Helper()
	var got []*Event
	for i, w := range wants {
		ev := next(t, ch)
		got = append(got, ev)
		if ev.Type != w.typ || ev.Info.AllocID != w.alloc || ev.Active != w.active {
			t.Fatalf("event %d: got %q, want %q", i, describe(ev), w)
		}
	}
	return got
}

// expectNothingBefore registers and deregisters a throwaway allocation and
// expects its two events to be the next ones on ch: proof that nothing was
// emitted before it, without sleeping to see whether something arrives.
func expectNothingBefore(t testing.TB, r *Registry, ch <-chan *Event, typ string) {
	t.Helper()
	m := pinfo(typ, "zz-marker", "marker-"+t.Name())
	mustRegister(t, r, m)
	mustDeregister(t, r, typ, m.Name, m.AllocID)
	expectEvents(t, ch,
		want{EventRegistered, m.AllocID, true},
		want{EventDeregistered, m.AllocID, false})
}

// leakCheck records the goroutine count and returns a function that fails
// the test unless the count comes back down to it. Goroutine exit has no
// event to wait on, so this is a poll with a deadline.
func leakCheck(t *testing.T) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Fatalf("%d goroutines left behind (before %d, now %d):\n%s", n-before, before, n, buf)
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
	}
}

var errBoom = errors.New("disk on fire")

// failingStore is a MemStore that can be told to fail, to check that a store
// error leaves the registry untouched.
type failingStore struct {
	MemStore
	fail atomic.Bool
}

func (s *failingStore) PutPlugins(infos ...*PluginInfo) error {
	if s.fail.Load() {
		return errBoom
	}
	return s.MemStore.PutPlugins(infos...)
}

func (s *failingStore) DeletePlugin(typ, name, alloc string) error {
	if s.fail.Load() {
		return errBoom
	}
	return s.MemStore.DeletePlugin(typ, name, alloc)
}

func (s *failingStore) Plugins() ([]*PluginInfo, error) {
	if s.fail.Load() {
		return nil, errBoom
	}
	return s.MemStore.Plugins()
}

func allocIDs(infos []*PluginInfo) string {
	ids := make([]string, len(infos))
	for i, p := range infos {
		ids[i] = p.Name + "/" + p.AllocID
	}
	return strings.Join(ids, ",")
}

func activeAlloc(r *Registry, typ, name string) string {
	if p, ok := r.Active(typ, name); ok {
		return p.AllocID
	}
	return ""
}
