package dynamic

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRegisterValidation(t *testing.T) {
	r := newRegistry(t, nil)
	cases := []struct {
		name  string
		mod   func(p *PluginInfo) *PluginInfo
		field string
	}{
		{"nil", func(*PluginInfo) *PluginInfo { return nil }, "nil"},
		{"type", func(p *PluginInfo) *PluginInfo { p.Type = ""; return p }, "missing Type"},
		{"name", func(p *PluginInfo) *PluginInfo { p.Name = ""; return p }, "missing Name"},
		{"alloc", func(p *PluginInfo) *PluginInfo { p.AllocID = ""; return p }, "missing AllocID"},
		{"conn", func(p *PluginInfo) *PluginInfo { p.ConnectionInfo = nil; return p }, "missing ConnectionInfo"},
		{"socket", func(p *PluginInfo) *PluginInfo { p.ConnectionInfo.SocketPath = ""; return p }, "missing ConnectionInfo.SocketPath"},
		{"relative", func(p *PluginInfo) *PluginInfo { p.ConnectionInfo.SocketPath = "csi.sock"; return p }, "not absolute"},
		{"tcp elsewhere", func(p *PluginInfo) *PluginInfo { p.ConnectionInfo.SocketPath = "tcp://10.0.0.1:1234"; return p }, "not a loopback address"},
		{"tcp no port", func(p *PluginInfo) *PluginInfo { p.ConnectionInfo.SocketPath = "tcp://127.0.0.1"; return p }, "missing port"},
		{"tcp port 0", func(p *PluginInfo) *PluginInfo { p.ConnectionInfo.SocketPath = "tcp://127.0.0.1:0"; return p }, "has no port"},
		{"too long", func(p *PluginInfo) *PluginInfo {
			p.ConnectionInfo.SocketPath = "/" + strings.Repeat("d", MaxSocketPathLen)
			return p
		}, "over the 107-byte unix socket limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Register(tc.mod(node("p", "a1")))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %q", err, tc.field)
			}
		})
	}
	if got := r.ListAllocs(PluginTypeCSINode); len(got) != 0 {
		t.Fatalf("invalid registrations left state behind: %s", allocIDs(got))
	}
	for i, args := range [][3]string{{"", "p", "a"}, {"t", "", "a"}, {"t", "p", ""}} {
		err := r.Deregister(args[0], args[1], args[2])
		field := []string{"Type", "Name", "AllocID"}[i]
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "missing "+field) {
			t.Fatalf("Deregister%q = %v, want ErrInvalid naming %s", args, err, field)
		}
	}
	// The limit itself is fine.
	ok := node("p", "a1")
	ok.ConnectionInfo.SocketPath = "/" + strings.Repeat("d", MaxSocketPathLen-1)
	mustRegister(t, r, ok)
	// So is a plugin on a loopback TCP port (go-plugin's Python example).
	tcp := node("q", "a2")
	tcp.ConnectionInfo.SocketPath = "tcp://127.0.0.1:1234"
	mustRegister(t, r, tcp)
}

