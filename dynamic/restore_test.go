package dynamic

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRestoreRoundTrip: a registry rebuilt from its store equals the
// original, down to Seq and RegisteredAt, keeps the same active instances,
// and numbers new registrations after the restored ones.
func TestRestoreRoundTrip(t *testing.T) {
	store := NewMemStore()
	orig := newRegistry(t, store)
	mustRegister(t, orig, node("ebs", "a1"))
	mustRegister(t, orig, node("ebs", "a2"))
	mustRegister(t, orig, node("ebs", "a3"))
	mustRegister(t, orig, pinfo(PluginTypeCSIController, "ebs", "c1"))
	mustRegister(t, orig, node("nfs", "n1"))
	mustDeregister(t, orig, PluginTypeCSINode, "ebs", "a3") // a2 takes over
	upd := node("ebs", "a1")
	upd.Version = "1.1"
	mustRegister(t, orig, upd)
	orig.Shutdown()

	restored := newRegistry(t, store)
	for _, typ := range []string{PluginTypeCSINode, PluginTypeCSIController} {
		if a, b := orig.ListAllocs(typ), restored.ListAllocs(typ); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s allocations differ after restore:\n orig %+v\n  got %+v", typ, a, b)
		}
		if a, b := orig.List(typ), restored.List(typ); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s active instances differ after restore:\n orig %+v\n  got %+v", typ, a, b)
		}
	}
	if got := activeAlloc(restored, PluginTypeCSINode, "ebs"); got != "a2" {
		t.Fatalf("active after restore %q, want a2", got)
	}

	// Supervisors re-register after the restart: identical info is silent
	// and does not change who is active.
	ch := restored.Subscribe(t.Context(), PluginTypeCSINode)
	mustRegister(t, restored, node("ebs", "a2"))
	mustRegister(t, restored, upd)
	if got := activeAlloc(restored, PluginTypeCSINode, "ebs"); got != "a2" {
		t.Fatalf("active after re-registration %q, want a2", got)
	}
	expectNothingBefore(t, restored, ch, PluginTypeCSINode)

	// New registrations rank above everything restored.
	mustRegister(t, restored, node("ebs", "a4"))
	expectEvents(t, ch, want{EventRegistered, "a4", true})
	maxSeq := uint64(0)
	for _, typ := range []string{PluginTypeCSINode, PluginTypeCSIController} {
		for _, p := range orig.ListAllocs(typ) {
			maxSeq = max(maxSeq, p.Seq)
		}
	}
	if a4, _ := restored.ForAlloc(PluginTypeCSINode, "ebs", "a4"); a4.Seq <= maxSeq {
		t.Fatalf("new Seq %d not above restored max %d", a4.Seq, maxSeq)
	}
	// Failover after restore follows the restored order: a4 → a2 → a1.
	mustDeregister(t, restored, PluginTypeCSINode, "ebs", "a4")
	mustDeregister(t, restored, PluginTypeCSINode, "ebs", "a2")
	expectEvents(t, ch,
		want{EventDeregistered, "a4", false}, want{EventActivated, "a2", true},
		want{EventDeregistered, "a2", false}, want{EventActivated, "a1", true})
}

// TestRestoreOddRecords: records a registry would never write (invalid,
// Seq 0 from an older format) are handled without failing the agent, and
// unusable ones are left in the store rather than thrown away.
func TestRestoreOddRecords(t *testing.T) {
	store := NewMemStore()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []*PluginInfo{
		{Type: PluginTypeCSINode, Name: "p", AllocID: "old-1", ConnectionInfo: &ConnectionInfo{SocketPath: "/s/1"}, RegisteredAt: t0.Add(time.Second)},
		{Type: PluginTypeCSINode, Name: "p", AllocID: "old-0", ConnectionInfo: &ConnectionInfo{SocketPath: "/s/0"}, RegisteredAt: t0},
		{Type: PluginTypeCSINode, Name: "p", AllocID: "new", ConnectionInfo: &ConnectionInfo{SocketPath: "/s/n"}, Seq: 7},
		{Type: PluginTypeCSINode, Name: "q", AllocID: "broken"}, // no connection info
	} {
		if err := store.PutPlugins(p); err != nil {
			t.Fatal(err)
		}
	}
	r := newRegistry(t, store)
	if got := allocIDs(r.ListAllocs(PluginTypeCSINode)); got != "p/old-0,p/old-1,p/new" {
		t.Fatalf("restored %q", got)
	}
	if store.Len() != 4 {
		t.Fatalf("restore dropped stored records: %d left", store.Len())
	}
	mustDeregister(t, r, PluginTypeCSINode, "p", "new")
	if got := activeAlloc(r, PluginTypeCSINode, "p"); got != "old-1" {
		t.Fatalf("successor %q, want the later-registered old-1", got)
	}
	mustRegister(t, r, node("p", "next"))
	if p, _ := r.ForAlloc(PluginTypeCSINode, "p", "next"); p.Seq != 8 {
		t.Fatalf("next Seq %d, want 8", p.Seq)
	}
}