// TestRollingUpdate walks a plugin through a rolling update with
// interleaved starts and stops of three allocations and checks who is active
// and the exact events at every step.
func TestRollingUpdate(t *testing.T) {
	r := newRegistry(t, nil)
	ch := r.Subscribe(t.Context(), PluginTypeCSINode)
	const typ, name = PluginTypeCSINode, "ebs"

	steps := []struct {
		desc   string
		do     func()
		active string
		allocs string
		events []want
	}{
		{"first alloc", func() { mustRegister(t, r, node(name, "a1")) },
			"a1", "ebs/a1", []want{{EventRegistered, "a1", true}}},
		{"second alloc takes over", func() { mustRegister(t, r, node(name, "a2")) },
			"a2", "ebs/a1,ebs/a2", []want{{EventRegistered, "a2", true}}},
		{"old alloc stops without disturbing the new", func() { mustDeregister(t, r, typ, name, "a1") },
			"a2", "ebs/a2", []want{{EventDeregistered, "a1", false}}},
		{"third alloc", func() { mustRegister(t, r, node(name, "a3")) },
			"a3", "ebs/a2,ebs/a3", []want{{EventRegistered, "a3", true}}},
		{"inactive alloc re-registers identically: nothing", func() { mustRegister(t, r, node(name, "a2")) },
			"a3", "ebs/a2,ebs/a3", nil},
		{"inactive alloc changes version: updated in place, stays inactive", func() {
			p := node(name, "a2")
			p.Version = "1.0.1"
			mustRegister(t, r, p)
		}, "a3", "ebs/a2,ebs/a3", []want{{EventUpdated, "a2", false}}},
		{"active alloc moves its socket: updated, still active", func() {
			p := node(name, "a3")
			p.ConnectionInfo.SocketPath = "/run/ph/a3/csi-2.sock"
			mustRegister(t, r, p)
		}, "a3", "ebs/a2,ebs/a3", []want{{EventUpdated, "a3", true}}},
		{"active alloc stops: predecessor takes over at once", func() { mustDeregister(t, r, typ, name, "a3") },
			"a2", "ebs/a2", []want{{EventDeregistered, "a3", false}, {EventActivated, "a2", true}}},
		{"unknown alloc: nothing", func() { mustDeregister(t, r, typ, name, "a3") },
			"a2", "ebs/a2", nil},
		{"last alloc stops", func() { mustDeregister(t, r, typ, name, "a2") },
			"", "", []want{{EventDeregistered, "a2", false}}},
	}
	for _, s := range steps {
		s.do()
		if got := activeAlloc(r, typ, name); got != s.active {
			t.Fatalf("%s: active %q, want %q", s.desc, got, s.active)
		}
		if got := allocIDs(r.ListAllocs(typ)); got != s.allocs {
			t.Fatalf("%s: allocs %q, want %q", s.desc, got, s.allocs)
		}
		// The standby is the registration before the active one.
		wantStandby := ""
		if ids := strings.Split(s.allocs, ","); len(ids) > 1 {
			wantStandby = strings.TrimPrefix(ids[len(ids)-2], name+"/")
		}
		act, sb := r.ActiveAndStandby(typ, name)
		if got := allocOf(act) + "/" + allocOf(sb); got != s.active+"/"+wantStandby {
			t.Fatalf("%s: active/standby %q, want %q", s.desc, got, s.active+"/"+wantStandby)
		}
		evs := expectEvents(t, ch, s.events...)
		for _, ev := range evs {
			// The event's info is the allocation's current info.
			cur, ok := r.ForAlloc(typ, name, ev.Info.AllocID)
			if ev.Type != EventDeregistered && (!ok || !sameRegistration(cur, ev.Info) || cur.Seq != ev.Info.Seq) {
				t.Fatalf("%s: event info %+v differs from registered %+v", s.desc, ev.Info, cur)
			}
		}
	}
	expectNothingBefore(t, r, ch, typ)
}

func allocOf(p *PluginInfo) string {
	if p == nil {
		return ""
	}
	return p.AllocID
}

func TestUpdateKeepsSeqAndRegisteredAt(t *testing.T) {
	r := newRegistry(t, nil)
	mustRegister(t, r, node("p", "a1"))
	before, _ := r.ForAlloc(PluginTypeCSINode, "p", "a1")
	p := node("p", "a1")
	p.Version = "2"
	p.Seq = 999 // ignored: the registry owns Seq
	mustRegister(t, r, p)
	after, _ := r.ForAlloc(PluginTypeCSINode, "p", "a1")
	if after.Version != "2" || after.Seq != before.Seq || !after.RegisteredAt.Equal(before.RegisteredAt) {
		t.Fatalf("update: got %+v, before %+v", after, before)
	}
	if before.Seq == 0 || before.RegisteredAt.IsZero() {
		t.Fatalf("registry did not assign Seq/RegisteredAt: %+v", before)
	}
}

// TestDeregisterBeforeRegister covers a plugin that fails before it ever
// registered: its supervisor deregisters an unknown allocation, with and
// without other allocations of the plugin around. Nomad panicked on the
// first (#15478) and sent another allocation's info on the second.
func TestDeregisterBeforeRegister(t *testing.T) {
	r := newRegistry(t, nil)
	ch := r.Subscribe(t.Context(), PluginTypeCSINode)

	mustDeregister(t, r, PluginTypeCSINode, "p", "a1")
	mustDeregister(t, r, "never-seen-type", "p", "a1")
	mustRegister(t, r, node("p", "a2"))
	mustDeregister(t, r, PluginTypeCSINode, "p", "a1")
	mustDeregister(t, r, PluginTypeCSINode, "other", "a2")
	if got := activeAlloc(r, PluginTypeCSINode, "p"); got != "a2" {
		t.Fatalf("active %q, want a2", got)
	}
	expectEvents(t, ch, want{EventRegistered, "a2", true})
	// The late registration of a1 works normally.
	mustRegister(t, r, node("p", "a1"))
	expectEvents(t, ch, want{EventRegistered, "a1", true})
	expectNothingBefore(t, r, ch, PluginTypeCSINode)
}

func TestLookups(t *testing.T) {
	r := newRegistry(t, nil)
	mustRegister(t, r, node("b", "b1"))
	mustRegister(t, r, node("a", "a1"))
	mustRegister(t, r, node("a", "a2"))
	mustRegister(t, r, pinfo(PluginTypeCSIController, "a", "c1"))

	if got := allocIDs(r.List(PluginTypeCSINode)); got != "a/a2,b/b1" {
		t.Fatalf("List = %q", got)
	}
	if got := allocIDs(r.ListAllocs(PluginTypeCSINode)); got != "a/a1,a/a2,b/b1" {
		t.Fatalf("ListAllocs = %q", got)
	}
	if got := allocIDs(r.List(PluginTypeCSIController)); got != "a/c1" {
		t.Fatalf("List controller = %q", got)
	}
	if got := r.List("nope"); len(got) != 0 {
		t.Fatalf("List of unknown type = %q", allocIDs(got))
	}
	if _, ok := r.ForAlloc(PluginTypeCSINode, "a", "c1"); ok {
		t.Fatal("ForAlloc found a controller alloc under the node type")
	}
	p, ok := r.ForAlloc(PluginTypeCSINode, "a", "a1")
	if !ok || p.AllocID != "a1" {
		t.Fatalf("ForAlloc a1 = %+v, %v", p, ok)
	}
	// What callers get is theirs: changing it changes nothing inside.
	p.ConnectionInfo.SocketPath = "/elsewhere"
	p.Options["mount_dir"] = "/elsewhere"
	again, _ := r.ForAlloc(PluginTypeCSINode, "a", "a1")
	if again.ConnectionInfo.SocketPath == "/elsewhere" || again.Options["mount_dir"] == "/elsewhere" {
		t.Fatal("a returned PluginInfo aliases registry state")
	}
	// So is what they passed in.
	in := node("c", "c9")
	mustRegister(t, r, in)
	in.ConnectionInfo.SocketPath = "/elsewhere"
	if got, _ := r.Active(PluginTypeCSINode, "c"); got.ConnectionInfo.SocketPath == "/elsewhere" {
		t.Fatal("registry aliases the caller's PluginInfo")
	}
}

func TestDispense(t *testing.T) {
	type client struct{ alloc string }
	r := newRegistryConfig(t, Config{Dispensers: map[string]DispenseFunc{PluginTypeCSINode: func(info *PluginInfo) (any, error) {
		if info.Version == "broken" {
			return nil, errBoom
		}
		return &client{alloc: info.AllocID}, nil
	}}})

	if _, err := r.Dispense(PluginTypeCSINode, "p"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dispense unknown: %v, want ErrNotFound", err)
	}
	mustRegister(t, r, node("p", "a1"))
	mustRegister(t, r, node("p", "a2"))
	c, err := r.Dispense(PluginTypeCSINode, "p")
	if err != nil || c.(*client).alloc != "a2" {
		t.Fatalf("dispense: %v, %v; want client of active a2", c, err)
	}
	mustDeregister(t, r, PluginTypeCSINode, "p", "a2")
	if c, err := r.Dispense(PluginTypeCSINode, "p"); err != nil || c.(*client).alloc != "a1" {
		t.Fatalf("dispense after failover: %v, %v; want a1", c, err)
	}

	broken := node("p", "a1")
	broken.Version = "broken"
	mustRegister(t, r, broken)
	if _, err := r.Dispense(PluginTypeCSINode, "p"); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "a1") {
		t.Fatalf("dispenser error not wrapped with context: %v", err)
	}

	mustRegister(t, r, pinfo(PluginTypeCSIController, "p", "c1"))
	if _, err := r.Dispense(PluginTypeCSIController, "p"); !errors.Is(err, ErrNoDispenser) {
		t.Fatalf("dispense without dispenser: %v, want ErrNoDispenser", err)
	}
	r.Shutdown()
	if _, err := r.Dispense(PluginTypeCSIController, "p"); !errors.Is(err, ErrShutdown) {
		t.Fatalf("dispense after shutdown: %v", err)
	}
}