func TestNewFailsWhenStoreFails(t *testing.T) {
	store := &failingStore{}
	store.fail.Store(true)
	_, err := New(Config{Store: store})
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("New = %v, want wrapped store error", err)
	}
}

// TestStoreFailureLeavesStateUnchanged: when persisting fails, Register and
// Deregister return the wrapped error, and neither memory nor store nor
// subscribers see any change.
func TestStoreFailureLeavesStateUnchanged(t *testing.T) {
	store := &failingStore{}
	r := newRegistry(t, store)
	mustRegister(t, r, node("p", "a1"))
	mustRegister(t, r, node("p", "a2"))
	ch := r.Subscribe(t.Context(), PluginTypeCSINode)
	before := r.ListAllocs(PluginTypeCSINode)
	storedBefore, _ := store.Plugins()

	store.fail.Store(true)
	changed := node("p", "a2")
	changed.Version = "2"
	for desc, err := range map[string]error{
		"register new":      r.Register(node("p", "a3")),
		"register changed":  r.Register(changed),
		"register new name": r.Register(node("q", "q1")),
		"deregister active": r.Deregister(PluginTypeCSINode, "p", "a2"),
		"deregister other":  r.Deregister(PluginTypeCSINode, "p", "a1"),
	} {
		if !errors.Is(err, errBoom) {
			t.Fatalf("%s: %v, want wrapped store error", desc, err)
		}
		if !strings.Contains(err.Error(), "persist") {
			t.Fatalf("%s: error %q lacks context", desc, err)
		}
	}
	if after := r.ListAllocs(PluginTypeCSINode); !reflect.DeepEqual(before, after) {
		t.Fatalf("state changed by failed calls:\n before %+v\n  after %+v", before, after)
	}
	if _, ok := r.Active(PluginTypeCSINode, "q"); ok {
		t.Fatal("failed registration of a new name is visible")
	}
	store.fail.Store(false)
	if storedAfter, _ := store.Plugins(); len(storedAfter) != len(storedBefore) {
		t.Fatalf("store changed: %d records, had %d", len(storedAfter), len(storedBefore))
	}
	expectNothingBefore(t, r, ch, PluginTypeCSINode)

	// The failed new registration did not burn the Seq order either: a3
	// registers now and is active.
	mustRegister(t, r, node("p", "a3"))
	if got := activeAlloc(r, PluginTypeCSINode, "p"); got != "a3" {
		t.Fatalf("active %q, want a3", got)
	}
}

func TestMemStore(t *testing.T) {
	var s MemStore // the zero value works
	if err := s.PutPlugins(nil); err == nil {
		t.Fatal("PutPlugins(nil) accepted")
	}
	p := node("p", "a1")
	if err := s.PutPlugins(p); err != nil {
		t.Fatal(err)
	}
	p.Options["mount_dir"] = "/changed"
	got, _ := s.Plugins()
	if len(got) != 1 || got[0].Options["mount_dir"] != "/csi" {
		t.Fatalf("MemStore aliases its input: %+v", got)
	}
	got[0].Name = "changed"
	if again, _ := s.Plugins(); again[0].Name != "p" {
		t.Fatal("MemStore aliases its output")
	}
	if err := s.PutPlugins(node("p", "a1")); err != nil || s.Len() != 1 {
		t.Fatalf("put same key: %v, len %d", err, s.Len())
	}
	if err := s.DeletePlugin(PluginTypeCSINode, "p", "missing"); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	if err := s.DeletePlugin(PluginTypeCSINode, "p", "a1"); err != nil || s.Len() != 0 {
		t.Fatalf("delete: %v, len %d", err, s.Len())
	}
}

// TestRestoreDuplicateRecords: a buggy store returning one allocation twice
// restores it once, with the later record.
func TestRestoreDuplicateRecords(t *testing.T) {
	older := node("p", "a1")
	older.Seq, older.Version = 1, "old"
	other := node("p", "a2")
	other.Seq = 2
	newer := node("p", "a1")
	newer.Seq, newer.Version = 3, "new"
	r := newRegistry(t, sliceStore{newer, other, older})
	if got := allocIDs(r.ListAllocs(PluginTypeCSINode)); got != "p/a2,p/a1" {
		t.Fatalf("restored %q, want p/a2,p/a1", got)
	}
	if p, _ := r.Active(PluginTypeCSINode, "p"); p.AllocID != "a1" || p.Version != "new" {
		t.Fatalf("active %+v, want a1 version new", p)
	}
	mustDeregister(t, r, PluginTypeCSINode, "p", "a1")
	if got := activeAlloc(r, PluginTypeCSINode, "p"); got != "a2" {
		t.Fatalf("after deregistering a1, active %q, want a2", got)
	}
}