func TestConfigDispensersAreCopied(t *testing.T) {
	ds := map[string]DispenseFunc{PluginTypeCSINode: func(*PluginInfo) (any, error) { return "from config", nil }}
	r, err := New(Config{Dispensers: ds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Shutdown)
	delete(ds, PluginTypeCSINode)
	mustRegister(t, r, node("p", "a1"))
	if c, err := r.Dispense(PluginTypeCSINode, "p"); err != nil || c != "from config" {
		t.Fatalf("dispense: %v, %v", c, err)
	}
}

func TestShutdown(t *testing.T) {
	done := leakCheck(t)
	r := newRegistry(t, nil)
	mustRegister(t, r, node("p", "a1"))
	subs := []<-chan *Event{
		r.Subscribe(t.Context(), PluginTypeCSINode),
		r.Subscribe(t.Context(), PluginTypeCSIController),
	}
	mustRegister(t, r, node("p", "a2")) // unread by anyone

	r.Shutdown()
	r.Shutdown() // idempotent
	for _, ch := range subs {
		waitClosed(t, ch)
	}
	waitClosed(t, r.Subscribe(t.Context(), PluginTypeCSINode))
	if err := r.Register(node("p", "a3")); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Register after shutdown = %v", err)
	}
	if err := r.Deregister(PluginTypeCSINode, "p", "a1"); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Deregister after shutdown = %v", err)
	}
	// Reads still see the final state.
	if got := allocIDs(r.ListAllocs(PluginTypeCSINode)); got != "p/a1,p/a2" {
		t.Fatalf("state after shutdown = %q", got)
	}
	done()
}

// RegisterAll writes every change in one store call, or none: a monolith's
// node and controller halves appear together or not at all.
func TestRegisterAllIsAtomic(t *testing.T) {
	store := &countingStore{}
	r := newRegistry(t, store)
	nodes := r.Subscribe(t.Context(), PluginTypeCSINode)
	ctrls := r.Subscribe(t.Context(), PluginTypeCSIController)

	n, c := node("mono", "a1"), pinfo(PluginTypeCSIController, "mono", "a1")
	store.fail.Store(true)
	if err := r.RegisterAll(n, c); !errors.Is(err, errBoom) || !strings.Contains(err.Error(), `csi-node, csi-controller plugin "mono" alloc a1`) {
		t.Fatalf("RegisterAll with a failing store: %v", err)
	}
	for _, typ := range []string{PluginTypeCSINode, PluginTypeCSIController} {
		if _, ok := r.ForAlloc(typ, "mono", "a1"); ok {
			t.Fatalf("%s registered although the store failed", typ)
		}
	}
	store.fail.Store(false)
	expectNothingBefore(t, r, nodes, PluginTypeCSINode)
	expectNothingBefore(t, r, ctrls, PluginTypeCSIController)

	before := store.puts.Load()
	if err := r.RegisterAll(n, c); err != nil {
		t.Fatal(err)
	}
	if got := store.puts.Load() - before; got != 1 {
		t.Fatalf("RegisterAll of two plugins made %d store writes, want 1", got)
	}
	expectEvents(t, nodes, want{EventRegistered, "a1", true})
	expectEvents(t, ctrls, want{EventRegistered, "a1", true})

	// One unchanged, one changed: only the change is written and announced.
	c2 := c.Copy()
	c2.Version = "2.0.0"
	before = store.puts.Load()
	if err := r.RegisterAll(n, c2); err != nil {
		t.Fatal(err)
	}
	if got := store.puts.Load() - before; got != 1 {
		t.Fatalf("%d store writes for one change, want 1", got)
	}
	expectEvents(t, ctrls, want{EventUpdated, "a1", true})
	expectNothingBefore(t, r, nodes, PluginTypeCSINode)

	// Nothing changed: no write at all.
	before = store.puts.Load()
	if err := r.RegisterAll(n, c2); err != nil || store.puts.Load() != before {
		t.Fatalf("identical RegisterAll: err %v, %d writes", err, store.puts.Load()-before)
	}

	if err := r.RegisterAll(n, n.Copy()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the same plugin twice in one call: %v, want ErrInvalid", err)
	}
}

// countingStore is a failingStore that counts PutPlugins calls.
type countingStore struct {
	failingStore
	puts atomic.Int64
}

func (s *countingStore) PutPlugins(infos ...*PluginInfo) error {
	s.puts.Add(1)
	return s.failingStore.PutPlugins(infos...)
}
